"""A Memory value: parse a file, render a file, check the H1. Pure: no I/O."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from functools import cache
from typing import Any

import yaml

from vault_tool.core import schema
from vault_tool.errors import InvalidInput, UnparseableFile

KEY_ORDER = (
    "id",
    "memory_type",
    "title",
    "key",
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
_MAX_YAML_NODES = 5_000
_MAX_YAML_DEPTH = 16
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"


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

    def semantic_delta(self) -> dict[str, Any]:
        """The structured part as the tools show it."""
        delta: dict[str, Any] = {
            "memory_type": self.memory_type,
            "title": self.title,
            "entities": [e.to_dict() for e in self.entities],
            "facts": [f.to_dict() for f in self.facts],
            "tags": list(self.tags),
        }
        for name in ("key", "expires_at"):
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


def memory_from_delta(delta: dict[str, Any], body: str, **fields: Any) -> Memory:
    """A Memory from a validated semantic delta (tool input) and a body."""
    return Memory(
        memory_type=delta["memory_type"],
        title=delta["title"].strip(),
        body=normalize_body(body),
        key=delta.get("key"),
        status=delta.get("status", "active"),
        pinned=bool(delta.get("pinned", False)),
        entities=tuple(
            Entity(e["n"].strip(), e["kind"], e["is"].strip()) for e in delta["entities"]
        ),
        facts=tuple(
            Fact(
                f["subject"].strip(),
                f["predicate"],
                f["object"].strip(),
                f.get("valid_from"),
                f.get("valid_until"),
            )
            for f in delta["facts"]
        ),
        tags=tuple(delta.get("tags", ())),
        supersedes=tuple(delta.get("supersedes", ())),
        expires_at=normalize_timestamp(delta["expires_at"]) if delta.get("expires_at") else None,
        **fields,
    )


# --- parsing -------------------------------------------------------------------------------


def parse(text: str, path: str) -> Memory:
    """Parse a memory file's text. Raises UnparseableFile with line and reason."""
    import frontmatter

    if len(text) > MAX_FILE_BYTES:
        raise UnparseableFile(
            path, None, f"file too large ({len(text)} characters)", "split it into smaller files"
        )
    text = text.replace("\r\n", "\n")
    handler = frontmatter.YAMLHandler()
    if not handler.detect(text):
        title, _ = _require_h1(text, path, 1)
        return Memory(
            memory_type="note", title=title, body=normalize_body(text), has_front_matter=False
        )
    try:
        raw, body = handler.split(text)
    except ValueError:
        raise UnparseableFile(
            path, 1, "front matter is not closed", "end the front matter with a line '---'"
        ) from None
    body = body[1:] if body.startswith("\n") else body
    meta = load_yaml(raw, path)
    body_line = raw.count("\n") + 2
    try:
        schema.validate(meta, "memory.schema.json")
    except InvalidInput as problem:
        top = (problem.field or "").split(".")[0].split("[")[0]
        raise UnparseableFile(path, _line_of_key(raw, top), problem.message, problem.hint) from None
    title, _ = _require_h1(body, path, body_line)
    extra = {k: v for k, v in meta.items() if k not in KEY_ORDER}
    return Memory(
        id=meta.get("id"),
        memory_type=meta.get("memory_type", "note"),
        title=meta.get("title") or title,
        body=normalize_body(body),
        key=meta.get("key"),
        status=meta.get("status", "active"),
        pinned=bool(meta.get("pinned", False)),
        entities=tuple(Entity(e["n"], e["kind"], e["is"]) for e in meta.get("entities") or ()),
        facts=tuple(
            Fact(
                f["subject"], f["predicate"], f["object"], f.get("valid_from"), f.get("valid_until")
            )
            for f in meta.get("facts") or ()
        ),
        tags=tuple(meta.get("tags") or ()),
        supersedes=tuple(meta.get("supersedes") or ()),
        expires_at=meta.get("expires_at"),
        source=meta.get("source"),
        created=meta.get("created"),
        updated=meta.get("updated"),
        extra=extra,
    )


