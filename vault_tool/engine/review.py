"""Review a range of commits in meaning: what each memory it touched became, fact by fact.

One `git log --raw` walks the range (storage/lineage.py), oldest first; each memory is
followed across its moves by path and known by its id, so a memory written fifty times is
one entry: the version before the range's first change against the version its last change
left. Only those two versions are read and parsed (core/fact_diff.py compares them), so a
long session costs one log and two blobs a memory. A merge's own result (a file both sides
changed, `-c`) counts as a change of its memories, marked as merged.

The flags a reviewer must see are looked up beside: a fact that contradicts a current one
(the index's memories about the same subject, and the range's own), a deleted memory other
notes still link to (the index's links), besides those the two versions show themselves.

touched() and assemble() are the two halves: a command that has its own before and after
(a revert's plan) assembles them into the same review.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from vault_tool.core import fact_diff
from vault_tool.core.ids import is_memory_path, path_id
from vault_tool.core.memory import Fact, Memory, parse
from vault_tool.core.text import normalize_name
from vault_tool.errors import InvalidInput, UnparseableFile, VaultError
from vault_tool.search import links as index_links
from vault_tool.search import stored
from vault_tool.search.index import Index
from vault_tool.storage.lineage import FileChange, Logged, blob, naming, read_log
from vault_tool.storage.store import Store

RESTORE = "Restore "


@dataclass(frozen=True)
class Selection:
    """Which commits to review: a git range (`origin/main..HEAD`), narrowed by time, client
    and memory; with none of them, the commits not yet pushed to the branch's upstream."""

    range: str | None = None
    since: str | None = None
    until: str | None = None
    client: str | None = None
    memory: str | None = None

    def describe(self) -> str:
        parts = [self.range] if self.range else []
        for name in ("since", "until", "client", "memory"):
            if getattr(self, name):
                parts.append(f"--{name} {getattr(self, name)}")
        return " ".join(parts)


@dataclass
class Touched:
    """One memory a range changed: its version before the range and after it (data None:
    it did not exist there), and the commits that changed it, oldest first."""

    memory_id: str
    before_path: str
    before: bytes | None
    after_path: str
    after: bytes | None
    commits: list[Logged] = field(default_factory=list)
    came_back: bool = False  # deleted, then added again inside the range
    merged: bool = False  # a merge made a version of its own
    deleted_in: str | None = None
    # The two versions parsed, (memory, why not) each, where the walk parsed them already.
    parsed: tuple[tuple[Memory | None, str | None], ...] = ()
    shas: list[str | None] = field(default_factory=lambda: [None, None])


def review(store: Store, index: Index, selection: Selection) -> dict[str, Any]:
    """The review of the commits a selection names: see assemble()."""
    rev, described = _revisions(store, selection)
    logged = _log(store, rev, selection)
    found = touched(store, logged)
    if selection.memory:
        found = [t for t in found if t.memory_id == selection.memory]
    return assemble(index, found, described, len(logged))


def touched(store: Store, logged: list[Logged]) -> list[Touched]:
    """Each memory the commits (newest first, as read_log gives them) changed, in the order
    it was first changed."""
    entries: dict[str, Touched] = {}
    at_path: dict[str, str] = {}  # a path's memory, as the walk has come to know it
    data = _Blobs(store)
    for commit in reversed(logged):
        # Deletes first: a move git did not pair (an edit too large) is a delete and an add
        # of one id in one commit, which must end as the add.
        for change in sorted(commit.changes, key=lambda c: c.status != "D"):
            if not (is_memory_path(change.path) or is_memory_path(change.source or "")):
                continue
            key = _key(change, at_path, data)
            entry = entries.get(key)
            if entry is None:
                old = data.read(change.old_blob)
                entry = entries[key] = Touched(key, change.source or change.path, old, "", None)
                entry.shas[0] = change.old_blob
            if change.status == "A" and entry.deleted_in not in (None, commit.sha):
                entry.came_back = True
            entry.after_path, entry.after = change.path, data.read(change.new_blob)
            entry.shas[1] = change.new_blob
            if change.status == "D":
                at_path.pop(change.path, None)
                entry.deleted_in = commit.sha
            else:
                at_path[change.path] = key
            if not entry.commits or entry.commits[-1].sha != commit.sha:
                entry.commits.append(commit)
            entry.merged = entry.merged or len(commit.parents) > 1
    for entry in entries.values():
        entry.parsed = (
            data.memory(entry.shas[0], entry.before_path),
            data.memory(entry.shas[1], entry.after_path),
        )
    return list(entries.values())


