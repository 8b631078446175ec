"""Front matter read without PyYAML, for a process that must start in a few milliseconds.

git runs the diff driver (diff_lines.py) once for each side of each file it shows, so
`git log -p` over a vault starts hundreds of them; importing PyYAML alone costs more
than the rest of such a process (its reader and resolver compile large patterns on
import). Most front matter is the plain block YAML the tool writes: `key: value`, lists of
scalars, lists of one-level mappings, single- or double-quoted strings. read() reads
exactly that, returning None for anything else (flow collections, anchors, block scalars,
escapes, a plain value running onto a second line, comments after a value), so the caller
reads it with the real parser: never a different answer, at worst a slower one. Values
are strings as written (dates stay text); an empty value or `~`/`null` is None. Pure.
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing is not imported: see cli/textconv.py)
if TYPE_CHECKING:
    from typing import Any

_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
# A plain scalar starting with one of these is YAML syntax (a flow collection, an anchor, a
# tag, a block scalar, a directive, ...), not text this reader can take as it is.
_INDICATORS = frozenset("[]{}&*!|>%@`#,?:-'\"")


def read(raw: str) -> dict[str, Any] | None:
    """The mapping raw's lines write, or None when they use YAML this reader does not take."""
    lines = [line for line in raw.split("\n") if line.strip() and not line.lstrip().startswith("#")]
    out: dict[str, Any] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        pair = None if line[0] == " " or "\t" in line else _pair(line)
        if pair is None or pair[0] in out:
            return None
        key, value = pair
        i += 1
        if value is not None:
            out[key] = value
            continue
        items: list[Any] = []
        # A list's items all stand at its first item's indent (0 is YAML's too).
        first = _indent(lines[i]) if i < len(lines) else 0
        while i < len(lines) and _indent(lines[i]) == first and _is_item(lines[i]):
            i = _item(lines, i, first, items)
            if i < 0:
                return None
        if i < len(lines) and lines[i][0] == " ":
            return None  # a nested mapping, a value on the next line, a stray indent
        out[key] = items or None
    return out


def _item(lines: list[str], i: int, indent: int, items: list[Any]) -> int:
    """Read the list item at lines[i] into items; the next line's index, or -1."""
    line = lines[i]
    rest = line[indent + 2 :].lstrip(" ")
    if not _is_pair(rest):
        value = _scalar(rest)
        if value is _REFUSED:
            return -1
        items.append(value)
        return i + 1
    pair = _pair(rest)
    if pair is None or pair[1] is None:
        return -1  # a nested collection (or not a pair after all): the real parser's
    inner = len(line) - len(rest)  # the column the item's keys are written at
    mapping = {pair[0]: pair[1]}
    i += 1
    while i < len(lines) and _indent(lines[i]) == inner and not _is_item(lines[i]):
        pair = _pair(lines[i][inner:])
        if pair is None or pair[1] is None or pair[0] in mapping:
            return -1
        mapping[pair[0]] = pair[1]
        i += 1
    items.append(mapping)
    return i


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _is_item(line: str) -> bool:
    return line.lstrip(" ").startswith("- ")


def _is_pair(text: str) -> bool:
    return text[:1] not in ("'", '"') and (": " in text or text.endswith(":"))


def _pair(line: str) -> tuple[str, Any] | None:
    """(key, value) of `key: value` (value None for `key:`), or None when not that."""
    if line.endswith(":"):
        key, value = line[:-1], ""
    else:
        key, sep, value = line.partition(": ")
        if not sep:
            return None
    if not key or not key[0].isalpha() or not key.replace("_", "").replace("-", "").isalnum():
        return None
    value = value.strip(" ")
    if not value:
        return key, None
    parsed = _scalar(value)
    return None if parsed is _REFUSED else (key, parsed)


_REFUSED = object()


def _scalar(text: str) -> Any:
    """A scalar written on one line, or _REFUSED when it is more than a plain or simply
    quoted string."""
    text = text.strip(" ")
    if text.startswith("'"):
        inner = text[1:-1]
        if len(text) < 2 or not text.endswith("'") or "'" in inner.replace("''", ""):
            return _REFUSED
        return inner.replace("''", "'")
    if text.startswith('"'):
        inner = text[1:-1]
        if len(text) < 2 or not text.endswith('"') or '"' in inner or "\\" in inner:
            return _REFUSED
        return inner
    if text in _NULLS:
        return None
    if text[0] in _INDICATORS or ": " in text or " #" in text or text.endswith(":"):
        return _REFUSED
    return text
