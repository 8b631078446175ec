"""git's index lock, taken and released the way git itself does (the commit protocol's).

A write holds `.git/index.lock` while it puts its files into git's index and then moves
HEAD: the index first, since git's commands read HEAD and then the index without the lock
(commits.py, docs/design.md "Writes"). A note in index-pending names the paths meanwhile,
so whoever takes the lock after a writer died between the two resets them to HEAD first.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

from vault_tool.storage import durable
from vault_tool.storage.git import Backoff, Git, held_too_long
from vault_tool.storage.index_tree import summary
from vault_tool.storage.processes import flock_held, git_processes
from vault_tool.storage.repo_state import Guard, index_key, unmerged_busy, unmerged_paths

log = logging.getLogger("vault_tool.storage.commits")

INDEX = "index"
# How long a write waits for a git that has written another commit's index to move HEAD.
CHECKOUT_WAIT_SECONDS = 1.0


class LockedIndex:
    """git's index under its lock, and what is to replace it.

    The copy of the index is written into the lock file only when a git command is to
    update it (for_git); an edit made in-process (index_edit.py) is only kept (replace).
    A commit puts the new index in place before HEAD moves (publish: written beside the
    lock and renamed onto the index, the lock still held, so a write writes the index
    once); withdraw puts the old one back if HEAD then does not move. A lock let go
    unpublished replaces the index if a git command changed the copy (the reset of a
    killed writer's paths), else is removed: nothing changed the index.
    """

    def __init__(self, path: Path, data: bytes, fd: int) -> None:
        self.path = path
        self.original = data  # the index as the lock found it
        self._data: bytes | None = data  # (None once a git command may have changed it)
        self._fd = fd  # the lock file, empty until a git command is to update the copy
        self.changed = False
        self.published = False  # the index already holds what it is to hold: drop the lock
        self._index_mode: int | None = None  # the mode of the index publish replaced

    def read(self) -> bytes:
        if self._data is None:
            self._data = self.path.read_bytes()
        return self._data

    def for_git(self) -> Path:
        """The lock file, holding the copy, for a git command to update (GIT_INDEX_FILE)."""
        if not self.changed:
            self._write(self.read())
        self._data = None
        return self.path

    def replace(self, data: bytes) -> None:
        """Make data the new index, for publish to put in place."""
        self._data = data

    def publish(self) -> None:
        """Make what the lock holds git's index now, keeping the lock. OSError if it cannot
        be written: then the index stays as it was."""
        index = self.path.with_name(INDEX)
        with contextlib.suppress(FileNotFoundError):
            self._index_mode = index.stat().st_mode
        # (with the lock's mode: git gives a shared repository's index the group's access)
        self._put_beside(self.read(), index, self.path.stat().st_mode)
        self.published = True

    def withdraw(self) -> None:
        """Put back the index the lock found (what was published never got its commit). If
        even that fails, the writer's note stays, and the next to take the lock resets its
        paths to HEAD (index_locked)."""
        index = self.path.with_name(INDEX)
        try:
            if self._index_mode is None:  # (there was none: a repository's first commit)
                durable.os_unlink(index)
            else:
                self._put_beside(self.original, index, self._index_mode)
        except OSError as problem:
            log.warning("git's index holds a write that did not land, until reopened: %s", problem)
        else:
            self.published = False

    def _put_beside(self, data: bytes, target: Path, mode: int | None = None) -> None:
        """Write data beside the lock and rename it onto target: whole, or not at all."""
        # (one left by a killed writer is stale: only the holder of the lock writes it)
        beside = self.path.with_name(self.path.name + ".lock")
        fd = durable.os_open(beside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        try:
            try:
                durable.write_all(fd, data, beside)
                if mode is not None:
                    os.fchmod(fd, stat.S_IMODE(mode))
            finally:
                os.close(fd)
            durable.os_replace(beside, target)
        except BaseException:
            with contextlib.suppress(OSError):
                durable.os_unlink(beside)
            raise

    def _write(self, data: bytes) -> None:
        try:
            durable.write_all(self._fd, data, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)  # (a part written is never taken for the index)
            raise
        self.changed = True

    def close(self) -> None:
        os.close(self._fd)


@contextlib.contextmanager
def index_locked(
    repo: Git, pending_dir: Path, guard: Guard, stale_after: float
) -> Iterator[LockedIndex]:
    """git's index lock, taken and released the way git itself does.

    `.git/index.lock` is created exclusively (waiting out a person's git); it is filled
    with a copy of the index for commands given it as GIT_INDEX_FILE to update, or with
    the index edited in-process (LockedIndex), and then replaces the index (git's
    lockfile protocol). On an error, or if nothing was written into it, the lock is
    removed and the index stays as it was. A lock still there
    after stale_after, with no git process in the vault and no vault process holding it
    (ours flock it while they hold it), was left by a killed process: it is taken over,
    not deleted, so no other git reads the index before the entries a killed writer of
    ours committed but never put in it (its note) are reset to HEAD.
    """
    lock, index = repo.git_dir / f"{INDEX}.lock", repo.git_dir / INDEX
    wait = Backoff(repo.lock_timeout, stale_after)
    midway: Backoff | None = None  # (waiting for a checkout to move HEAD: _checkout_midway)
    while True:
        fd = _create(lock, repo, wait)
        held = os.dup(fd)  # open (and flocked) while we hold the lock, whatever replaces it
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        before = index_key(repo.git_dir)  # (no other git writes it while we hold the lock)
        data = index.read_bytes() if index.exists() else b""
        if before == guard.index_written:
            break  # (as the vault itself left it: no git wrote it since)
        found = summary(data)
        # A git that has written the index of what it checks out moves HEAD a moment later:
        # a commit meanwhile would land on the old branch, its file staged into the new
        # one's index. Still so after CHECKOUT_WAIT_SECONDS, it is a person's own state
        # (a `git reset --soft`, a `git read-tree`) that a commit may go ahead in.
        if not found.unmerged:
            if not _checkout_midway(repo, found.tree):
                break
            if midway is None:
                log.info("git's index holds another commit than HEAD while a git runs: waiting")
                midway = Backoff(CHECKOUT_WAIT_SECONDS)
            elif midway.expired:
                break
        lock.unlink(missing_ok=True)
        os.close(fd)
        os.close(held)
        if found.unmerged:  # a merge wrote its conflicts, maybe not yet its MERGE_HEAD
            raise unmerged_busy(unmerged_paths(repo.run))
        assert midway is not None
        midway.pause()
    notes = sorted(pending_dir.glob("*.json")) if pending_dir.is_dir() else []
    locked = LockedIndex(lock, data, fd)
    try:
        try:
            behind: set[str] = set()
            for note in notes:
                with contextlib.suppress(OSError, ValueError):
                    behind.update(json.loads(note.read_text(encoding="utf-8")))
            if behind:
                env = {"GIT_INDEX_FILE": str(locked.for_git())}
                repo.run("reset", "--quiet", "--", *sorted(behind), env=env)
            yield locked
        except BaseException:
            lock.unlink(missing_ok=True)
            raise
        if locked.changed and not locked.published:
            os.replace(lock, index)
        else:  # (nothing changed the index, or it is in place already)
            lock.unlink(missing_ok=True)
    finally:
        locked.close()
        os.close(held)
    guard.index_replaced(before)
    for note in notes:
        note.unlink(missing_ok=True)


def _create(lock: Path, repo: Git, wait: Backoff) -> int:
    """Create the lock exclusively, waiting out whoever holds it; a stale one is taken over."""
    while True:
        try:
            return os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            # Stale only if no git works in the vault and no vault process holds it:
            # ours hold it between their git commands, flocked while they do.
            if wait.holder_due() and not git_processes(repo.root) and not flock_held(lock):
                with contextlib.suppress(FileNotFoundError):
                    fd = os.open(lock, os.O_WRONLY | os.O_TRUNC)
                    log.warning("took over a stale .git/index.lock left by a killed process")
                    return fd
            if wait.expired:
                raise held_too_long(str(lock)) from None
            wait.pause()


def _checkout_midway(repo: Git, tree: bytes | None) -> bool:
    """Whether a git is between writing the index of another commit and moving HEAD there
    (index_tree.py): the index holds a whole tree that is not HEAD's, while a git runs. With
    no git running that is a person's `git reset --soft`, and a commit may go ahead."""
    head = repo.head_or_none() if tree is not None else None
    return head is not None and tree != repo.head_tree(head) and bool(git_processes(repo.root))


def note_pending(pending_dir: Path, paths: list[str]) -> Path:
    """A note naming paths committed whose entries in git's index are not updated yet."""
    pending_dir.mkdir(parents=True, exist_ok=True)
    note = pending_dir / f"{time.time_ns()}-{os.getpid()}.json"
    note.write_text(json.dumps(paths))
    return note
