"""Deleted memories: which they are, when and by whom they went, and the refusal that says so.

A memory is deleted when a commit removed its file and no file holds its id now. Its
history stays in git: `vault-tool deleted` lists it, history/show/blame read it from the
commit that deleted it, and a person brings it back with `vault-tool restore ID`. The list
is one `git log --raw` walk of the whole history (the deletes and, for each, the commit
that wrote its last version); a deleted file is read only when its commit does not say
which memory it was (a person's own commit, several deletes in one).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vault_tool.core import ids
from vault_tool.core.memory import parse
from vault_tool.engine.trail import Start, id_of
from vault_tool.errors import NotFound, UnparseableFile, VaultBusy
from vault_tool.search.documents import Indexed
from vault_tool.search.index import Index
from vault_tool.storage import problems as recorded
from vault_tool.storage.lineage import FileChange, Logged, blob, changes_of, naming, read_log
from vault_tool.storage.store import Store

# The subject of a commit that deleted one memory (core/changelog.py: delete, hand_delete).
_ONE_DELETE = re.compile(r"^Delete (?P<type>[a-z_]+): (?P<title>.+?)(?: \(hand edit\))?$")


@dataclass(frozen=True)
class Deleted:
    """One deleted memory: what it was, where, the commit that deleted it, its last version."""

    memory_id: str
    title: str
    memory_type: str
    path: str
    deleted_in: str
    date: str
    author: str
    client: str | None
    last_version: str | None
    by_id: bool

    def to_dict(self) -> dict[str, Any]:
        """The shape `vault-tool deleted --json` prints, one per memory."""
        fields = dict(self.__dict__)
        fields.pop("by_id")
        return fields

    @property
    def start(self) -> Start:
        """Where its line of commits begins, counted back: the commit that deleted it."""
        return Start(self.memory_id, self.path, self.deleted_in, self.by_id)


def listing(store: Store, live: Callable[[str], object]) -> list[Deleted]:
    """Every deleted memory, most recently deleted first (live(id): what holds it now)."""
    newest: dict[str, tuple[Logged, FileChange]] = {}
    last_versions: dict[str, str] = {}
    waiting: dict[str, str] = {}  # path -> id whose last version is still to be found
    for entry in read_log(store.repo, "HEAD"):
        for change in entry.changes:
            if change.status != "D" and change.path in waiting:
                last_versions[waiting.pop(change.path)] = entry.sha
        removed = [c for c in entry.changes if c.status == "D" and ids.is_memory_path(c.path)]
        moved = {c.new_blob for c in entry.changes if c.status == "A"}
        for change in removed:
            if change.old_blob in moved or _named_as_moved(entry.subject, change.path):
                continue
            if len(removed) == 1 and len(entry.memory_ids) == 1:
                memory_id = entry.memory_ids[0]  # the commit names it: no file to read
            else:
                memory_id = _id_of_removed(store, change)
            if memory_id in newest or live(memory_id) is not None:
                continue
            newest[memory_id] = (entry, change)
            waiting.setdefault(change.path, memory_id)
    return [
        _deleted(store, memory_id, entry, change, last_versions.get(memory_id))
        for memory_id, (entry, change) in newest.items()
    ]


def find(store: Store, memory_id: str) -> Deleted | None:
    """The deletion of a memory no file holds now, or None: a few git calls, not a walk.

    A file without an id that was moved has a new id (its new path): NotFound names it.
    A memory git's HEAD holds, whose file is in the folder, is not deleted but not read
    into the index yet (a person's checkout brought it back a moment ago): VaultBusy.
    """
    if not ids.is_ulid(memory_id):
        # A file without an id (or removed by a person's own `git rm`): its path's last commit.
        path = f"{memory_id}.md"
        for entry in read_log(store.repo, "-1", "HEAD", "--", path):
            change = entry.change_of(path)
            if change and change.status == "D" and _holds(store, change, memory_id):
                moved = _moved_to(store, entry, change)
                if moved is not None:
                    raise _moved_refusal(memory_id, moved)
                return _found(store, memory_id, entry, change)
    for entry in read_log(store.repo, "-1", *naming(memory_id), "HEAD"):
        mine = [c for c in entry.changes if _holds(store, c, memory_id)]
        written = [c for c in mine if c.status != "D"]
        if not written:
            return _found(store, memory_id, entry, mine[0]) if mine else None
        # It lived on after the last commit that names it: a person's own commit removed it.
        path = written[0].path
        for later in read_log(store.repo, "-1", "--diff-filter=D", f"{entry.sha}..HEAD", "--",
                              path):  # fmt: skip
            change = later.change_of(path)
            if change is not None and _moved_to(store, later, change) is None:
                return _found(store, memory_id, later, change)
        # (A file that did not parse is a problem, doctor's: not something a retry fixes.)
        if store.resolve(path).exists() and path not in recorded.load(store.run_dir):
            raise VaultBusy(
                f"memory_id: {memory_id} is in the vault's files ({path}) but the search "
                "index has not read it yet (it is being rebuilt or caught up from the files)",
                hint="retry in a moment (nothing was changed or lost)",
                field="memory_id",
            )
    return None


def require(index: Index, store: Store, memory_id: str) -> Indexed:
    """The live memory with this id; if it was deleted, NotFound saying when, by whom, and
    that a person can restore it."""
    found = live_or_deleted(index, store, memory_id)
    if isinstance(found, Deleted):
        raise refusal(found)
    return found


def live_or_deleted(index: Index, store: Store, memory_id: str) -> Indexed | Deleted:
    """The live memory with this id (or at this path without .md: the path a person or an
    agent was shown stays good once the file gets an id), else its deletion; NotFound if it
    never existed.

    While the index is behind (VaultBusy) a miss may be a file not read yet, but a deletion
    git holds is still the answer when its file is not in the folder: a write's own delete
    is not made to wait for a catch-up that has nothing to add about it.
    """
    try:
        return index.require(memory_id)
    except (NotFound, VaultBusy) as missing:
        at_path = index.by_path(f"{memory_id}.md")
        if at_path is not None:
            return at_path
        found = find(store, memory_id)
        if found is None or (isinstance(missing, VaultBusy) and store.resolve(found.path).exists()):
            raise
        return found


def refusal(found: Deleted) -> NotFound:
    """The error for a deleted memory asked for by id."""
    who = found.client or found.author
    when = found.date[:16].replace("T", " ")
    return NotFound(
        f"memory_id: {found.memory_id} ({found.title}) was deleted on {when} by {who} "
        f"in commit {found.deleted_in[:10]}",
        hint=f"its history is kept: a person can bring it back with `vault-tool restore "
        f"{found.memory_id}` (agents cannot restore); search again for what replaced it",
        field="memory_id",
    )


def _found(store: Store, memory_id: str, entry: Logged, change: FileChange) -> Deleted:
    """A deletion found by itself: its last version is the last commit of the path before."""
    before = read_log(store.repo, "-1", *entry.parents[:1], "--", change.path)
    return _deleted(store, memory_id, entry, change, before[0].sha if before else None)


def _moved_to(store: Store, entry: Logged, change: FileChange) -> str | None:
    """Where a commit that removed a file put it (a rename, the same bytes, a Move), or None."""
    for other in changes_of(store.repo, entry.sha).changes:
        same_bytes = other.status == "A" and other.new_blob == change.old_blob
        named = _named_as_moved(entry.subject, change.path, other.path)
        if other.path != change.path and (same_bytes or named or other.source == change.path):
            return other.path
    return None


def _moved_refusal(memory_id: str, new_path: str) -> NotFound:
    new_id = ids.path_id(new_path)
    return NotFound(
        f"memory_id: {memory_id} was moved to {new_path}; its id is now {new_id}",
        hint=f"use {new_id} (a file without an id in its front matter is named by its path)",
        field="memory_id",
    )


def _deleted(
    store: Store, memory_id: str, entry: Logged, change: FileChange, last_version: str | None
) -> Deleted:
    named = _ONE_DELETE.match(entry.subject) if entry.memory_ids == (memory_id,) else None
    if named:  # the commit's subject says what it deleted: no file to parse (1.5 ms each)
        memory_type, title = named.group("type"), named.group("title")
        by_id = memory_id != ids.path_id(change.path)
    else:
        data = blob(store.repo, change.old_blob) if change.old_blob else b""
        title, memory_type, by_id = change.path, "note", False
        try:
            memory = parse(data.decode("utf-8"), change.path)
            title, memory_type, by_id = memory.title, memory.memory_type, memory.id is not None
        except (UnparseableFile, UnicodeDecodeError):
            pass  # a file that did not parse when it was deleted: its path is its name
    return Deleted(
        memory_id, title, memory_type, change.path, entry.sha, entry.date, entry.author,
        entry.client, last_version, by_id,
    )  # fmt: skip


def _id_of_removed(store: Store, change: FileChange) -> str:
    data = blob(store.repo, change.old_blob) if change.old_blob else b""
    return id_of(data, change.path) or ids.path_id(change.path)


def _holds(store: Store, change: FileChange, memory_id: str) -> bool:
    """Whether a change of a commit naming memory_id is that memory's file."""
    if not ids.is_memory_path(change.path):
        return False
    sha = change.old_blob if change.status == "D" else change.new_blob
    data = blob(store.repo, sha) if sha else b""
    return (id_of(data, change.path) or ids.path_id(change.path)) == memory_id


def _named_as_moved(subject: str, path: str, new: str | None = None) -> bool:
    """Whether a `Move <type>: <title> (old -> new)` subject moved path away (to new)."""
    to = f"({path} -> {new})" if new else f"({path} -> "
    return subject.startswith("Move ") and to in subject
