"""Hand edits: checking a changed file, and committing what a person did as what it was.

A person edits, creates, deletes and moves files (in an editor, with `mv`, with `git mv`).
What settles in one quiet period is one commit: one memory's change has a subject saying
which of these it was, several are listed in its body (core/changelog.py). A move is found
by the memory's id or by content (core/moves.py), and both its paths go in one commit,
whatever noticed the change first (a watcher's event for only one of the two paths, or a
catch-up by a CLI read that already indexed the new path).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISDIR, S_ISLNK, S_ISREG
from typing import Any

from vault_tool.core import changelog, ids, redact
from vault_tool.core.memory import UTF8_HINT, Memory, fingerprint, parse
from vault_tool.core.moves import find_moves
from vault_tool.errors import InvalidInput, UnparseableFile
from vault_tool.search.documents import Indexed
from vault_tool.search.index import Index
from vault_tool.storage import problems as recorded
from vault_tool.storage.git import blob_sha
from vault_tool.storage.repo_state import (
    CONFLICT_HINT,
    CONFLICT_REASON,
    conflict_line,
    markers_in_front_matter,
)
from vault_tool.storage.steady import StillWritten
from vault_tool.storage.store import Store

HAND_EDIT_CLIENT = "hand-edit"
# Past this many other uncommitted files, no new end of a move is looked for among them.
MAX_PARTNER_CANDIDATES = 500
# The kinds of file not taken in, as the watcher narrates them.
REFUSED, PROBLEM, SECRET = "refused", "problem", "secret"
# Not taken in yet: the file changed as it was read. Read again, and a problem if it goes on.
CHANGING = "changing"
CHANGING_REASON = "it kept changing while it was read (something is still writing it)"
CHANGING_HINT = "nothing to do: it is taken in once it has not changed for a moment"


@dataclass(frozen=True)
class Checked:
    """A hand-edited file that passed the checks: the bytes read, and its stat before.

    For a file that is gone, `was` is HEAD's version of it (what its delete names)."""

    memory_id: str
    memory: Memory | None  # None: the file is gone
    data: bytes | None
    stat: os.stat_result | None
    was: changelog.Entry | None = None
    was_data: bytes | None = None
    was_id_declared: bool = False  # HEAD's version has an `id` of its own
    new: bool = False  # a file HEAD does not have
    flag: dict[str, Any] | None = None  # a merge committed its body in conflict: merge_flag


@dataclass(frozen=True)
class Kept:
    """A file not taken in: why (its recorded problem entry), and which kind of refusal."""

    kind: str
    entry: dict[str, Any]


@dataclass(frozen=True)
class Committed:
    """One commit of hand edits."""

    sha: str
    subject: str
    paths: list[str]
    memory_id: str


