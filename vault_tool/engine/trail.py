"""A memory's versions across its moves, deletes and restores: one line of commits, newest first.

The line is walked back path by path: the commits of one path, back to the commit that
added the file there; then on from where it came. A file with an id came from the path
that commit (or the last delete of the same id before it) removed holding that id: a move
in one commit, a move seen as a delete and an add, `git mv` in a person's own commit, a
delete and a restore. A file without an id came from the path git pairs with it as a
rename (90% alike), or that a `Move ... (old -> new)` commit names. Blame and restore read
the file of each version at the path it had then.
"""

from __future__ import annotations

from dataclasses import dataclass

from vault_tool.core.memory import parse
from vault_tool.errors import UnparseableFile
from vault_tool.storage.git import Commit
from vault_tool.storage.lineage import FileChange, Logged, blob, changes_of, naming, read_log
from vault_tool.storage.store import Store

# A line longer than this many path changes is cut there (a guard, never reached by use).
MAX_PLACES = 500


@dataclass(frozen=True)
class Start:
    """Where a memory's line begins, counted back: its file and the commit it is read at.

    A live memory starts at its file in HEAD; a deleted one at the commit that deleted it.
    by_id: the file has an id of its own in its front matter (else its id is its path).
    """

    memory_id: str
    path: str
    rev: str = "HEAD"
    by_id: bool = True


def commits(store: Store, start: Start) -> list[Commit]:
    """Every commit of the memory, newest first, each with the path its file had there."""
    found: list[Commit] = []
    seen: set[str] = set()
    place: tuple[str, str] | None = (start.path, start.rev)
    for _ in range(MAX_PLACES):
        if place is None:
            break
        path, rev = place
        place = None
        for entry in read_log(store.repo, rev, "--", path):
            if entry.sha not in seen:  # (a commit of two paths is listed once)
                seen.add(entry.sha)
                found.append(entry.commit(path))
            change = entry.change_of(path)
            if change is not None and change.status == "A":
                place = _came_from(store, start, entry, path)
                break
    return found


def _came_from(store: Store, start: Start, added: Logged, path: str) -> tuple[str, str] | None:
    """(path, rev) of the file's earlier life, from the commit that added it at path."""
    if added.subject.startswith("Create ") and start.memory_id in added.memory_ids:
        return None  # the tool made the memory here, with a new id: it has no earlier life
    whole = changes_of(store.repo, added.sha)
    for change in whole.changes:
        if change.status == "R" and change.path == path and change.source:
            return change.source, added.parents[0]
    removed = [c for c in whole.changes if c.status == "D"]
    named = _moved_from(added.subject, path)
    for change in removed:
        if change.path == named or (start.by_id and _holds_id(store, change, start.memory_id)):
            return change.path, added.parents[0]
    # Deleted earlier and added again: a move seen as two commits, or a restore.
    if not added.parents:
        return None  # the first commit of the repository
    earlier = added.parents[0]
    if start.by_id:
        named = naming(start.memory_id)
        for entry in read_log(store.repo, "-1", *named, "--diff-filter=D", earlier):
            for change in entry.changes:
                if _holds_id(store, change, start.memory_id):
                    return change.path, entry.sha
    for entry in read_log(store.repo, "-1", "--diff-filter=D", earlier, "--", path):
        change = entry.change_of(path)
        if change and (not start.by_id or _holds_id(store, change, start.memory_id)):
            return path, entry.sha
    return None


def _moved_from(subject: str, path: str) -> str | None:
    """The old path a `Move <type>: <title> (old -> new)` subject names for new path."""
    suffix = f" -> {path})"
    if not subject.startswith("Move ") or not subject.endswith(suffix):
        return None
    head = subject[: -len(suffix)]
    return head[head.rfind(" (") + 2 :] if " (" in head else None


def _holds_id(store: Store, change: FileChange, memory_id: str) -> bool:
    """Whether the file a change removed (or wrote) had this id in its front matter."""
    sha = change.old_blob or change.new_blob
    if sha is None:
        return False
    data = blob(store.repo, sha)
    if memory_id.encode() not in data:
        return False  # most files of a big commit: no parse needed
    return id_of(data, change.path) == memory_id


def id_of(data: bytes, path: str) -> str | None:
    """The front matter id of a file's bytes, or None (no id, or it does not parse)."""
    try:
        return parse(data.decode("utf-8"), path).id
    except (UnparseableFile, UnicodeDecodeError):
        return None
