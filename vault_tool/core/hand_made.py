"""A person's notes read as memories, whatever their shape. Pure: no I/O.

A file without a ULID `id` is a person's note (an Obsidian vault's, say), read the way its
editor shows it: the title from front matter `title`, else the H1 it opens with, else its
file name (a daily note opening with `## Tasks` is its date, not "Tasks"); the day it was
made from `created`, else Obsidian's `date` (created_of); the type from `memory_type`,
else `type`, else `note`; `tags`
as a list or as one string; inline `#tags` in the body. A value of one of our keys that
does not have our shape (`status: draft`, `created: last spring`, a numeric `id`) is not
ours to judge: it is kept in the file as written and the memory goes without it. Only the
keys that carry a memory's structure (entities, facts, supersedes, key, pinned,
expires_at) are held to the schema: a mistake there is one the person wants to hear about.
Files the tool wrote (a ULID `id`) are read the same way, so a value kept in a person's
note still reads once an update gave it an id; only their memory_type must be valid.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import PurePosixPath
from typing import Any

from vault_tool.core import links, schema
from vault_tool.core.ids import is_ulid
from vault_tool.core.times import parse_time

# Keys whose odd values are a person's own convention: kept as written, not refused.
CONVENTION_KEYS = ("id", "title", "project", "rule", "status", "source", "created", "updated")
TITLE_LENGTH = 200
MAX_TAGS = 20
_TAG_LENGTH = 50
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ 	]+(.*))?$")
_UNDER_H1 = re.compile(r"^ {0,3}=+[ \t]*$")
# Obsidian's inline tag: `#` at a line's start or after a space, then a name with at least
# one character that is not a digit (#2024 is a number, not a tag); never inside a word, a
# URL (`http://x/#frag`), an entity (`&#1;`) or a link (`[[#heading]]`, `[[Page#Head]]`).
# A `#tag`: its `#` starts the text or follows whitespace (inline_tags checks that: a
# pattern that begins with the look behind is tried at every character, ~35x slower).
_INLINE_TAG = re.compile(r"#([\w/-]*[^\W\d][\w/-]*)")
_TITLE_UNSAFE = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]")


def is_tool_made(meta: dict[str, Any]) -> bool:
    """Whether front matter is the tool's own (a ULID id): then it keeps the strict contract."""
    value = meta.get("id")
    return isinstance(value, str) and is_ulid(value)


