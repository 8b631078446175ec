"""The tools the extended profile adds to search and remember (`serve --tools extended`).

Each is a name, what tools/list says of it, and a call: checked against its schema in
schema/ (every problem named with its fix, as search's are), then answered by the vault's
own methods. The default profile lists none of them: an agent pays for every tool listed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vault_tool.core import schema
from vault_tool.errors import InvalidInput, NotFound
from vault_tool.server import render, render_rules

if TYPE_CHECKING:
    from vault_tool.engine.vault import Vault

SESSION_CONTEXT = "session_context"
READ = "read"
TIMELINE = "timeline"
FACT_HISTORY = "fact_history"
DISMISS = "dismiss"
RESTORE = "restore_dismissed"
ADD_RULE = "add_rule"
LIST_RULES = "list_rules"
CONFIRM_RULE = "confirm_rule"
STATE_READ = "work_state_read"
STATE_WRITE = "work_state_write"
READ_MANY = 20

READ_ONLY = {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False}
# A write that replaces what was there (a whole list): the old is in git, not in the file.
REPLACING = {
    "readOnlyHint": False,
    "destructiveHint": True,
    "idempotentHint": True,
    "openWorldHint": False,
}
# Hiding and showing again change one field, and doing either twice changes nothing more;
# adding a rule twice adds it once, and confirming it again moves only its date.
REVERSIBLE = {
    "readOnlyHint": False,
    "destructiveHint": False,
    "idempotentHint": True,
    "openWorldHint": False,
}


@dataclass(frozen=True)
class Extra:
    """One tool of the extended profile: how it is listed and how a call is answered."""

    name: str
    title: str
    description: str
    annotations: dict[str, Any]
    writes: bool
    # (vault, checked arguments, client) -> the structured result
    answer: Callable[[Any, dict[str, Any], str], dict[str, Any]]
    text: Callable[[dict[str, Any]], str]

    def call(self, vault: Vault, arguments: Any, client: str) -> dict[str, Any]:
        """Check the arguments against schema/<name>.input.schema.json, then answer."""
        if not isinstance(arguments, dict):
            raise InvalidInput("arguments: must be an object", hint="send the tool's fields")
        found = schema.problems(arguments, f"{self.name}.input.schema.json")
        if found:
            raise schema.refusal(found)
        return self.answer(vault, arguments, client)


def _read(vault: Vault, args: dict[str, Any], client: str) -> dict[str, Any]:
    memories, unknown = [], []
    for memory_id in args["memory_ids"]:
        try:
            memories.append(vault.read(memory_id))
        except NotFound:
            unknown.append(memory_id)
    return {"memories": memories, "unknown": unknown}


def _timeline(vault: Vault, args: dict[str, Any], client: str) -> dict[str, Any]:
    return vault.views.timeline(
        args.get("memory_id"),
        args.get("query"),
        before=args.get("before", 5),
        after=args.get("after", 5),
        client=client,
    )


def _session_context(vault: Vault, args: dict[str, Any], client: str) -> dict[str, Any]:
    return vault.views.session_context(
        project=args.get("project", vault.project),
        max_chars=args.get("max_chars", 8000),
        recent_days=args.get("recent_days", 7),
        max_facts=args.get("max_facts", 20),
    )


def _fact_history(vault: Vault, args: dict[str, Any], client: str) -> dict[str, Any]:
    return vault.views.facts(
        args["subject"],
        predicate=args.get("predicate"),
        as_of=args.get("as_of", "today"),
        include_superseded=args.get("include_superseded", False),
        limit=args.get("limit", 20),
        offset=args.get("offset", 0),
    )


def _add_rule(vault: Vault, args: dict[str, Any], client: str) -> dict[str, Any]:
    return vault.rules.add(
        args["then"],
        when=args.get("when"),
        scope=args.get("scope", "everywhere"),
        scope_name=args.get("scope_name"),
        evidence=args.get("evidence_memory_ids", ()),
        client=client,
    )


def _list_rules(vault: Vault, args: dict[str, Any], client: str) -> dict[str, Any]:
    return vault.rules.listing(
        args.get("project"), limit=args.get("limit", 50), offset=args.get("offset", 0)
    )


def _confirm_rule(vault: Vault, args: dict[str, Any], client: str) -> dict[str, Any]:
    return vault.rules.confirm(args["id"], client=client)


def _state_read(vault: Vault, args: dict[str, Any], client: str) -> dict[str, Any]:
    return vault.work_state.read(args["name"], args.get("project"))


def _state_write(vault: Vault, args: dict[str, Any], client: str) -> dict[str, Any]:
    return vault.work_state.write(
        args["name"],
        args["items"],
        args.get("project"),
        client=client,
        expected_version_id=args.get("expected_version_id"),
    )


def _status(status: str, done: str) -> Callable[[Any, dict[str, Any], str], dict[str, Any]]:
    """The call that sets a memory's status (one commit, the reason in its message)."""

    def answer(vault: Vault, args: dict[str, Any], client: str) -> dict[str, Any]:
        memory_id, reason = args["memory_id"], args.get("reason")
        changed = vault.set_status(memory_id, status, reason=reason, client=client)
        doc = vault.find(memory_id)
        return {
            "memory_id": memory_id,
            "status": done if changed.version_id else "unchanged",
            "version_id": changed.version_id or doc.version_id,
            "path": doc.path,
        }

    return answer