def assemble(index: Index, found: list[Touched], described: str, commits: int) -> dict[str, Any]:
    """The review as data: every memory's change in meaning and flags, grouped by client
    (the clients that changed it, in order) and in the order each was first changed."""
    reviewed = [_reviewed(t) for t in found]
    _flag_contradictions(index, reviewed)
    _flag_broken_links(index, reviewed)
    groups: dict[str, list[dict[str, Any]]] = {}
    for entry in reviewed:
        groups.setdefault(", ".join(entry["clients"]) or "(no client)", []).append(entry)
    memories = [entry for group in groups.values() for entry in group]
    clients: dict[str, int] = {}
    for entry in memories:
        for version in entry["versions"]:
            name = version["client"] or "(no client)"
            clients[name] = clients.get(name, 0) + 1
    return {
        "range": described,
        "commits": commits,
        "clients": clients,
        "memories": memories,
        "facts_changed": sum(_facts_touched(e["changes"]) for e in memories),
        "flags": sum(len(e["flags"]) for e in memories),
    }


# --- one memory --------------------------------------------------------------------------------


def _reviewed(found: Touched) -> dict[str, Any]:
    (before, before_problem), (after, after_problem) = found.parsed or (
        _parsed(found.before, found.before_path),
        _parsed(found.after, found.after_path),
    )
    change = fact_diff.compare(before, after)
    shown = after or before
    entry: dict[str, Any] = {
        "memory_id": found.memory_id,
        "title": shown.title if shown else found.after_path,
        "memory_type": shown.memory_type if shown else "note",
        "kind": _kind(found),
        "path": found.after_path if found.after is not None else found.before_path,
        "clients": list(dict.fromkeys(c.client or "(no client)" for c in found.commits)),
        "versions": [
            {"version_id": c.sha, "date": c.date, "client": c.client, "subject": c.subject}
            for c in found.commits
        ],
        "merged": found.merged,
        "changes": change.to_dict(),
        "flags": [],
    }
    if (
        found.before is not None
        and found.after is not None
        and found.before_path != found.after_path
    ):
        entry["old_path"] = found.before_path
    flags = entry["flags"]
    for problem in filter(None, (before_problem, after_problem)):
        flags.append(_flag("unparseable", problem))
    if before is not None:
        # (A merge commit only joins what the two sides wrote: its client rewrote nothing.)
        writers = [
            c.client for c in found.commits if fact_diff.is_agent(c.client) and len(c.parents) < 2
        ]
        rewriting = next((w for w in writers if fact_diff.is_persons(before, w)), None)
        if rewriting:
            whose = (
                f"{before.source}'s memory"
                if before.id and before.source and before.source not in fact_diff.PERSONS
                else "a person's note"
            )
            done = "deleted" if after is None else "rewrote"
            flags.append(_flag("persons_note_rewritten", f"{rewriting} {done} {whose}"))
    made = fact_diff.redactions(after) - fact_diff.redactions(before)
    if made > 0:
        flags.append(_flag("redacted", f"{made} secret(s) redacted on the way in"))
    conflicts = after.extra.get("merge_conflicts") if after else None
    if conflicts and conflicts != (before.extra.get("merge_conflicts") if before else None):
        named = conflicts if isinstance(conflicts, list) else [conflicts]
        keys = ", ".join(str(c.get("field")) for c in named if isinstance(c, dict)) or "values"
        flags.append(_flag("merge_conflicts", f"a merge set aside {keys} (merge_conflicts)"))
    entry["_memory"], entry["_new_facts"] = after, _new_facts(change)
    return entry