class HandEdits:
    """Checks and commits a person's changes to the files of one open vault."""

    def __init__(self, store: Store, index: Index) -> None:
        self.store = store
        self.index = index
        self.root = store.root

    def check(self, path: str, doc: Indexed | None) -> Checked | Kept | None:
        """This file's change, ready to commit and index; Kept if it must not be taken in
        (kind CHANGING: being written as it was read, storage/steady.py: read it again);
        None if there is nothing to take in (it equals what is indexed and committed)."""
        stat = stat_or_none(self.root / path)
        if stat is not None and not (S_ISREG(stat.st_mode) or S_ISLNK(stat.st_mode)):
            return _kept(REFUSED, None, "not a regular file (a FIFO or a device)", "remove it")
        try:
            whole = self.store.read_whole(path) if stat is not None else None
        except UnparseableFile as problem:  # too large to read
            return _kept(PROBLEM, None, problem.reason, problem.hint)
        except InvalidInput as refused:  # a symlink, or a folder that leads out
            return _kept(REFUSED, None, refused.message, refused.hint)
        except StillWritten:
            return _kept(CHANGING, None, CHANGING_REASON, CHANGING_HINT)
        if whole is None:
            return self._gone(path, doc)
        # The stat the bytes had while they were read: if the file changes after, catch-up
        # and the next event see a stale stat and read it again.
        data, stat = whole.data, whole.stat
        if self.taken_in(doc, path, data):
            return None
        try:
            memory = parse_memory(data, path, committed=self.store.matches_head)
        except UnicodeDecodeError as problem:
            return _kept(PROBLEM, None, f"not UTF-8 text ({problem.reason})", UTF8_HINT)
        except UnparseableFile as problem:
            # A name that cannot serve is refused; a text that does not parse is a problem.
            kind = REFUSED if problem.hint in (ids.PATH_HINT, RENAME_HINT) else PROBLEM
            return _kept(kind, problem.line, problem.reason, problem.hint)
        secret = secret_problem(data)
        if secret is not None:
            # git's version may hold one too (a person's commit, a repository's history):
            # then it is in the history already, and the fix says how to purge it.
            was = (self.store.show_file("HEAD", path) or b"").decode("utf-8", "replace")
            if redact.find_secret_kinds(was):
                secret = secret_problem(data, in_git=True) or secret
            return Kept(SECRET, secret)
        new = self.store.head_blob(path) is None
        flag = merge_flag(data)
        return Checked(memory.id or ids.path_id(path), memory, data, stat, new=new, flag=flag)

    def _gone(self, path: str, doc: Indexed | None) -> Checked | None:
        # Named by HEAD's version, not the index: a catch-up (any CLI read) may already have
        # dropped the file's document, and its id is the committed file's.
        if self.store.head_blob(path) is None:
            return Checked(doc.memory_id, None, None, None) if doc is not None else None
        was_data = self.store.show_file("HEAD", path)
        try:
            old = parse((was_data or b"").decode("utf-8"), path)
        except (UnparseableFile, UnicodeDecodeError):
            old = None
        if old is not None:
            was = changelog.entry(old, path)
        elif doc is not None:
            was = changelog.Entry(doc.memory_type, doc.title, doc.memory_id)
        else:
            was = changelog.entry_of_file(was_data, path)
        declared = old is not None and old.id is not None
        return Checked(was.memory_id, None, None, None, was, was_data, declared)

    def taken_in(self, doc: Indexed | None, path: str, data: bytes) -> bool:
        """Whether these bytes of path are both indexed (doc) and committed."""
        return (
            doc is not None and doc.blob == blob_sha(data) and self.store.matches_head(path, data)
        )

    def add_move_partners(self, ready: dict[str, Checked], known: dict[str, Any]) -> list[str]:
        """Add to ready the other end of each move that only one end of is in it; the
        candidates that were being written as they were read (they may be such an end).

        A watcher may be told of a move as a delete and a create in two batches (one per
        watched folder). The other end of a gone file is among the files git sees as new
        (one `git status`: deletes are rare); that of a new file is the indexed memory with
        its id, or with its type, title and text, whose file is gone (index lookups only:
        a person makes notes often, and a status of a large vault takes a while).
        """
        others: set[str] = set()
        if any(c.memory is None and c.was is not None for c in ready.values()):
            found = [p for p in self.store.uncommitted_paths() if p not in ready]
            if len(found) <= MAX_PARTNER_CANDIDATES:
                others.update(p for p in found if (self.root / p).exists())
        for checked in ready.values():
            if checked.new and checked.memory is not None:
                indexed = {d.path for d in self._same_memory(checked.memory)} - set(ready)
                others.update(p for p in indexed if not (self.root / p).exists())
        candidates: dict[str, Checked] = {}
        changing = []
        for path in sorted(others):
            doc = known.get(path) or self.index.by_path(path)
            checked = self.check(path, doc)
            if isinstance(checked, Checked) and (checked.new or checked.was is not None):
                candidates[path] = checked
                known[path] = doc
            elif isinstance(checked, Kept) and checked.kind == CHANGING:
                changing.append(path)
        if not candidates:
            return changing
        for old, new_path in find_moves({**ready, **candidates}).items():
            for path in (old, new_path):
                if path in candidates:
                    ready[path] = candidates[path]
        return changing

    def _same_memory(self, memory: Memory) -> list[Indexed]:
        """Indexed memories with this one's id, or with its type, title and text."""
        if memory.id:
            return self.index.find("memory_id", memory.id)
        return self.index.find(
            "fingerprint", fingerprint(memory.memory_type, memory.title, memory.body)
        )

    def commit(
        self, ready: dict[str, Checked], known: dict[str, Any]
    ) -> tuple[dict[str, str], list[Committed]]:
        """Commit what ready holds: path -> sha, and the commits (none if no file differs
        from HEAD).

        ready is what settled in one quiet period (a watcher's batch, or everything a
        catch-up or `vault-tool commit` found): a rename that rewrote the links of many
        notes, or a `sed` over them, is one change of the person's, so it is one commit,
        its body listing each memory. One memory (a move: both its paths) keeps its own
        subject (`Hand edit: <title>`, `Delete ...`, `Move ...`). Deletes that are no
        move's are a commit of their own: beside a new note in one commit, git would take
        a deleted note that the new one resembles (yesterday's daily note, made from the
        same template) for its rename, and `history` would join the two.
        """
        groups, unchanged = [], []
        for group in self._groups(ready, known):
            same = all(self.store.matches_head(p, ready[p].data) for p in group.paths)
            (unchanged if same else groups).append(group)
        for group in unchanged:
            # Nothing to commit, but git's index may hold what a killed commit staged (a
            # note added, then removed before any commit had it): put back as HEAD has it.
            snapshot = {p: ready[p].data for p in group.paths}
            self.store.commit_paths(group.paths, group.message, snapshot=snapshot)
        deletes = [g for g in groups if g.deleted]
        versions: dict[str, str] = {}
        done: list[Committed] = []
        for batch in (deletes, [g for g in groups if not g.deleted]):
            if not batch:
                continue
            paths = [p for g in batch for p in g.paths]
            if len(batch) == 1:
                message = batch[0].message
            else:
                moved = [g.moved_from for g in batch if g.moved_from is not None]
                entries = [g.entry for g in batch]
                message = changelog.hand_edited(entries, moved, HAND_EDIT_CLIENT)
            # The bytes that were checked are committed, whatever the files hold by now:
            # a person still typing must not get a half-saved file into the history.
            snapshot = {p: ready[p].data for p in paths}
            sha = self.store.commit_paths(paths, message, snapshot=snapshot)
            if sha:
                versions.update(dict.fromkeys(paths, sha))
                subject = message.split("\n", 1)[0]
                done.append(Committed(sha, subject, paths, batch[0].entry.memory_id))
        return versions, done

    def _groups(self, ready: dict[str, Checked], known: dict[str, Any]) -> list[_Group]:
        """Each memory's paths (a move's two), the entry that names it, and the message of a
        commit of it alone."""
        moves = find_moves(ready)
        groups = []
        for old, new in moves.items():
            checked = ready[new]
            assert checked.memory is not None
            of = changelog.entry(checked.memory, new)
            message = changelog.moved(of, old, new, HAND_EDIT_CLIENT)
            groups.append(_Group([old, new], of, message, old))
        paired = set(moves) | set(moves.values())
        by_id: dict[str, list[str]] = {}
        for path, checked in ready.items():
            if path not in paired:
                by_id.setdefault(checked.memory_id, []).append(path)
        for memory_id, group in by_id.items():
            memory = next((ready[p].memory for p in group if ready[p].memory is not None), None)
            was = next((ready[p].was for p in group if ready[p].was is not None), None)
            deleted = memory is None
            if memory is None and was is not None:
                of = changelog.Entry(was.memory_type, was.title, memory_id)
                line = changelog.subject("hand_delete", was)
            elif memory is not None:
                of = changelog.Entry(memory.memory_type, memory.title, memory_id)
                line = changelog.subject("hand_edit", title=memory.title)
            else:  # gone before any commit had it: named as the index knew it
                doc = next((known[p] for p in group if known.get(p)), None)
                title = doc.title if doc is not None else group[0]
                of = changelog.Entry(doc.memory_type if doc else "file", title, memory_id)
                line = changelog.subject("hand_edit", title=title)
            message = changelog.message(line, [memory_id], HAND_EDIT_CLIENT)
            groups.append(_Group(group, of, message, deleted=deleted))
        return groups


