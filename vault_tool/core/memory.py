"""A Memory value: parse a file, render a file, check the H1. Pure: no I/O."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from vault_tool.core import hand_made, schema
from vault_tool.core.times import CALENDAR, normalize_timestamp, parse_time
from vault_tool.core.yaml_safe import dump_yaml, load_yaml
from vault_tool.errors import InvalidInput, UnparseableFile

KEY_ORDER = (
    "id",
    "memory_type",
    "title",
    "key",
    "project",
    "status",
    "pinned",
    "entities",
    "facts",
    "tags",
    "supersedes",
    "expires_at",
    "source",
    "created",
    "updated",
)
MAX_FILE_BYTES = 1_000_000
BOM = "\ufeff"
# The fixes an unparseable file's error carries (doctor shows them as they are).
_NOT_CLOSED_HINT = "end the front matter with a line '---' before the # heading"
UTF8_HINT = "save the file as UTF-8 text"
_EMPTY_HINT = "write the note, or delete the file if it should go"
_TOO_LARGE_HINT = "split it into smaller memories (at most 1 MB each)"
_TIME_HINT = f"write a real date or time (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ): {CALENDAR}"


@dataclass(frozen=True)
class Entity:
    """Something a memory talks about: surface name, kind and the gloss that identifies it."""

    n: str
    kind: str
    gloss: str

    def to_dict(self) -> dict[str, str]:
        return {"n": self.n, "kind": self.kind, "is": self.gloss}


@dataclass(frozen=True)
class Fact:
    """subject -> predicate -> object, optionally bounded in valid time."""

    subject: str
    predicate: str
    object: str
    valid_from: str | None = None
    valid_until: str | None = None

    def to_dict(self) -> dict[str, str]:
        out = {"subject": self.subject, "predicate": self.predicate, "object": self.object}
        if self.valid_from:
            out["valid_from"] = self.valid_from
        if self.valid_until:
            out["valid_until"] = self.valid_until
        return out

    def as_text(self) -> str:
        """The fact as a phrase for search: 'Ana owns billing service'."""
        return f"{self.subject} {self.predicate.replace('_', ' ')} {self.object}"


@dataclass(frozen=True)
class Memory:
    """One memory: its semantic delta, its Markdown body, and any foreign front matter keys."""

    memory_type: str
    title: str
    body: str
    id: str | None = None
    key: str | None = None
    project: str | None = None
    status: str = "active"
    pinned: bool = False
    entities: tuple[Entity, ...] = ()
    facts: tuple[Fact, ...] = ()
    tags: tuple[str, ...] = ()
    supersedes: tuple[str, ...] = ()
    expires_at: str | None = None
    source: str | None = None
    created: str | None = None
    updated: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    has_front_matter: bool = True
    # `#tags` in the body: searchable as tags, never written into the front matter.
    inline_tags: tuple[str, ...] = ()
    # The file began with a UTF-8 byte order mark (some Windows editors write one): kept on
    # every rewrite, so a person's editor sees its file as it saved it.
    bom: bool = False

    def semantic_delta(self) -> dict[str, Any]:
        """The structured part as the tools show it."""
        delta: dict[str, Any] = {
            "memory_type": self.memory_type,
            "title": self.title,
            "entities": [e.to_dict() for e in self.entities],
            "facts": [f.to_dict() for f in self.facts],
            "tags": list(self.tags),
        }
        for name in ("key", "project", "expires_at"):
            if getattr(self, name):
                delta[name] = getattr(self, name)
        if self.pinned:
            delta["pinned"] = True
        if self.status != "active":
            delta["status"] = self.status
        if self.supersedes:
            delta["supersedes"] = list(self.supersedes)
        return delta

    def front_matter(self) -> dict[str, Any]:
        """Front matter in the fixed key order; foreign keys follow in their own order."""
        values: dict[str, Any] = {
            "id": self.id,
            "memory_type": self.memory_type,
            "title": self.title,
            "key": self.key,
            "project": self.project,
            "status": self.status if self.status != "active" else None,
            "pinned": True if self.pinned else None,
            "entities": [e.to_dict() for e in self.entities],
            "facts": [f.to_dict() for f in self.facts],
            "tags": list(self.tags),
            "supersedes": list(self.supersedes) or None,
            "expires_at": self.expires_at,
            "source": self.source,
            "created": self.created,
            "updated": self.updated,
        }
        # Absent and empty values are left out: `tags: []` would be the one flow-style line.
        ordered = {k: values[k] for k in KEY_ORDER if values[k] not in (None, [])}
        ordered.update((k, v) for k, v in self.extra.items() if k not in ordered)
        return ordered

    def with_changes(self, **changes: Any) -> Memory:
        """A copy with some fields replaced."""
        return replace(self, **changes)

    @classmethod
    def from_mapping(cls, fields: dict[str, Any], body: str, **overrides: Any) -> Memory:
        """A Memory from front matter fields (shaped as memory.schema.json says) and a body.

        Values are kept as given (dates as written), so a parsed file renders back byte for
        byte; keys that are not ours become `extra`. overrides replace any field.
        """
        values: dict[str, Any] = {
            "id": fields.get("id"),
            "memory_type": fields.get("memory_type", "note"),
            "title": fields.get("title"),
            "body": body,
            "key": fields.get("key"),
            "project": fields.get("project"),
            "status": fields.get("status", "active"),
            "pinned": bool(fields.get("pinned", False)),
            "entities": tuple(
                Entity(e["n"], e["kind"], e["is"]) for e in fields.get("entities") or ()
            ),
            "facts": tuple(
                Fact(
                    f["subject"],
                    f["predicate"],
                    f["object"],
                    f.get("valid_from"),
                    f.get("valid_until"),
                )
                for f in fields.get("facts") or ()
            ),
            "tags": tuple(fields.get("tags") or ()),
            "supersedes": tuple(fields.get("supersedes") or ()),
            "expires_at": fields.get("expires_at"),
            "source": fields.get("source"),
            "created": fields.get("created"),
            "updated": fields.get("updated"),
            "extra": {k: v for k, v in fields.items() if k not in KEY_ORDER},
        }
        values.update(overrides)
        return cls(**values)


def memory_from_delta(delta: dict[str, Any], body: str, **fields: Any) -> Memory:
    """A Memory from a validated semantic delta (tool input) and a body, names trimmed."""
    trimmed = {
        **delta,
        "title": delta["title"].strip(),
        "entities": [{**e, "n": e["n"].strip(), "is": e["is"].strip()} for e in delta["entities"]],
        "facts": [
            {**f, "subject": f["subject"].strip(), "object": f["object"].strip()}
            for f in delta["facts"]
        ],
        "expires_at": normalize_timestamp(delta["expires_at"]) if delta.get("expires_at") else None,
    }
    fields.setdefault("extra", {})  # a delta has no foreign keys
    return Memory.from_mapping(trimmed, normalize_body(body), **fields)


def fingerprint(memory_type: str, title: str, body: str) -> str:
    """Identity of a create for idempotency: same type, title and content."""
    raw = f"{memory_type}\0{title.strip()}\0{body.strip()}".encode()
    return hashlib.sha256(raw).hexdigest()[:40]


# --- parsing -------------------------------------------------------------------------------


def too_large(path: str, size: str) -> UnparseableFile:
    """The refusal of a file over the size a memory may have (size: as it was counted)."""
    return UnparseableFile(path, None, f"file too large ({size})", _TOO_LARGE_HINT)


def parse(text: str, path: str, *, strict: bool = False) -> Memory:
    """Parse a memory file's text. Raises UnparseableFile with line and reason.

    A person's note is read whatever its shape (hand_made.py); strict holds a file to the
    contract of the files the tool writes (the schema as it is, an H1 first), whatever its id.
    """
    import frontmatter

    if len(text) > MAX_FILE_BYTES:
        raise too_large(path, f"{len(text)} characters")
    bom = text.startswith(BOM)
    text = text.removeprefix(BOM).replace("\r\n", "\n")
    if not text.strip():
        # Most often an editor's save caught half-way (it truncates, then writes): taking
        # it in would commit a memory's deletion that nobody made.
        raise UnparseableFile(path, None, "the file is empty", _EMPTY_HINT)
    handler = frontmatter.YAMLHandler()
    if not handler.detect(text):
        _require_h1(text, path, 1, strict)
        return Memory(
            memory_type="note",
            title=hand_made.title_of(text, path),
            body=normalize_body(text),
            inline_tags=hand_made.inline_tags(text),
            has_front_matter=False,
            bom=bom,
        )
    try:
        raw, body = handler.split(text)
    except ValueError:
        raise UnparseableFile(path, 1, "front matter is not closed", _NOT_CLOSED_HINT) from None
    body = body[1:] if body.startswith("\n") else body
    meta = load_yaml(raw, path)
    kept: dict[str, Any] = {}
    if not strict:
        meta, kept = hand_made.lenient(meta)
    try:
        schema.validate(meta, "memory.schema.json")
    except InvalidInput as problem:
        raise _unparseable(problem, path, raw) from None
    _check_times(meta, kept, path, raw, strict)
    _require_h1(body, path, raw.count("\n") + 2, strict)
    memory = Memory.from_mapping(
        meta,
        normalize_body(body),
        title=meta.get("title") or hand_made.title_of(body, path),
        inline_tags=hand_made.inline_tags(body),
        bom=bom,
    )
    # A person's own values of our keys stay in the file as written (see hand_made.py).
    return replace(memory, extra={**memory.extra, **kept}) if kept else memory


def _check_times(
    meta: dict[str, Any], kept: dict[str, Any], path: str, raw: str, strict: bool
) -> None:
    """The schema holds a time's shape; each must also be a real time in the calendar
    (2026-02-30 has the shape, and so has year 1 with a +14:00 offset). A person's own
    created or updated that is not one is kept as written, as any value not in our shape."""
    for key in ("created", "updated", "expires_at"):
        value = meta.get(key)
        if value is None:
            continue
        try:
            parse_time(str(value))
        except ValueError:
            if key != "expires_at" and not strict:
                kept[key] = meta.pop(key)
                continue
            raise UnparseableFile(
                path,
                _line_of_key(raw, key),
                f"{key}: {value!r} is not a time of the calendar",
                _TIME_HINT,
            ) from None


def _unparseable(problem: InvalidInput, path: str, raw: str) -> UnparseableFile:
    top = (problem.field or "").split(".")[0].split("[")[0]
    return UnparseableFile(path, _line_of_key(raw, top), problem.message, problem.hint)


def _require_h1(body: str, path: str, line: int, strict: bool) -> None:
    if strict and first_h1(body) is None:
        raise UnparseableFile(
            path,
            line,
            "the body does not begin with an H1",
            "start the body with a heading line such as '# What this memory is about'",
        )


def first_h1(body: str) -> str | None:
    """The text of the body's first block if that block is an H1, else None."""
    # Only the first block decides, so parse only up to the first blank line: an unclosed
    # fence there still parses as a fence, which is what the whole body would give.
    stripped = body.lstrip("\n")
    first_block = stripped.split("\n\n", 1)[0]
    tokens = _markdown().parse(first_block)
    if len(tokens) >= 2 and tokens[0].type == "heading_open" and tokens[0].tag == "h1":
        return tokens[1].content.strip() or None
    return None


def _line_of_key(raw: str, key: str) -> int | None:
    match = re.search(rf"^{re.escape(key)}\s*:", raw, re.MULTILINE) if key else None
    return raw.count("\n", 0, match.start()) + 1 if match else 2


@cache
def _markdown() -> Any:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark")


# --- rendering -----------------------------------------------------------------------------


def render(memory: Memory) -> str:
    """The file text of a memory: fixed key order, block YAML, LF, one trailing newline."""
    text = f"---\n{dump_yaml(memory.front_matter())}---\n{normalize_body(memory.body)}"
    return BOM + text if memory.bom else text


def normalize_body(body: str) -> str:
    """LF line endings, no leading blank lines, exactly one trailing newline."""
    return body.replace("\r\n", "\n").replace("\r", "\n").lstrip("\n").rstrip() + "\n"