def _kind(found: Touched) -> str:
    if found.after is None:
        return "deleted"
    if found.came_back or any(c.subject.startswith(RESTORE) for c in found.commits):
        return "restored"
    if found.before is None:
        return "created"
    return "moved" if found.before_path != found.after_path else "updated"


def _new_facts(change: fact_diff.Change) -> tuple[Fact, ...]:
    return change.facts_added + tuple(after for _, after in change.facts_changed)


def _facts_touched(changes: dict[str, Any]) -> int:
    return sum(len(v) for v in changes.get("facts", {}).values())


def _flag(kind: str, message: str) -> dict[str, str]:
    return {"kind": kind, "message": message}


def _parsed(data: bytes | None, path: str) -> tuple[Memory | None, str | None]:
    if data is None:
        return None, None
    try:
        return parse(data.decode("utf-8"), path), None
    except (UnparseableFile, UnicodeDecodeError) as problem:
        reason = getattr(problem, "message", None) or "not UTF-8 text"
        return None, f"a version at {path} does not parse: {reason}"


# --- flags the index answers -----------------------------------------------------------------


def _flag_contradictions(index: Index, reviewed: list[dict[str, Any]]) -> None:
    """A new fact that holds today while another memory's current fact, about the same
    subject and predicate, holds another object (the index's memories, and the range's)."""
    day = datetime.now(UTC).date().isoformat()
    asking = [e for e in reviewed if e.pop("_new_facts")]
    ranged = {e["memory_id"]: e for e in reviewed}
    if not asking:
        for entry in reviewed:
            entry.pop("_memory")
        return
    names = {normalize_name(f.subject) for e in asking for f in _facts_of(e)}
    about = index.read(lambda searcher: stored.facts_of_subjects(searcher, names))
    # Every current fact by its subject and predicate, once: a long session asks of many.
    current: dict[tuple[str, str], list[tuple[Fact, str, str]]] = {}
    for memory_id, _, delta in about:
        if memory_id not in ranged:  # (the range's own are read as the range left them)
            for values in delta["facts"]:
                said = _fact(values)
                where = f"{delta.get('title', '')} ({memory_id})"
                current.setdefault(fact_diff.slot(said), []).append((said, memory_id, where))
    for entry in reviewed:
        memory = entry["_memory"]
        for said in memory.facts if memory else ():
            where = f"{memory.title} ({entry['memory_id']})"
            current.setdefault(fact_diff.slot(said), []).append((said, entry["memory_id"], where))
    for entry in asking:
        new = _facts_of(entry)
        others = {
            key: [(f, where) for f, mid, where in current.get(key, ()) if mid != entry["memory_id"]]
            for key in {fact_diff.slot(f) for f in new}
        }
        for fact, other, where in fact_diff.contradictions(new, others, day):
            entry["flags"].append(
                _flag("contradiction", f"{_said(fact)} contradicts {_said(other)} in {where}")
            )
    for entry in reviewed:
        entry.pop("_memory")


def _facts_of(entry: dict[str, Any]) -> tuple[Fact, ...]:
    memory = entry["_memory"]
    changes = entry["changes"].get("facts", {})
    new = [_fact(f) for f in changes.get("added", [])]
    new += [_fact(c["after"]) for c in changes.get("changed", [])]
    return tuple(f for f in new if memory is None or f in memory.facts)


def _said(fact: Fact) -> str:
    return f"{fact.subject} {fact.predicate} {fact.object}"


def _fact(values: dict[str, Any]) -> Fact:
    return Fact(
        values["subject"], values["predicate"], values["object"],
        values.get("valid_from"), values.get("valid_until"),
    )  # fmt: skip


