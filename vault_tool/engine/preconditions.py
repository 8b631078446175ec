"""What must hold before a remember call writes: the file it changes is there and parses,
and the memories it names by key or by supersedes are what it says they are.

Each refusal says what was wrong and who can fix it. A file that did not parse is one a
person broke by hand: the index still serves its last good version, so an agent that read
that version and sent it back must hear that a person has to fix the file, not that its
version is stale (a retry could never succeed).
"""

from __future__ import annotations

from typing import Any

from vault_tool.core import schema
from vault_tool.core.calls import missing_fact
from vault_tool.errors import InvalidInput, NotFound, UnparseableFile
from vault_tool.search.documents import Indexed
from vault_tool.search.index import Index
from vault_tool.storage import problems as recorded
from vault_tool.storage.git import blob_sha
from vault_tool.storage.repo_state import conflict_line
from vault_tool.storage.store import Store

PERSON_MUST_FIX = "a person must fix the file"


def writable_bytes(store: Store, doc: Indexed) -> bytes:
    """The bytes of the memory's file; refused if the file is gone or did not parse."""
    try:
        data = store.read_bytes(doc.path)
    except UnparseableFile as large:  # too large to read
        raise _person_must_fix(doc, None, large.reason, large.hint) from None
    if data is None:
        raise NotFound(
            f"memory_id: {doc.memory_id} is indexed but its file {doc.path} is gone",
            hint="it was deleted or moved by hand; search again for its current id",
            field="memory_id",
        )
    problem = recorded.load(store.run_dir).get(doc.path)
    # A record of bytes since put back as the index holds them (a person's undo that
    # nothing has re-read yet) is stale: the file is the last good version again.
    # (A flag, on a body a merge left in conflict, is about the indexed bytes: not a break.)
    if problem is not None and "blob" not in problem and blob_sha(data) != doc.blob:
        raise _person_must_fix(doc, problem.get("line"), problem["reason"], problem["hint"])
    return data


def _person_must_fix(doc: Indexed, line: int | None, reason: str, hint: str) -> UnparseableFile:
    refused = UnparseableFile(
        doc.path,
        line,
        f"{reason}; {PERSON_MUST_FIX} before memory {doc.memory_id} can be updated or deleted",
        f"nothing was changed, and retrying will not help: ask a person to fix {doc.path} "
        f"({hint}); then read the memory again (search with memory_id) and send the change "
        "with its new version_id",
    )
    refused.field = "memory_id"
    return refused


def fact_problems(delta: dict[str, Any], doc: Indexed) -> list[schema.Problem]:
    """An update states a fact, unless the memory it changes states none: a person's note
    is read with no facts, and what the read gave must be good to send back."""
    stated = len(doc.record["semantic_delta"].get("facts") or ())
    if delta.get("facts") or not stated:
        return []
    facts = "1 fact" if stated == 1 else f"{stated} facts"
    hint = (
        f"this memory states {facts}: send them back as your read gave them, with your "
        "changes (only a memory that states none may be updated without one)"
    )
    return [missing_fact("semantic_delta.facts", hint)]


def require_no_markers(content_md: str, doc: Indexed) -> None:
    """Refuse an update whose content_md holds conflict markers (a memory a merge left in
    conflict, sent back as it was read): markers are never committed."""
    line = conflict_line(content_md.encode("utf-8"))
    if line is None:
        return
    raise InvalidInput(
        f"content_md: line {line} opens a merge conflict (<<<<<<<, =======, >>>>>>> lines), "
        f"and conflict markers are never committed: memory {doc.memory_id} is updated only "
        "with its conflict resolved",
        hint="nothing was changed; send content_md with the conflict resolved: keep the right "
        "lines of each side and delete the marker lines (to quote a marker, indent it)",
        field="content_md",
    )


def hand_edit_hint(store: Store, path: str) -> str:
    """How to get past an uncommitted hand edit: commit it, unless it cannot be committed
    as it is (it did not parse, or holds a secret): then it must be fixed first."""
    problem = recorded.load(store.run_dir).get(path)
    if problem is None or "blob" in problem:  # (a flag is about the committed bytes)
        return "commit it (vault-tool commit) or undo it, then run this again"
    return (
        f"it cannot be committed as it is ({problem['reason']}): fix it ({problem['hint']}) "
        "or undo it, then run this again"
    )


def reference_problems(
    index: Index, delta: dict[str, Any], prefix: str, own_id: str | None
) -> list[schema.Problem]:
    """A key another memory holds, and supersedes naming no other memory.

    VaultBusy, not a problem, while the index is behind: the memory named may simply not
    have been read yet.
    """
    found = []
    key = delta.get("key")
    if key:
        holders = [d for d in index.find("key", key) if d.memory_id != own_id]
        if holders:
            where = f"{prefix}semantic_delta.key"
            found.append(
                schema.Problem(
                    where,
                    f"{where}: {key!r} is already used by {holders[0].memory_id}",
                    "keys are unique: update that memory instead, or choose another key",
                )
            )
    for i, target in enumerate(delta.get("supersedes", ())):
        if target != own_id and index.by_id(target) is None and index.behind():
            index.require(target)  # VaultBusy: its file may not be read yet
        if target == own_id or index.by_id(target) is None:
            where = f"{prefix}semantic_delta.supersedes[{i}]"
            found.append(
                schema.Problem(
                    where,
                    f"{where}: no other memory has id {target}",
                    "list ids of existing memories, as returned by search",
                )
            )
    return found


def batch_key_problems(keys: list[tuple[int, str]]) -> list[schema.Problem]:
    """Items of one batch that give the same key: each after the first is named."""
    first: dict[str, int] = {}
    found = []
    for i, key in keys:
        if key in first:
            where = f"items[{i}].semantic_delta.key"
            found.append(
                schema.Problem(
                    where,
                    f"{where}: {key!r} is also the key of items[{first[key]}]",
                    "give each key to one memory",
                )
            )
        first.setdefault(key, i)
    return found
