"""Checking tool calls: schema, the rules the schema cannot say, and secret redaction.

Pure: turns a remember call's arguments into drafts (a search call's: search_call.py), or
raises one InvalidInput naming every problem of the call, each with its field and its fix
(so an agent fixes them all in one round trip). Nothing past this module sees unchecked
arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from vault_tool.core import ids, redact, schema, stages
from vault_tool.core.memory import first_h1
from vault_tool.core.times import OutOfCalendar, format_time, parse_time
from vault_tool.errors import InvalidInput

_MODE_FIELDS = {
    "create": ({"content_md", "semantic_delta"}, {"memory_id", "expected_version_id"}),
    "update": (
        {"memory_id", "expected_version_id", "content_md", "semantic_delta"},
        {"items"},
    ),
    "delete": (
        {"memory_id", "expected_version_id"},
        {"content_md", "semantic_delta", "items", "ttl_seconds"},
    ),
}


@dataclass
class Draft:
    """One memory to write, after checks and redaction."""

    content_md: str
    delta: dict[str, Any]
    redactions: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # written, but looks unintended


@dataclass
class Call:
    """A checked remember call."""

    mode: str
    drafts: list[Draft]
    memory_id: str | None = None
    expected_version_id: str | None = None
    batch: bool = False


@stages.timed("arguments")
def check_call(args: Any) -> Call:
    """Validate a remember call and prepare its drafts; raise InvalidInput listing every problem."""
    if not isinstance(args, dict):
        raise InvalidInput("arguments: must be an object", hint='send {"mode": ..., ...}')
    found = schema.problems(args, "remember.input.schema.json")
    mode = args.get("mode")
    if isinstance(mode, str) and mode in _MODE_FIELDS:
        found += _mode_problems(args, mode)
    written = _written(args, mode)
    ttl = args.get("ttl_seconds")
    ttl_refused = any(p.field == "ttl_seconds" for p in found)  # (out of range: no date to make)
    if isinstance(ttl, int) and not isinstance(ttl, bool) and mode != "delete" and not ttl_refused:
        written = [_expiring(found, ttl, *one) for one in written]
    if mode == "create":
        found += [p for _, delta, prefix in written for p in _factless(delta, prefix)]
    if found:
        # The call's shape is wrong, so nothing will be written: its rules are checked on
        # what was sent, for every part well-formed enough to check, and any secret the
        # messages quote is redacted from them instead.
        for content, delta, prefix in written:
            found += _semantic_problems(content, delta, prefix)
        raise schema.refusal([_without_secrets(p) for p in found])
    drafts = []
    for content, delta, prefix in written:
        draft, problems = _prepared(content, delta, prefix)
        drafts.append(draft)
        found += problems
    batch = mode == "create" and "items" in args
    memory_id = expected = None
    if mode != "create":
        memory_id = collect(found, ids.check_memory_id, args["memory_id"])
        expected = collect(found, ids.check_version_id, args["expected_version_id"])
    if found:
        raise schema.refusal(found)
    return Call(mode, drafts, memory_id=memory_id, expected_version_id=expected, batch=batch)


def warm() -> None:
    """Compile what checking a remember call needs (its schema's validator, the secret
    rules), so that an agent's first write after a server starts does not pay for it
    (~130 ms): a server calls this once it is idle."""
    check_call(
        {
            "mode": "create",
            "content_md": "# A check of nothing\n\nNothing is written.\n",
            "semantic_delta": {
                "memory_type": "note",
                "title": "A check of nothing",
                "entities": [{"n": "nothing", "kind": "concept", "is": "what is checked"}],
                "facts": [{"subject": "nothing", "predicate": "is", "object": "nothing"}],
            },
        }
    )


def _mode_problems(args: dict[str, Any], mode: str) -> list[schema.Problem]:
    """Fields the mode requires that are missing, and fields it does not take."""
    required, forbidden = _MODE_FIELDS[mode]
    present = set(args) - {"mode"}
    if mode == "create" and "items" in args:
        clash = present & {"content_md", "semantic_delta", "memory_id", "expected_version_id"}
        return [
            schema.Problem(
                name,
                f"{name}: not allowed together with items",
                "send either items (a batch of creates) or one content_md + semantic_delta",
            )
            for name in sorted(clash)
        ]
    hint = _mode_hint(mode)
    return [
        schema.Problem(name, f"{name}: not allowed with mode {mode}", hint)
        for name in sorted(forbidden & present)
    ] + [
        schema.Problem(name, f"{name}: is required for mode {mode}", hint)
        for name in sorted(required - present)
    ]


def _written(args: dict[str, Any], mode: Any) -> list[tuple[Any, Any, str]]:
    """(content_md, semantic_delta, field prefix) of each memory the call would write."""
    if mode == "create" and isinstance(args.get("items"), list):
        return [
            (item.get("content_md"), item.get("semantic_delta"), f"items[{i}].")
            for i, item in enumerate(args["items"])
            if isinstance(item, dict)
        ]
    if mode in ("create", "update") and ("content_md" in args or "semantic_delta" in args):
        return [(args.get("content_md"), args.get("semantic_delta"), "")]
    return []


def _expiring(
    found: list[schema.Problem], ttl: int, content: Any, delta: Any, prefix: str
) -> tuple[Any, Any, str]:
    """A written memory with the expires_at that ttl_seconds names; a clash if it has one."""
    if not isinstance(delta, dict):
        return content, delta, prefix
    if "expires_at" in delta:
        where = f"{prefix}semantic_delta.expires_at"
        found.append(
            schema.Problem(
                where,
                f"{where}: not allowed together with ttl_seconds",
                "send one of them: ttl_seconds (seconds from now) or expires_at (a time)",
            )
        )
        return content, delta, prefix
    at = datetime.now(UTC) + timedelta(seconds=ttl)
    return content, {**delta, "expires_at": format_time(at)}, prefix


def collect(found: list[schema.Problem], check: Callable[..., Any], *args: Any) -> Any:
    """check(*args), or None with its refusal added to found."""
    try:
        return check(*args)
    except InvalidInput as refused:
        found.append(schema.Problem(refused.field or "", refused.message, refused.hint))
        return None


def _without_secrets(problem: schema.Problem) -> schema.Problem:
    message, _ = redact.redact_text(problem.message, problem.field)
    hint, _ = redact.redact_text(problem.hint, problem.field)
    return replace(problem, message=message, hint=hint)


# Fields whose schema fixes their shape get a marker of that shape; every other string a
# call carries gets [REDACTED:<kind>].
_WORD_FIELDS = {"tags": "-", "key": "-", "kind": "-", "predicate": "_", "supersedes": "-"}


def prepare(content_md: str, delta: dict[str, Any], prefix: str = "") -> Draft:
    """Redact secrets in every string field, then check what the schema cannot: H1,
    declared endpoints, dates. Raises InvalidInput listing every problem."""
    draft, found = _prepared(content_md, delta, prefix)
    if found:
        raise schema.refusal(found)
    return draft


def _prepared(content_md: str, delta: dict[str, Any], prefix: str) -> tuple[Draft, list]:
    """The redacted draft, and the problems of its redacted values."""
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
    draft = Draft(content, delta, redactions, _warnings(content, delta))
    return draft, _semantic_problems(content, delta, prefix)


def _warnings(content: str, delta: dict[str, Any]) -> list[str]:
    """What a write may mean otherwise than it says: it is made, and the caller is told."""
    found = []
    heading = first_h1(content)
    if heading is not None and heading.strip() != delta["title"].strip():
        found.append(
            f"content_md's H1 ({heading.strip()!r}) differs from semantic_delta.title "
            f"({delta['title'].strip()!r}): search shows the title; make them say the same"
        )
    try:
        expires = delta.get("expires_at")
        past = bool(expires) and parse_time(expires) <= datetime.now(UTC)
    except ValueError:
        past = False  # not a real date: a problem of the call, refused with the others
    if past:
        found.append(
            f"semantic_delta.expires_at ({expires}) is already past: the next expiry run "
            "deletes this memory; send a later time, or none"
        )
    return found


def _semantic_problems(content: Any, delta: Any, prefix: str) -> list[schema.Problem]:
    """What the schema cannot say, checked wherever the value is well-formed enough: the
    schema's own problems are reported beside these, so nothing here assumes its shape."""
    found: list[schema.Problem] = []
    if isinstance(content, str) and first_h1(content) is None:
        found.append(
            schema.Problem(
                f"{prefix}content_md",
                f"{prefix}content_md: must begin with an H1",
                "start content_md with a heading line such as '# Ana owns the billing service'",
            )
        )
    if not isinstance(delta, dict):
        return found
    entities, facts = _dicts(delta.get("entities")), _dicts(delta.get("facts"))
    declared: dict[str, int] = {}
    for i, entity in entities:
        if not isinstance(entity.get("n"), str):
            continue
        name = entity["n"].strip()
        if name in declared:
            where = f"{prefix}semantic_delta.entities[{i}].n"
            found.append(
                schema.Problem(
                    where,
                    f"{where}: {name!r} is declared twice",
                    "facts name entities by n, so each n must be unique within one memory; "
                    "merge the two or give one a distinct name",
                )
            )
        declared.setdefault(name, i)
    for i, fact in facts:
        for end in ("subject", "object"):
            if not isinstance(fact.get(end), str):
                continue
            name = fact[end].strip()
            if name not in declared and isinstance(delta.get("entities"), list):
                where = f"{prefix}semantic_delta.facts[{i}].{end}"
                found.append(
                    schema.Problem(
                        where,
                        f"{where}: {name!r} is not declared",
                        f'add {{"n": "{name}", "kind": ..., "is": ...}} to semantic_delta.entities',
                    )
                )
        found += _date_problems(fact, f"{prefix}semantic_delta.facts[{i}]")
    supersedes = delta.get("supersedes")
    for i, memory_id in enumerate(supersedes if isinstance(supersedes, list) else ()):
        collect(found, ids.check_memory_id, memory_id, f"{prefix}semantic_delta.supersedes[{i}]")
    if isinstance(delta.get("expires_at"), str) and delta["expires_at"]:
        collect(found, _parse, delta["expires_at"], f"{prefix}semantic_delta.expires_at")
    return found


