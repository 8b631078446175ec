"""Checking a search call: one of three ways to address memories, and a query's controls.

Pure, like calls.py for remember: a call is a ranked query (with its controls and
filters), a read of one memory by memory_id, or a lookup by key; or one InvalidInput
naming every problem, each with its field and its fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from vault_tool.core import ids, schema, stages
from vault_tool.core.calls import collect
from vault_tool.core.projects import Projects, Scope, check_project
from vault_tool.core.times import MOMENT_FORMS, OutOfCalendar, parse_moment
from vault_tool.errors import InvalidInput

# The three ways a search names what it wants; a call sends exactly one.
ADDRESSES = ("query", "memory_id", "key")
# What applies to every call, whatever it addresses.
ANY_CALL = {"ledger", "response_format"}
# What a key lookup takes besides: its hits are cut to the byte budget like a query's.
KEY_CONTROLS = {"maximum_context_bytes"}
ORDERS = ("relevance", "newest", "oldest")


@dataclass(frozen=True)
class Controls:
    """Ranking controls and filters of one query."""

    top_k: int = 5
    maximum_context_bytes: int = 12000
    memory_types: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    since: str | None = None
    until: str | None = None
    offset: int = 0  # hits skipped: a later page
    order: str = "relevance"  # or newest / oldest first by updated
    project: Scope | None = None  # only the memories of one project (Vault resolves the name)


@dataclass(frozen=True)
class SearchCall:
    """A checked search call: a ranked query with its controls, an addressed read, or a
    lookup by key."""

    query: str | None = None
    memory_id: str | None = None
    key: str | None = None
    controls: Controls = Controls()
    project: str | None = None  # the project asked for, by name
    # What the ledger records of the call: its arguments as sent, but the query.
    as_sent: dict[str, Any] = field(default_factory=dict)

    def controls_in(self, projects: Projects) -> Controls:
        """The controls, with the project asked for resolved to what its memories hold."""
        if self.project is None:
            return self.controls
        return replace(self.controls, project=projects.scope(self.project))


@stages.timed("arguments")
def check_search(args: Any) -> SearchCall:
    """Validate a search call; raise InvalidInput listing every problem."""
    if not isinstance(args, dict):
        raise InvalidInput("arguments: must be an object", hint='send {"query": ...}')
    found = schema.problems(args, "search.input.schema.json")
    sent = [name for name in ADDRESSES if name in args]
    if len(sent) != 1:
        found.append(
            schema.Problem(
                sent[0] if sent else "query",
                "send exactly one of query, memory_id or key",
                "query ranks memories by relevance; memory_id reads one memory in full; key "
                "finds the memory with that key",
            )
        )
        raise schema.refusal(found)
    if "memory_id" in args:
        _refuse_extra(found, args, ANY_CALL, "a memory_id read")
        memory_id = collect(found, ids.check_memory_id, args["memory_id"])
        if found:
            raise schema.refusal(found)
        return SearchCall(memory_id=memory_id)
    if "key" in args:
        _refuse_extra(found, args, ANY_CALL | KEY_CONTROLS, "a key lookup")
        if found:
            raise schema.refusal(found)
        budget = args.get("maximum_context_bytes", Controls.maximum_context_bytes)
        return SearchCall(key=args["key"], controls=Controls(maximum_context_bytes=budget))
    query = args.get("query")
    if isinstance(query, str) and not query.strip():
        found.append(
            schema.Problem("query", "query: must contain words", "describe what to recall")
        )
    since = collect(found, _checked_time, args.get("since"), "since")
    until = collect(found, _checked_time, args.get("until"), "until")
    project = args.get("project")
    if isinstance(project, str):
        project = collect(found, check_project, project)
    if found:
        raise schema.refusal(found)
    controls = Controls(
        top_k=args.get("top_k", 5),
        maximum_context_bytes=args.get("maximum_context_bytes", 12000),
        memory_types=tuple(args.get("memory_types", ())),
        tags=tuple(args.get("tags", ())),
        since=since,
        until=until,
        offset=args.get("offset", 0),
        order=args.get("order", "relevance"),
    )
    as_sent = {k: v for k, v in args.items() if k not in ("query", "ledger", "response_format")}
    return SearchCall(query=query.strip(), controls=controls, project=project, as_sent=as_sent)


def _refuse_extra(
    found: list[schema.Problem], args: dict[str, Any], allowed: set[str], what: str
) -> None:
    extra = sorted(set(args) - allowed - set(ADDRESSES))
    if extra:
        found.append(
            schema.Problem(
                extra[0],
                f"{extra[0]}: ranking controls and filters do not apply to {what}",
                f"remove {', '.join(extra)}, or search by query instead",
            )
        )


def _checked_time(value: Any, field_name: str) -> str | None:
    """The moment a since / until names, resolved (`7d` -> the day a week ago)."""
    if not isinstance(value, str):
        return None  # absent; or not a string, which the schema reports
    try:
        return parse_moment(value)
    except OutOfCalendar as problem:
        raise InvalidInput(
            f"{field_name}: {problem}",
            hint="give a moment within that range, or leave the field out",
            field=field_name,
        ) from None
    except ValueError:
        raise InvalidInput(
            f"{field_name}: {value!r} is not a real date",
            hint=f"use {MOMENT_FORMS}",
            field=field_name,
        ) from None