EXTRAS = (
    Extra(
        SESSION_CONTEXT,
        "Session context",
        "Call once at the start of a session: the vault's rules, pinned memories, current "
        "facts and what changed in the last days, as one block cut to max_chars, with its "
        "size and a token estimate.",
        READ_ONLY,
        False,
        _session_context,
        render.session_text,
    ),
    Extra(
        READ,
        "Read memories",
        f"Read up to {READ_MANY} memories by id in one call, each in full as search's "
        "memory_id read gives it; unknown ids are listed, not an error.",
        READ_ONLY,
        False,
        _read,
        render.read_text,
    ),
    Extra(
        TIMELINE,
        "Timeline",
        "What was recorded around a memory: the memories updated just before and after it, "
        "oldest first, the anchor marked. Anchor on a memory_id, or on the best hit of a query.",
        READ_ONLY,
        False,
        _timeline,
        render.timeline_text,
    ),
    Extra(
        FACT_HISTORY,
        "Fact history",
        "What the vault states about a subject over time: each fact with its memory, its "
        "valid time (valid_from/valid_until) and the commit and date that asserted it; "
        "current facts unless include_superseded, as of today or as_of.",
        READ_ONLY,
        False,
        _fact_history,
        render.facts_text,
    ),
    Extra(
        DISMISS,
        "Dismiss a memory",
        "Hide a memory that is wrong or no longer useful from search and context; it stays "
        "in the vault and in git, and restore_dismissed brings it back. reason goes into "
        "the commit.",
        REVERSIBLE,
        True,
        _status("dismissed", "dismissed"),
        render.status_text,
    ),
    Extra(
        RESTORE,
        "Restore a dismissed memory",
        "Make a dismissed memory found by search again (one commit; reason goes into it).",
        REVERSIBLE,
        True,
        _status("active", "restored"),
        render.status_text,
    ),
    Extra(
        ADD_RULE,
        "Add a rule",
        "Add a standing rule agents follow (then: what to do; when: the situation; scope: "
        "everywhere, a project or a situation), resting on evidence memories. Call "
        "list_rules first: an identical rule is not added twice.",
        REVERSIBLE,
        True,
        _add_rule,
        render_rules.rule_text,
    ),
    Extra(
        LIST_RULES,
        "List rules",
        "The rules in force, oldest first, with the dates they were added and last "
        "confirmed; a rule whose evidence changed since is marked for a re-check (it stays "
        "in force).",
        READ_ONLY,
        False,
        _list_rules,
        render_rules.rules_text,
    ),
    Extra(
        CONFIRM_RULE,
        "Confirm a rule",
        "Record that a rule was re-checked and still holds: only its confirmed date and "
        "its evidence's versions change (one commit).",
        REVERSIBLE,
        True,
        _confirm_rule,
        render_rules.rule_text,
    ),
    Extra(
        STATE_READ,
        "Read work state",
        "Read a named list a project keeps between sessions (a to-do list, what is in "
        "hand), as work_state_write last saved it; a list never written is empty.",
        READ_ONLY,
        False,
        _state_read,
        render_rules.state_text,
    ),
    Extra(
        STATE_WRITE,
        "Write work state",
        "Save a named list for a project (one commit). It replaces the whole list: read "
        "it, change it, send all of its items, with the read's version_id as "
        "expected_version_id so that a change made meanwhile is not lost.",
        REPLACING,
        True,
        _state_write,
        render_rules.state_written_text,
    ),
)
