"""What every importer produces: items, skips, and the preparation that makes an item a valid
memory file (redaction, the schema's limits, the H1). Pure."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from vault_tool.core import redact
from vault_tool.core.links import Link
from vault_tool.core.memory import (
    Entity,
    Fact,
    Memory,
    first_h1,
    normalize_body,
    parse,
    render,
)
from vault_tool.core.times import normalize_timestamp
from vault_tool.errors import UnparseableFile

Progress = Callable[[int, int], None]

# Limits of memory.schema.json. prepare() validates every memory against the schema, so a
# drift between these and the schema shows up as skipped items, never as broken files.
TITLE_MAX = 200
NAME_MAX = 120
GLOSS_MAX = 200
ENTITIES_MAX = 50
FACTS_MAX = 100
TAGS_MAX = 20
TAG_MAX = 50
PREDICATE_MAX = 64
KIND_MAX = 40

_TAG_RE = re.compile(r"^[a-z0-9][a-z0-9_/-]{0,49}\Z")


@dataclass
class Item:
    """One memory read from the source, before it meets a vault."""

    label: str  # where it came from: a relative file path, or "file.jsonl:3"
    memory: Memory
    path_hint: str | None = None  # jsonl: the path it had in the exporting vault
    notes: list[str] = field(default_factory=list)
    # markdown: a person's note that keeps its path (path_hint), its id and its body as is.
    keeps_shape: bool = False
    links: tuple[Link, ...] = ()  # the links of its body to other notes (core/links.py)

    @property
    def hand_made(self) -> bool:
        """A person's note, kept as a file without an id: its body is not given an H1."""
        return self.keeps_shape or (self.path_hint is not None and self.memory.id is None)


@dataclass
class Skipped:
    """Something in the source that was not imported, and why."""

    label: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"item": self.label, "reason": self.reason}


@dataclass
class Source:
    """What a reader found: convertible items and skipped ones."""

    items: list[Item] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    ignored: list[Skipped] = field(default_factory=list)  # not notes at all (attachments)


class Unusable(Exception):
    """An item that cannot become a memory; the message is the reason."""


# --- preparing an item for the vault -----------------------------------------------------


def prepare(item: Item) -> tuple[Memory, list[dict[str, Any]]]:
    """Redact secrets, fit the schema's limits, start the body with an H1, then validate.

    Returns the memory and its redactions; raises Unusable when it still is not a valid file.
    """
    found: list[redact.Redaction] = []

    def clean(text: str, where: str, separator: str | None = None) -> str:
        cleaned, hits = redact.redact_text(text, where, redact.marker_for(separator))
        if separator is not None:  # the reader may have redacted it while reshaping it
            hits += [redact.Redaction(r.kind, where, r.count) for r in _premarked(text)]
        found.extend(hits)
        return cleaned

    memory = item.memory
    title = shorten(clean(memory.title, "title"), TITLE_MAX)
    if not title:
        raise Unusable("it has no title, no H1 and no name")
    if len(one_line(memory.title)) > TITLE_MAX:
        item.notes.append(f"title shortened to {TITLE_MAX} characters")
    renamed: dict[str, str] = {}
    entities: dict[str, Entity] = {}
    for i, entity in enumerate(memory.entities):
        name = shorten(clean(entity.n, f"entities[{i}].n"), NAME_MAX)
        if len(one_line(entity.n)) > NAME_MAX:
            item.notes.append(f"entity name shortened to {NAME_MAX} characters: {name}")
        renamed[entity.n] = name
        gloss = shorten(clean(entity.gloss, f"entities[{i}].is"), GLOSS_MAX) or "imported entity"
        kind = kind_of(clean(entity.kind, f"entities[{i}].kind", "-"), "thing")
        entities.setdefault(name, Entity(name, kind, gloss))
    facts = [
        Fact(
            renamed.get(f.subject) or shorten(clean(f.subject, f"facts[{i}].subject"), NAME_MAX),
            clean(f.predicate, f"facts[{i}].predicate", "_"),
            renamed.get(f.object) or shorten(clean(f.object, f"facts[{i}].object"), NAME_MAX),
            f.valid_from,
            f.valid_until,
        )
        for i, f in enumerate(memory.facts)
    ]
    body = normalize_body(clean(memory.body, "content_md"))
    if not item.hand_made and first_h1(body) is None:
        body = normalize_body(f"# {title}\n\n{body}")
    tags = tuple(dict.fromkeys(clean(t, f"tags[{i}]", "-") for i, t in enumerate(memory.tags)))
    if len(tags) > TAGS_MAX:
        item.notes.append(f"kept the first {TAGS_MAX} of {len(tags)} tags")
    extra = {k: _clean_value(v, f"front_matter.{k}", clean) for k, v in memory.extra.items()}
    memory = memory.with_changes(
        title=title,
        body=body,
        entities=tuple(entities.values()),
        facts=tuple(facts),
        tags=tags[:TAGS_MAX],
        extra=extra,
        key=clean(memory.key, "key", "-") if memory.key else None,
        supersedes=tuple(clean(m, "supersedes", "-") for m in memory.supersedes),
    )
    try:
        # A kept note is held to what a person's file must be; others to the tool's own.
        parse(render(memory), item.label, strict=not item.hand_made)
    except UnparseableFile as problem:
        raise Unusable(f"{problem.reason} ({problem.hint})") from None
    redactions = [{"kind": r.kind, "field": r.field, "count": r.count} for r in found]
    return memory, redactions