def lenient(meta: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Front matter as (fields for Memory.from_mapping, values kept as written).

    The kept values are the convention keys whose values are not ours in shape: the file
    keeps them (they render back as foreign keys) and the memory goes without them. A file
    the tool wrote is held to its memory_type (the tool wrote it; a typo there is news).
    """
    fields = dict(meta)
    kept: dict[str, Any] = {}
    if "tags" in fields:
        fields["tags"] = normalize_tags(fields["tags"])
    if not is_tool_made(meta):
        memory_type = _valid_type(fields.get("memory_type")) or _valid_type(fields.get("type"))
        if "memory_type" in fields and fields["memory_type"] != memory_type:
            kept["memory_type"] = fields["memory_type"]
        if memory_type:
            fields["memory_type"] = memory_type
        else:
            fields.pop("memory_type", None)  # a note (validating the default costs a oneOf)
    title = clean_title(fields.get("title"))
    if "title" in fields and fields["title"] != title:
        kept["title"] = fields["title"]
    if title is None:
        fields.pop("title", None)
    else:
        fields["title"] = title
    for key in schema.invalid_keys(fields, "memory.schema.json", CONVENTION_KEYS):
        kept[key] = fields.pop(key)
    return fields, kept


def title_of(body: str, path: str) -> str:
    """A note's title without a front matter one: the H1 it opens with, else its file name."""
    return opening_h1(body) or clean_title(PurePosixPath(path).stem) or "Untitled"


def opening_h1(body: str) -> str | None:
    """The text of the H1 a note opens with (ATX `# x`, or a line underlined with `===`),
    or None. A lower heading is a section's (`## Tasks` in every daily note), and so is a
    heading after the first text: Obsidian and most editors show the file name then."""
    lines = body.lstrip("\n").splitlines()[:2]
    heading = atx_heading(lines[0]) if lines else None
    if heading:
        return clean_title(heading[1]) if heading[0] == 1 else None
    if len(lines) == 2 and not links.FENCE.match(lines[0]) and _UNDER_H1.match(lines[1]):
        return clean_title(lines[0])
    return None


def created_of(extra: dict[str, Any]) -> str | None:
    """The day a person's note was made, from the front matter keys our `created` does not
    read: a `created` kept as written for its shape, else Obsidian's `date`; each may be a
    link to a daily note (`"[[2025-04-05]]"`). None if neither is a time of the calendar."""
    for key in ("created", "date"):
        value = extra.get(key)
        if isinstance(value, list) and len(value) == 1 and isinstance(value[0], list):
            value = value[0][0] if len(value[0]) == 1 else None  # ([[2025-04-05]] unquoted)
        if isinstance(value, str):
            text = value.strip()
            text = text[2:-2].strip() if text.startswith("[[") and text.endswith("]]") else text
            try:
                parse_time(text)
            except ValueError:
                continue
            return text
    return None


def atx_heading(line: str) -> tuple[int, str] | None:
    """(level, text) of an ATX heading line (`## Text ##`), or None. Linear in the line's
    length: a pattern for the closing #s backtracks badly on a long line of spaces."""
    match = _HEADING.match(line)
    if match is None:
        return None
    text = (match.group(2) or "").rstrip(" \t")
    closed = text.rstrip("#")
    if closed != text and (not closed or closed[-1] in " \t"):
        text = closed.rstrip(" \t")
    return len(match.group(1)), text


def clean_title(value: Any) -> str | None:
    """A title as the schema takes it (one line, at most 200 characters), or None."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    fits = isinstance(value, str) and value.strip() and len(value) <= TITLE_LENGTH
    if fits and not _TITLE_UNSAFE.search(value):
        return value  # already one the schema takes: kept exactly as written
    text = " ".join(_TITLE_UNSAFE.sub(" ", str(value)).split())
    return text[:TITLE_LENGTH].rstrip() or None


def normalize_tags(value: Any) -> list[str]:
    """Tags as a person writes them (a list, or one string split by commas or spaces; with
    or without `#`; any case) as the schema's lowercase tags, in order, without repeats."""
    tags: list[str] = []
    for item in tag_values(value):
        tag = tag_name(item)
        if tag and tag not in tags:
            tags.append(tag)
    return tags[:MAX_TAGS]


def tag_values(value: Any) -> list[str]:
    """A front matter `tags` value as the tags it names, as written."""
    if isinstance(value, str):
        return [t for t in re.split(r"[,\s]+", value) if t]
    if isinstance(value, list):
        return [str(v) for v in value if isinstance(v, str | int) and not isinstance(v, bool)]
    return []


def tag_name(raw: str) -> str | None:
    """One tag in the schema's shape (lowercase ASCII letters, digits, _ / -), or None."""
    folded = unicodedata.normalize("NFKD", raw.strip().lstrip("#")).encode("ascii", "ignore")
    tag = re.sub(r"[^a-z0-9_/-]+", "-", folded.decode().lower()).strip("-/_")
    return tag[:_TAG_LENGTH].rstrip("-/_") or None


def inline_tags(body: str) -> tuple[str, ...]:
    """The `#tags` written in a note's text (outside code), as tag names, in order."""
    if "#" not in body:
        return ()
    found: list[str] = []
    text = links.prose(body)
    for match in _INLINE_TAG.finditer(text):
        if match.start() and not text[match.start() - 1].isspace():
            continue  # (a `#` inside a word or a link: a#b, page#part)
        tag = tag_name(match.group(1))
        if tag and tag not in found:
            found.append(tag)
    return tuple(found)


def _valid_type(value: Any) -> str | None:
    return value if isinstance(value, str) and value in schema.memory_types() else None
