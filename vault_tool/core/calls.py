"""Checking tool calls: schema, the rules the schema cannot say, and secret redaction.

Pure: turns a remember call's arguments into drafts, and a search call's into its query
and controls, or raises InvalidInput naming the field and the fix. Nothing past this
module sees unchecked arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vault_tool.core import ids, redact, schema
from vault_tool.core.memory import first_h1
from vault_tool.core.times import parse_time
from vault_tool.errors import InvalidInput

_MODE_FIELDS = {
    "create": ({"content_md", "semantic_delta"}, {"memory_id", "expected_version_id"}),
    "update": (
        {"memory_id", "expected_version_id", "content_md", "semantic_delta"},
        {"items"},
    ),
    "delete": ({"memory_id", "expected_version_id"}, {"content_md", "semantic_delta", "items"}),
}


@dataclass
class Draft:
    """One memory to write, after checks and redaction."""

    content_md: str
    delta: dict[str, Any]
    redactions: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Call:
    """A checked remember call."""

    mode: str
    drafts: list[Draft]
    memory_id: str | None = None
    expected_version_id: str | None = None
    batch: bool = False


def check_call(args: Any) -> Call:
    """Validate a remember call and prepare its drafts; raise InvalidInput on the first problem."""
    if not isinstance(args, dict):
        raise InvalidInput("arguments: must be an object", hint='send {"mode": ..., ...}')
    schema.validate(args, "remember.input.schema.json")
    mode = args["mode"]
    required, forbidden = _MODE_FIELDS[mode]
    present = set(args) - {"mode"}
    if mode == "create" and "items" in args:
        clash = sorted(
            present & {"content_md", "semantic_delta", "memory_id", "expected_version_id"}
        )
        if clash:
            raise InvalidInput(
                f"{clash[0]}: not allowed together with items",
                hint="send either items (a batch of creates) or one content_md + semantic_delta",
                field=clash[0],
            )
        drafts = [
            prepare(item["content_md"], item["semantic_delta"], prefix=f"items[{i}].")
            for i, item in enumerate(args["items"])
        ]
        return Call(mode, drafts, batch=True)
    for name in sorted(forbidden & present):
        raise InvalidInput(
            f"{name}: not allowed with mode {mode}", hint=_mode_hint(mode), field=name
        )
    for name in sorted(required - present):
        raise InvalidInput(
            f"{name}: is required for mode {mode}", hint=_mode_hint(mode), field=name
        )
    drafts = [prepare(args["content_md"], args["semantic_delta"])] if mode != "delete" else []
    if mode == "create":
        return Call(mode, drafts)
    return Call(
        mode,
        drafts,
        memory_id=ids.check_memory_id(args["memory_id"]),
        expected_version_id=ids.check_version_id(args["expected_version_id"]),
    )


@dataclass(frozen=True)
class Controls:
    """Ranking controls and filters of one query."""

    top_k: int = 5
    maximum_context_bytes: int = 12000
    memory_types: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    since: str | None = None
    until: str | None = None


@dataclass(frozen=True)
class SearchCall:
    """A checked search call: a ranked query with its controls, or an addressed read."""

    query: str | None = None
    memory_id: str | None = None
    controls: Controls = Controls()
    # What the ledger records of the call: its arguments as sent, but the query.
    as_sent: dict[str, Any] = field(default_factory=dict)


def check_search(args: Any) -> SearchCall:
    """Validate a search call; raise InvalidInput on the first problem."""
    if not isinstance(args, dict):
        raise InvalidInput("arguments: must be an object", hint='send {"query": ...}')
    schema.validate(args, "search.input.schema.json")
    if ("query" in args) == ("memory_id" in args):
        raise InvalidInput(
            "send exactly one of query or memory_id",
            hint="query ranks memories by relevance; memory_id reads one memory in full",
            field="query",
        )
    if "memory_id" in args:
        extra = sorted(set(args) - {"memory_id", "ledger"})
        if extra:
            raise InvalidInput(
                f"{extra[0]}: ranking controls and filters do not apply to a memory_id read",
                hint=f"remove {', '.join(extra)}, or search by query instead",
                field=extra[0],
            )
        return SearchCall(memory_id=ids.check_memory_id(args["memory_id"]))
    query = args["query"].strip()
    if not query:
        raise InvalidInput(
            "query: must contain words", hint="describe what to recall", field="query"
        )
    controls = Controls(
        top_k=args.get("top_k", 5),
        maximum_context_bytes=args.get("maximum_context_bytes", 12000),
        memory_types=tuple(args.get("memory_types", ())),
        tags=tuple(args.get("tags", ())),
        since=_checked_time(args.get("since"), "since"),
        until=_checked_time(args.get("until"), "until"),
    )
    as_sent = {k: v for k, v in args.items() if k not in ("query", "ledger")}
    return SearchCall(query=query, controls=controls, as_sent=as_sent)


def _checked_time(value: str | None, field_name: str) -> str | None:
    if value is None:
        return None
    try:
        parse_time(value)
    except ValueError:
        raise InvalidInput(
            f"{field_name}: {value!r} is not a real date",
            hint="use YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ",
            field=field_name,
        ) from None
    return value


# Fields whose schema fixes their shape get a marker of that shape; every other string a
# call carries gets [REDACTED:<kind>].
_WORD_FIELDS = {"tags": "-", "key": "-", "kind": "-", "predicate": "_", "supersedes": "-"}


def prepare(content_md: str, delta: dict[str, Any], prefix: str = "") -> Draft:
    """Redact secrets in every string field, then check what the schema cannot: H1,
    declared endpoints, dates."""
    redactions: list[dict[str, Any]] = []
    reshaped = False

    def clean(value: Any, where: str, name: str) -> Any:
        nonlocal reshaped
        if isinstance(value, dict):
            return {k: clean(v, f"{where}.{k}", k) for k, v in value.items()}
        if isinstance(value, list):
            return [clean(v, f"{where}[{i}]", name) for i, v in enumerate(value)]
        if not isinstance(value, str):
            return value
        separator = _WORD_FIELDS.get(name)
        cleaned, found = redact.redact_text(value, prefix + where, redact.marker_for(separator))
        redactions.extend({"kind": r.kind, "field": r.field, "count": r.count} for r in found)
        reshaped = reshaped or bool(found and separator)
        return cleaned

    content = clean(content_md, "content_md", "content_md")
    delta = clean(delta, "semantic_delta", "semantic_delta")
    if reshaped:  # the markers fit the fields' shapes; the schema says so, not this module
        schema.validate(
            {"mode": "create", "content_md": content, "semantic_delta": delta},
            "remember.input.schema.json",
        )
    _check_semantics(content, delta, prefix)
    return Draft(content, delta, redactions)


def _check_semantics(content: str, delta: dict[str, Any], prefix: str) -> None:
    if first_h1(content) is None:
        raise InvalidInput(
            f"{prefix}content_md: must begin with an H1",
            hint="start content_md with a heading line such as '# Ana owns the billing service'",
            field=f"{prefix}content_md",
        )
    declared: dict[str, int] = {}
    for i, entity in enumerate(delta["entities"]):
        name = entity["n"].strip()
        if name in declared:
            raise InvalidInput(
                f"{prefix}semantic_delta.entities[{i}].n: {name!r} is declared twice",
                hint="facts name entities by n, so each n must be unique within one memory; "
                "merge the two or give one a distinct name",
                field=f"{prefix}semantic_delta.entities[{i}].n",
            )
        declared[name] = i
    for i, fact in enumerate(delta["facts"]):
        for end in ("subject", "object"):
            name = fact[end].strip()
            if name not in declared:
                where = f"{prefix}semantic_delta.facts[{i}].{end}"
                raise InvalidInput(
                    f"{where}: {name!r} is not declared",
                    hint=f'add {{"n": "{name}", "kind": ..., "is": ...}} to '
                    "semantic_delta.entities",
                    field=where,
                )
        _check_dates(fact, f"{prefix}semantic_delta.facts[{i}]")
    for i, memory_id in enumerate(delta.get("supersedes", ())):
        ids.check_memory_id(memory_id, f"{prefix}semantic_delta.supersedes[{i}]")
    if delta.get("expires_at"):
        _parse(delta["expires_at"], f"{prefix}semantic_delta.expires_at")


def _check_dates(fact: dict[str, Any], where: str) -> None:
    start = _parse(fact["valid_from"], f"{where}.valid_from") if fact.get("valid_from") else None
    end = _parse(fact["valid_until"], f"{where}.valid_until") if fact.get("valid_until") else None
    if start and end and end < start:
        raise InvalidInput(
            f"{where}.valid_until: is before valid_from",
            hint="swap the two dates, or drop one",
            field=f"{where}.valid_until",
        )


def _parse(value: str, where: str) -> Any:
    try:
        return parse_time(value)
    except ValueError:
        raise InvalidInput(
            f"{where}: {value!r} is not a real date",
            hint="use YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ with a valid month and day",
            field=where,
        ) from None


def _mode_hint(mode: str) -> str:
    return {
        "create": "create takes content_md and semantic_delta (or items)",
        "update": "update takes memory_id, expected_version_id, content_md and semantic_delta",
        "delete": "delete takes memory_id and expected_version_id",
    }[mode]