def _clean_value(value: Any, where: str, clean: Callable[[str, str], str]) -> Any:
    if isinstance(value, str):
        return clean(value, where)
    if isinstance(value, list):
        return [_clean_value(v, f"{where}[{i}]", clean) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: _clean_value(v, f"{where}.{k}", clean) for k, v in value.items()}
    return value


# --- shaping text to the schema ----------------------------------------------------------


def one_line(text: Any) -> str:
    """Text on one line with single spaces."""
    return " ".join(str(text).split())


def shorten(text: Any, limit: int) -> str:
    """One line of at most limit characters, cut at a word boundary with an ellipsis."""
    line = one_line(text)
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip() + "…"


def _unsecret(text: Any, separator: str) -> str:
    """Text with its secrets replaced by word markers before it is reshaped: lowercasing and
    snake_casing could make a secret unrecognisable while keeping most of its characters.
    prepare() counts the markers as redactions."""
    return redact.redact_text(str(text), "", redact.marker_for(separator))[0]


def _premarked(text: str) -> list[redact.Redaction]:
    """The word markers _unsecret left in a reshaped field, as redactions (field unset)."""
    kinds = [
        kind for kind in redact.KINDS if redact.word_marker(kind, "_") in text.replace("-", "_")
    ]
    return [redact.Redaction(kind, "", 1) for kind in kinds]


def snake_case(text: str, default: str) -> str:
    """A predicate from free text: 'works at' and 'worksAt' -> 'works_at'."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", _unsecret(text, "_"))
    ascii_text = unicodedata.normalize("NFKD", spaced).encode("ascii", "ignore").decode()
    words = re.findall(r"[a-z0-9]+", ascii_text.lower())
    if not words:
        return default
    if not words[0][0].isalpha():
        words.insert(0, "rel")
    predicate = "_".join(words)[:PREDICATE_MAX].rstrip("_")
    return predicate


def kind_of(text: str, default: str) -> str:
    """An entity kind from free text: 'Person' -> 'person', 'Tool / Library' -> 'tool_library'."""
    ascii_text = unicodedata.normalize("NFKD", _unsecret(text, "-")).encode("ascii", "ignore")
    kind = re.sub(r"[^a-z0-9_-]+", "_", ascii_text.decode().lower()).strip("_-")
    if not kind:
        return default
    if not kind[0].isalpha():
        kind = f"{default}_{kind}"
    return kind[:KIND_MAX].rstrip("_-")


def normalize_tag(raw: Any) -> str | None:
    """A tag in the vault's pattern (lowercase letters, digits, _ / -), or None if none is left."""
    ascii_text = unicodedata.normalize("NFKD", _unsecret(raw, "-")).encode("ascii", "ignore")
    tag = re.sub(r"[^a-z0-9_/-]+", "-", ascii_text.decode().strip().lstrip("#").lower())
    tag = re.sub(r"^[^a-z0-9]+", "", tag)[:TAG_MAX].rstrip("-/")
    return tag if _TAG_RE.match(tag) else None


def text_field(value: Any) -> str | None:
    """A scalar front matter or JSON value as one line of text, or None."""
    if value is None or isinstance(value, dict | list):
        return None
    text = one_line(value)
    return text or None


def date_field(value: Any) -> str | None:
    """A date or time as YYYY-MM-DDTHH:MM:SSZ, or None if it is not one."""
    if value is None:
        return None
    try:
        return normalize_timestamp(str(value))
    except ValueError:
        return None