def _flag_broken_links(index: Index, reviewed: list[dict[str, Any]]) -> None:
    """A deleted memory that notes still link to (by its name or its path)."""
    for entry in reviewed:
        if entry["kind"] != "deleted":
            continue
        path, title = entry["path"], entry["title"]
        linking = index.read(lambda s, p=path, t=title: index_links.linking_to(s, p, t, []))
        if linking:
            more = f" and {len(linking) - 3} more" if len(linking) > 3 else ""
            entry["flags"].append(
                _flag(
                    "linked_deleted",
                    f"deleted while {len(linking)} note(s) link to it: "
                    + ", ".join(linking[:3]) + more,
                )
            )  # fmt: skip


# --- the walk ----------------------------------------------------------------------------------


class _Blobs:
    """Blobs read once, and the memory id each file's bytes declare."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.data: dict[str, bytes] = {}
        self.parsed: dict[tuple[str, str], tuple[Memory | None, str | None]] = {}

    def read(self, sha: str | None) -> bytes | None:
        if sha is None:
            return None
        if sha not in self.data:
            self.data[sha] = blob(self.store.repo, sha)
        return self.data[sha]

    def memory_id(self, sha: str | None, path: str) -> str:
        if sha is None:
            return path_id(path)
        memory, _ = self.memory(sha, path)
        return (memory.id if memory else None) or path_id(path)

    def memory(self, sha: str | None, path: str) -> tuple[Memory | None, str | None]:
        """The file's bytes parsed (once), and why not where they do not parse."""
        if sha is None:
            return None, None
        if (sha, path) not in self.parsed:
            self.parsed[sha, path] = _parsed(self.read(sha), path)
        return self.parsed[sha, path]


def _key(change: FileChange, at_path: dict[str, str], data: _Blobs) -> str:
    """The memory a file change is of: the one the walk already knows at its path (a
    rename's old path), else the id its bytes declare (its path's, without one)."""
    if change.source:
        known = at_path.pop(change.source, None)
        return known or data.memory_id(change.old_blob, change.source)
    known = at_path.get(change.path)
    if known:
        return known
    return data.memory_id(change.new_blob or change.old_blob, change.path)


_UNSAFE_RANGE = re.compile(r"^-|[\s\x00-\x1f]")


def _revisions(store: Store, selection: Selection) -> tuple[list[str], str]:
    """The git revisions to walk, and how the review names them."""
    if selection.range:
        if _UNSAFE_RANGE.search(selection.range):
            raise InvalidInput(
                f"range: {selection.range!r} is not a git range",
                hint="give one such as origin/main..HEAD, or a commit sha",
                field="range",
            )
        return [selection.range], selection.describe()
    if any((selection.since, selection.until, selection.client, selection.memory)):
        return ["HEAD"], selection.describe()
    try:
        upstream = store.git("rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}")
    except VaultError:
        upstream = ""
    if not upstream:
        raise InvalidInput(
            "review: give a range or a filter (the branch has no upstream to compare with)",
            hint="run `vault-tool review HEAD~5..HEAD`, or `vault-tool review --since 1d`",
        )
    return [f"{upstream}..HEAD"], f"{upstream}..HEAD"


def _log(store: Store, rev: list[str], selection: Selection) -> list[Logged]:
    args = ["-c", "--extended-regexp", "--all-match"]
    if selection.since:
        args.append(f"--since={selection.since}")
    if selection.until:
        args.append(f"--until={selection.until}")
    if selection.client:
        args.append(f"--grep=^Client: {re.escape(selection.client)}$")
    if selection.memory:
        args.extend(naming(selection.memory)[1:])
    try:
        return read_log(store.repo, *args, *rev, "--", renames=True)
    except VaultError as problem:
        raise InvalidInput(
            f"range: git cannot read {' '.join(rev)!r}: {problem.message}",
            hint="give a range of this vault's commits, such as origin/main..HEAD "
            "(`vault-tool log` lists them)",
            field="range",
        ) from None
