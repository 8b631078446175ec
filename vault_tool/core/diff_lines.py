"""A memory file as git's diff driver shows it: its meaning as lines, then its body. Pure.

`git diff`, `git log -p` and `git show` compare what the driver prints for each side
(storage/diff_setup.py registers it), so a change of meaning reads as one changed line:

    type: decision
    title: Ana owns the billing service
    tags: billing, ownership
    entity: Ana (person): backend engineer who owns the billing service
    fact: Ana owns billing service (valid from 2026-03-01)

then a blank line and the body as written. What the commit itself says is left out (the
id is its Memory-Id trailer, created and updated its date), so an update's diff is the
lines it changed. A person's note without front matter is its body; a file that does not
read as front matter and a body is shown as it is (a diff driver must never fail, or git
stops). Values are escaped as the tool prints them (core/printable.py): the raw file's
quoting hides a control character that its value would send to the terminal.
"""

from __future__ import annotations

from vault_tool.core import light_yaml

TYPE_CHECKING = False  # (typing is not imported: see cli/textconv.py)
if TYPE_CHECKING:
    from typing import Any

BOM = "\ufeff"
# The keys shown first, in this order, each by its own rule; any other key follows as written.
_LEAD = ("memory_type", "title", "key", "status", "pinned", "project", "tags")
_LEAD_NAMES = {"memory_type": "type"}
# Said by the commit that wrote the version (Memory-Id trailer, its date).
_LEFT_OUT = frozenset({"id", "created", "updated"})
_LAST = ("supersedes", "expires_at")


def for_diff(data: bytes) -> bytes:
    """What the diff driver prints for a file's bytes."""
    try:
        lines = meaning_lines(data.decode("utf-8"))
    except Exception:  # a driver's failure stops git's whole diff: the file as it is instead
        return data
    return data if lines is None else lines.encode("utf-8")


def meaning_lines(text: str) -> str | None:
    """The text as the driver shows it; None when it is to be shown as it is."""
    text = text.removeprefix(BOM)
    cut = _front_matter(text)
    if cut is None:
        return None
    raw, body = cut
    fields = light_yaml.read(raw)
    if fields is None:
        from vault_tool.core.yaml_safe import load_yaml  # (PyYAML: only when it is needed)

        fields = load_yaml(raw, "")
    if not isinstance(fields, dict):
        return None
    shown = _lines(fields)
    return "\n".join(shown) + "\n\n" + body if shown else body


def _front_matter(text: str) -> tuple[str, str] | None:
    """(front matter, body) cut as memory.parse cuts them: between the first line and the
    next that are three or more dashes; None when the text opens with no such line or never
    closes it."""
    lines = text.split("\n")
    if not _boundary(lines[0]):
        return None
    for n in range(1, len(lines)):
        if _boundary(lines[n]):
            body = "\n".join(lines[n + 1 :])
            return "\n".join(lines[1:n]).replace("\r", ""), body
    return None


def _boundary(line: str) -> bool:
    line = line.rstrip()
    return len(line) >= 3 and line == "-" * len(line)


def _lines(fields: dict[str, Any]) -> list[str]:
    out = []
    for key in _LEAD:
        if (value := fields.get(key)) is not None:
            name = _LEAD_NAMES.get(key, key)
            out.append(f"{name}: {_joined(value)}")
    out += _entities(fields.get("entities"))
    out += _facts(fields.get("facts"))
    shown = {*_LEAD, *_LAST, "entities", "facts", *_LEFT_OUT}
    for key, value in fields.items():
        if str(key) not in shown and value is not None:
            out += [f"{_text(key)}: {_flat(item)}" for item in _each(value)]
    for key in _LAST:
        if (value := fields.get(key)) is not None:
            out += [f"{key}: {_flat(item)}" for item in _each(value)]
    return out


def _entities(value: Any) -> list[str]:
    out = []
    for item in _each(value):
        if not isinstance(item, dict):
            out.append(f"entity: {_flat(item)}")
            continue
        line = f"entity: {_text(item.get('n', ''))}"
        if item.get("kind"):
            line += f" ({_text(item['kind'])})"
        if item.get("is"):
            line += f": {_text(item['is'])}"
        rest = {k: v for k, v in item.items() if k not in ("n", "kind", "is")}
        out.append(line + (f" [{_flat(rest)}]" if rest else ""))
    return out


def _facts(value: Any) -> list[str]:
    out = []
    for item in _each(value):
        if not isinstance(item, dict):
            out.append(f"fact: {_flat(item)}")
            continue
        predicate = _text(item.get("predicate", "")).replace("_", " ")
        line = f"fact: {_text(item.get('subject', ''))} {predicate} {_text(item.get('object', ''))}"
        start, end = item.get("valid_from"), item.get("valid_until")
        if start and end:
            line += f" (valid from {_text(start)} until {_text(end)})"
        elif start:
            line += f" (valid from {_text(start)})"
        elif end:
            line += f" (valid until {_text(end)})"
        known = ("subject", "predicate", "object", "valid_from", "valid_until")
        rest = {k: v for k, v in item.items() if k not in known}
        out.append(line + (f" [{_flat(rest)}]" if rest else ""))
    return out


def _each(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _joined(value: Any) -> str:
    return ", ".join(_flat(v) for v in value) if isinstance(value, list) else _flat(value)


def _flat(value: Any) -> str:
    """A value on one line: a mapping as `key=value; ...`, a list joined by commas."""
    if isinstance(value, dict):
        return "; ".join(f"{_text(k)}={_flat(v)}" for k, v in value.items())
    if isinstance(value, list):
        return "[" + ", ".join(_flat(v) for v in value) + "]"
    return _text(value)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):  # as the file writes it
        return "true" if value else "false"
    text = str(value)
    if text.isprintable():  # (no character that must be escaped: the usual case, cheaply)
        return text
    from vault_tool.core.printable import escape

    return escape(text)