def _factless(delta: Any, prefix: str) -> list[schema.Problem]:
    """A create states at least one fact. (An update may leave a memory that states none,
    a person's note, without any: the writer checks what the memory holds.)"""
    if isinstance(delta, dict) and delta.get("facts") == []:
        return [missing_fact(f"{prefix}semantic_delta.facts", schema.FACT_HINT)]
    return []


def missing_fact(where: str, hint: str) -> schema.Problem:
    """The refusal of a write that states no fact where one is required."""
    return schema.Problem(where, f"{where}: at least one fact is required", hint)


def _dicts(value: Any) -> list[tuple[int, dict[str, Any]]]:
    """(index, item) of the objects in value, if it is a list."""
    items = value if isinstance(value, list) else ()
    return [(i, item) for i, item in enumerate(items) if isinstance(item, dict)]


def _date_problems(fact: dict[str, Any], where: str) -> list[schema.Problem]:
    found: list[schema.Problem] = []
    start, end = (
        collect(found, _parse, fact[name], f"{where}.{name}")
        if isinstance(fact.get(name), str) and fact[name]
        else None
        for name in ("valid_from", "valid_until")
    )
    if start and end and end < start:
        found.append(
            schema.Problem(
                f"{where}.valid_until",
                f"{where}.valid_until: is before valid_from",
                "swap the two dates, or drop one",
            )
        )
    return found


def _parse(value: str, where: str) -> Any:
    try:
        return parse_time(value)
    except OutOfCalendar as problem:
        raise InvalidInput(
            f"{where}: {problem}", hint="give a time within that range", field=where
        ) from None
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
