"""A memory file's front matter as text, key by key. Pure: no I/O.

A person's front matter holds more than the tool reads: comments, quoting, a `status:
draft`, tags in their own case and script. A change of one key must leave every other
line as the person wrote it, so the tool edits the text, not a re-rendering of what it
parsed: split() finds each top-level key's lines, with_keys() replaces, adds or removes
only the keys it is given. The merge driver (merge.py) reads sides the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

from vault_tool.core.memory import BOM, KEY_ORDER, Memory, normalize_body, parse
from vault_tool.core.yaml_safe import dump_yaml, load_yaml

# python-frontmatter's boundary, as parse reads it.
_BOUNDARY = re.compile(r"^-{3,}\s*$", re.MULTILINE)
_NONE = object()


@dataclass(frozen=True)
class Split:
    """A file cut at its front matter."""

    fields: dict[str, Any]  # the front matter's values as written (not made lenient)
    blocks: dict[str, str] | None  # each top-level key's lines as written; None: not plain
    head: str  # the opening line, the front matter and the closing line ("" for none)
    body: str
    bom: bool
    closing: str = ""  # the closing line as written, its line end included


def split(text: str, path: str) -> Split:
    """The file's front matter and body. The text must parse (memory.parse)."""
    bom = text.startswith(BOM)
    text = text.removeprefix(BOM)
    opening = _BOUNDARY.match(text)
    if opening is None:
        return Split({}, {}, "", text, bom)
    closing = _BOUNDARY.search(text, opening.end())
    assert closing is not None  # parse refuses front matter that is not closed
    end = closing.end() + (text[closing.end() : closing.end() + 1] == "\n")
    raw = text[opening.end() : closing.start()]
    fields = load_yaml(raw, path)
    raw = raw[2:] if raw.startswith("\r\n") else raw.removeprefix("\n")
    closing_line = text[closing.start() : end]
    return Split(fields, _blocks(raw, fields), text[:end], text[end:], bom, closing_line)


def with_keys(text: str, path: str, changes: dict[str, str | None]) -> str:
    """The file with some top-level keys' lines replaced (a key absent before is added in
    the tool's key order; None removes it); every other byte stays as written.

    changes maps a key to its new lines (block(key, value), or lines kept from another
    version) or None. A front matter that is not a plain block mapping (flow style, keys
    indented) is written anew from its values: every value kept, its layout not.
    """
    parse(text, path)  # (a file that does not parse is not edited)
    side = split(text, path)
    newline = "\r\n" if "\r\n" in side.head else "\n"
    blocks = dict(side.blocks) if side.blocks is not None else _as_blocks(side.fields)
    for key, lines in changes.items():
        if lines is None:
            blocks.pop(key, None)
        elif key in blocks:
            blocks[key] = _ended(lines, newline)
        else:
            blocks = _inserted(blocks, key, _ended(lines, newline))
    prefix = BOM if side.bom else ""
    if not blocks:
        return prefix + side.body.lstrip("\r\n")  # (front matter with no key left: none)
    opening = side.head.partition("\n")[0] + "\n" if side.head else f"---{newline}"
    closing = side.closing or f"---{newline}"
    return f"{prefix}{opening}{''.join(blocks.values())}{closing}{side.body}"


def block(key: str, value: Any) -> str:
    """A key's lines as the tool writes YAML."""
    return dump_yaml({key: value})


def key_lines(text: str, path: str, key: str) -> str | None:
    """A key's lines as written in a file (None: the file does not hold the key)."""
    side = split(text, path)
    if key not in side.fields:
        return None
    if side.blocks is not None:
        return side.blocks[key]
    return block(key, side.fields[key])


def _blocks(raw: str, fields: dict[str, Any]) -> dict[str, str] | None:
    """Each top-level key's text (from its line to the next key's), or None when the
    front matter is not a plain block mapping whose keys start their lines."""
    try:
        node = yaml.compose(raw, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return None
    if node is None:
        return {}
    keys = [key for key, _ in node.value] if isinstance(node, yaml.MappingNode) else []
    plain = all(isinstance(k, yaml.ScalarNode) and not k.start_mark.column for k in keys)
    if node.flow_style or len(keys) != len(fields) or not plain:
        return None
    starts = [0] + [k.start_mark.index for k in keys[1:]] + [len(raw)]
    return {k.value: raw[starts[i] : starts[i + 1]] for i, k in enumerate(keys)}


def _as_blocks(fields: dict[str, Any]) -> dict[str, str]:
    return {key: block(key, value) for key, value in fields.items()}


def _ended(lines: str, newline: str) -> str:
    lines = lines if lines.endswith("\n") else lines + "\n"
    return lines.replace("\r\n", "\n").replace("\n", newline)


def _inserted(blocks: dict[str, str], key: str, lines: str) -> dict[str, str]:
    """blocks with key added before the first key that follows it in the tool's order
    (at the end when none does, or when the key is not one of ours)."""
    later = set(KEY_ORDER[KEY_ORDER.index(key) + 1 :]) if key in KEY_ORDER else set()
    names = list(blocks)
    at = next((i for i, name in enumerate(names) if name in later), len(names))
    pairs = list(blocks.items())
    return dict([*pairs[:at], (key, lines), *pairs[at:]])


def rewritten(old: str, path: str, memory: Memory) -> str:
    """memory written over a file's text: only the keys whose values it changes are
    written anew (removed, where it drops them), and the body only if it changes; every
    other line stays as the person wrote it. old must parse."""
    before = parse(old, path)
    was, now = before.front_matter(), memory.front_matter()
    changes: dict[str, str | None] = {
        key: block(key, value) for key, value in now.items() if was.get(key, _NONE) != value
    }
    changes.update((key, None) for key in was if key not in now)
    text = with_keys(old, path, changes) if changes else old
    if normalize_body(before.body) == normalize_body(memory.body):
        return text
    side = split(text, path)
    return (BOM if side.bom else "") + side.head + normalize_body(memory.body)