def load_yaml(raw: str, path: str) -> dict[str, Any]:
    """Front matter YAML -> dict, refusing aliases, deep nesting and non-mapping documents."""
    try:
        meta = yaml.load(raw, Loader=_loader())
    except yaml.MarkedYAMLError as problem:
        mark = problem.problem_mark or problem.context_mark
        # The splitter leaves the newline after the opening --- at the start of raw, so
        # raw's line n (0-based) is the file's line n + 1.
        line = mark.line + 1 if mark else None
        reason = f"front matter is not valid YAML: {problem.problem or problem.context}"
        raise UnparseableFile(path, line, reason, "fix the YAML between the --- lines") from None
    except yaml.YAMLError as problem:
        raise UnparseableFile(
            path, 2, f"front matter is not valid YAML: {problem}", "fix the YAML"
        ) from None
    if meta is None:
        return {}
    if not isinstance(meta, dict):
        raise UnparseableFile(
            path, 2, "front matter is not a mapping of keys to values", "write key: value lines"
        )
    return meta


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


def _require_h1(body: str, path: str, line: int) -> tuple[str, int]:
    title = first_h1(body)
    if title is None:
        raise UnparseableFile(
            path,
            line,
            "the body does not begin with an H1",
            "start the body with a heading line such as '# What this memory is about'",
        )
    return title, line


def _line_of_key(raw: str, key: str) -> int | None:
    match = re.search(rf"^{re.escape(key)}\s*:", raw, re.MULTILINE) if key else None
    return raw.count("\n", 0, match.start()) + 1 if match else 2


@cache
def _markdown() -> Any:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark")


@cache
def _loader() -> type:
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class FrontMatterLoader(base):  # type: ignore[misc, valid-type]
        # Dates stay strings: the file's text is the value, and validation checks its shape.
        yaml_implicit_resolvers = _without_timestamps(base.yaml_implicit_resolvers)

        def construct_document(self, node: Any) -> Any:
            _check_node_graph(node)
            return super().construct_document(node)

    return FrontMatterLoader


def _check_node_graph(root: Any) -> None:
    """Refuse anchors reused as aliases (billion laughs), deep nesting and huge documents."""
    seen: set[int] = set()
    stack = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            raise yaml.YAMLError("anchors and aliases are not allowed in front matter")
        seen.add(id(node))
        if depth > _MAX_YAML_DEPTH or len(seen) > _MAX_YAML_NODES:
            raise yaml.YAMLError("front matter is nested too deeply or is too large")
        if isinstance(node, yaml.MappingNode):
            stack.extend((part, depth + 1) for pair in node.value for part in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((child, depth + 1) for child in node.value)


def _without_timestamps(resolvers: dict[Any, list[Any]]) -> dict[Any, list[Any]]:
    return {k: [(t, r) for t, r in v if t != _TIMESTAMP_TAG] for k, v in resolvers.items()}


# --- rendering -----------------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    yaml_implicit_resolvers = _without_timestamps(yaml.SafeDumper.yaml_implicit_resolvers)

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> Any:
        # Indent list items under their key ("entities:\n  - n: Ana"), as people write YAML.
        return super().increase_indent(flow, False)


def render(memory: Memory) -> str:
    """The file text of a memory: fixed key order, block YAML, LF, one trailing newline."""
    front = yaml.dump(
        memory.front_matter(),
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=1_000_000,
    )
    return f"---\n{front}---\n{normalize_body(memory.body)}"


def normalize_body(body: str) -> str:
    """LF line endings, no leading blank lines, exactly one trailing newline."""
    return body.replace("\r\n", "\n").replace("\r", "\n").lstrip("\n").rstrip() + "\n"


# --- time ----------------------------------------------------------------------------------


def utc_now() -> str:
    """Now, as the tool writes times: YYYY-MM-DDTHH:MM:SSZ."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: str) -> datetime:
    """A date or ISO time from a file or a call -> aware UTC datetime. Raises ValueError."""
    text = value.strip().replace(" ", "T", 1)
    if len(text) == 10:
        parsed = datetime.combine(date.fromisoformat(text), datetime.min.time())
    else:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def normalize_timestamp(value: str) -> str:
    """A date or ISO time -> YYYY-MM-DDTHH:MM:SSZ."""
    return parse_time(value).strftime("%Y-%m-%dT%H:%M:%SZ")