@dataclass(frozen=True)
class _Group:
    """One memory's part of a batch of hand edits."""

    paths: list[str]
    entry: changelog.Entry
    message: str  # of a commit of this memory alone
    moved_from: str | None = None
    deleted: bool = False  # its file is gone, and is no move's


def secret_problem(data: bytes, *, in_git: bool = False) -> dict[str, Any] | None:
    """The problem record of a file that holds a secret, or None. It is never indexed, so no
    search serves it, nor committed; in_git: git holds it already (a person's commit, a
    repository's history), and the fix says how to purge it from there too."""
    found = redact.find_secret_kinds(data.decode("utf-8"))
    if not found:
        return None
    kinds = ", ".join(found)
    if in_git:
        reason = f"holds a secret ({kinds}) committed to git; it is not searchable"
        return recorded.entry(None, reason, recorded.PURGE_HINT)
    return recorded.entry(
        None,
        f"holds a secret ({kinds}); it is not committed or searchable",
        "remove the secret from the file; it was never written to git",
    )


def _kept(kind: str, line: int | None, reason: str, hint: str) -> Kept:
    return Kept(kind, recorded.entry(line, reason, hint))


RENAME_HINT = "rename the file"


def parse_memory(
    data: bytes, path: str, *, committed: Callable[[str, bytes], bool] | None = None
) -> Memory:
    """Parse a file; one without an id must have a path that can serve as its id, and none
    may hold conflict markers (they are git's work in progress, not a memory), except in
    the body of a file committed as it is (committed(path, data), asked only then): a merge
    that could not settle a body commits it so (syncing never stops), and it is taken in,
    flagged (merge_flag), until a person resolves it."""
    marker = conflict_line(data)
    if marker is not None and not (
        committed is not None and not markers_in_front_matter(data) and committed(path, data)
    ):
        raise UnparseableFile(path, marker, CONFLICT_REASON, CONFLICT_HINT)
    if (named := ids.path_problem(path)) is not None:  # whatever its id: see path_problem
        raise UnparseableFile(path, None, named, ids.PATH_HINT)
    memory = parse(data.decode("utf-8"), path)
    if memory.id is None:
        try:
            ids.check_memory_id(ids.path_id(path))
        except InvalidInput:
            # Indexed, it would be found by search under an id that no read accepts.
            raise UnparseableFile(
                path,
                None,
                "its path cannot serve as its id (it has control characters, one of "
                '\\:*?"<>|, or is over 300 characters long)',
                RENAME_HINT,
            ) from None
    return memory


def merge_flag(data: bytes) -> dict[str, Any] | None:
    """The flag of a file parse_memory took in with conflict markers (in a committed body),
    at the line of the first: its hits say so until the markers are gone; else None."""
    line = conflict_line(data)
    if line is None:
        return None
    return recorded.flag(line, blob_sha(data))


def stat_or_none(path: Path) -> os.stat_result | None:
    """The file's own stat (a symlink is not followed); None if it is gone or a folder."""
    try:
        stat = path.lstat()
    except OSError:
        return None
    return None if S_ISDIR(stat.st_mode) else stat
