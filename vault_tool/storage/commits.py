"""The commit protocol: one commit(paths, message) for every write, tool or hand edit.

A commit is made through git's plumbing (trees.py builds the new trees, objects.py writes
the blobs, trees and commit as git would, git moves the branch and updates its index)
unless the repository has commit hooks, which only `git commit` runs, or a path runs
through a file in HEAD. Where git would change what it stores (signing, a commit encoding,
attributes that convert files: git_settings.py), git's own command writes that object.
Either way exactly the given paths are committed: neither what a person staged nor their
other edits.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import secrets
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from vault_tool.core import stages
from vault_tool.errors import InvalidInput, VaultError
from vault_tool.storage import refs
from vault_tool.storage.git import STALE_LOCK_SECONDS, Git
from vault_tool.storage.git_settings import GitSettings, git_time
from vault_tool.storage.head_movers import HeadMoving, no_moving_git, wait_out_moving_git, waiting
from vault_tool.storage.index_edit import IndexEditor, index_info
from vault_tool.storage.index_lock import LockedIndex, index_locked, note_pending
from vault_tool.storage.objects import LooseObjects
from vault_tool.storage.processes import git_processes
from vault_tool.storage.repo_state import CONFLICT_HINT, CONFLICT_REASON, Guard, conflict_line
from vault_tool.storage.trees import (
    FILE_MODE,
    NewTree,
    NotATree,
    edit_entries,
    mktree_input,
    tree_sha,
)

log = logging.getLogger(__name__)

# Hooks that `git commit` runs and the plumbing does not: with any of them, writes use it.
COMMIT_HOOKS = ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit")
# How often a write rebuilds its commit when a person's commit moves HEAD meanwhile.
HEAD_RACE_ATTEMPTS = 5
# `git commit` runs `git gc --auto` after every commit; plumbing commits do it this often.
AUTO_GC_EVERY = 50

# path -> the bytes to commit for it (None: the path is removed)
Snapshot = dict[str, bytes | None]


class Committer:
    """Makes the vault's commits; holds git's index lock the way git itself does."""

    def __init__(self, repo: Git, pending_dir: Path, scratch_dir: Path) -> None:
        self.repo = repo
        self.root = repo.root
        # Paths committed whose entries in git's index are not updated yet (see _plumbing).
        self.pending_dir = pending_dir
        # Where a snapshot is laid out for `git commit` to read.
        self.scratch_dir = scratch_dir
        self._commits_since_gc = 0
        self.settings = GitSettings(repo)
        self.objects = LooseObjects(repo.git_dir)
        self.index_editor = IndexEditor()
        # What this process committed last (own_commits.py): its watcher skips those files.
        self.own = repo.own
        repo.take_over_index = self.bring_index_up
        # Whether git is in the middle of something: then nothing may be committed.
        self.guard = Guard(repo.git_dir, repo.run)

    @stages.timed("git")
    def commit(
        self,
        paths: list[str],
        message: str,
        *,
        author_date: str | None = None,
        snapshot: Snapshot | None = None,
    ) -> str | None:
        """Commit exactly these paths; the new commit's sha, or None if nothing changed.

        Without a snapshot, the paths are committed as they are on disk (a missing one as
        removed). With one, exactly its bytes are committed even if a person saves a file
        again meanwhile (through `git commit`, git reads them from a scratch work tree).
        Refused while git is busy (repo_state.py) and for a file holding conflict markers.
        """
        on_disk = {p: _bytes_or_none(self.root / p) for p in paths} if snapshot is None else {}
        self.require_committable(snapshot if snapshot is not None else on_disk)
        wait = waiting()
        while self._plumbing_allowed():
            try:
                return self._plumbing(paths, message, author_date, snapshot)
            except NotATree:
                break  # a path runs through a file in HEAD: `git commit` sorts that out
            except HeadMoving:
                wait_out_moving_git(self.root, wait)
        wait_out_moving_git(self.root, wait)  # (git commit reads HEAD itself: head_movers.py)
        before = self.repo.head_or_none()
        with self._work_tree(snapshot) as tree:
            # `git commit -- <paths>` stages what it commits, but only for paths git already
            # tracks. Only an intent to add: a person's plain `git commit` running meanwhile
            # must not sweep the new file into their commit (ours would find nothing to commit).
            new = [
                p for p in paths if self.repo.head_blob(p) is None and self._present(p, snapshot)
            ]
            if new:
                self.repo.run(*tree, "add", "--intent-to-add", "--", *new)
            args = [*tree, "commit", "--quiet", "-F", "-", "--", *paths]
            try:
                with self.repo.dated(author_date):
                    self.repo.run(*args, stdin=_message_bytes(message))
            except BaseException:
                # An intent-to-add entry left in git's index makes `git stash` and `git
                # merge` fail ("Entry not uptodate. Cannot merge"): take it out again.
                if new:
                    with contextlib.suppress(VaultError):
                        self.repo.run("rm", "--cached", "--quiet", "--ignore-unmatch", "--", *new)
                raise
        after = self.repo.head_or_none()
        return after if after != before else None

    def require_committable(self, files: Snapshot | None = None) -> None:
        """Refuse, before anything is written, while git is busy (repo_state.py: VaultBusy)
        and files (path -> bytes) that hold conflict markers (InvalidInput)."""
        self.guard.require_idle()
        for path, data in (files or {}).items():
            if data is not None and conflict_line(data) is not None:
                raise InvalidInput(f"{path} {CONFLICT_REASON}", hint=CONFLICT_HINT)

    def is_own(self, path: str, data: bytes | None) -> bool:
        """Whether data (None: gone) at path is this process's own commit, still HEAD."""
        return self.own.holds(self.repo.head_or_none(), path, data)

    def index_behind(self) -> bool:
        """Whether a commit's process died before updating git's index (bring_index_up)."""
        notes = self.pending_dir.is_dir() and any(self.pending_dir.iterdir())
        # A lock a live git holds (a person's `git commit` in its editor) is theirs: opening
        # must not wait for it; the next write waits, and applies any notes then.
        lock = self.repo.git_dir / "index.lock"
        return notes or (lock.exists() and not git_processes(self.root))

    def bring_index_up(self) -> None:
        """Reset git's index entries a killed writer committed but never put in the index
        to HEAD, taking over a stale index.lock such a death left (see _index_locked)."""
        with self._index_locked(stale_after=0):
            pass

    def _plumbing_allowed(self) -> bool:
        """Whether a write may skip `git commit`: only when git would run no commit hook."""
        return not any(os.access(self.settings.hooks() / name, os.X_OK) for name in COMMIT_HOOKS)

    def _present(self, path: str, snapshot: Snapshot | None) -> bool:
        """Whether the commit has bytes for path (else it removes the path)."""
        if snapshot is not None:
            return snapshot.get(path) is not None
        return (self.root / path).exists()

    @contextlib.contextmanager
    def _work_tree(self, files: Snapshot | None) -> Iterator[list[str]]:
        """git options that read these files from a scratch folder (none: from the vault)."""
        if files is None:
            yield []
            return
        folder = self.scratch_dir / f"snapshot-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            for path, data in files.items():
                if data is not None:
                    (folder / path).parent.mkdir(parents=True, exist_ok=True)
                    (folder / path).write_bytes(data)
            folder.mkdir(parents=True, exist_ok=True)
            yield ["--work-tree", str(folder)]
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    # --- the plumbing commit ---------------------------------------------------------------

    def _plumbing(
        self, paths: list[str], message: str, author_date: str | None, snapshot: Snapshot | None
    ) -> str | None:
        """The commit `git commit -- <paths>` would make, without reading the whole index.

        It holds git's index lock throughout, and git's index gets these paths before HEAD
        moves: `git commit` reads HEAD and then the index before it takes the lock, so a
        person's commit that read HEAD with our commit in it and an index without our files
        would be built on that index and revert them (docs/design.md, "Writes"). HEAD moves
        by compare-and-swap, so a ref update from elsewhere is never overwritten; the commit
        is rebuilt on top of it. Raises NotATree when plumbing cannot make this commit.
        """
        moved = False
        note = None
        with self._index_locked() as locked:
            try:
                # The files are read under git's lock: read before it, a person's `git stash`
                # (or checkout) could put an older version on disk in between, and the commit
                # would hold bytes the folder no longer has (their stash pop then refused).
                changes = self._blobs(paths, snapshot)
                # Until git's index and HEAD agree on the paths, a note names them: if this
                # process dies between the two, whoever next takes the index lock (the next
                # write, or the next open) resets them to HEAD first (_index_locked).
                note = note_pending(self.pending_dir, paths)
                stage = functools.partial(self._stage, locked, paths, changes, snapshot)
                sha = self._move_head(changes, message, author_date, stage)
                moved = sha is not None
            except BaseException:
                if locked.published:
                    locked.withdraw()
                raise
            finally:
                self.objects.discard()  # (objects staged for a commit that never moved HEAD)
                if note is not None and moved == locked.published:
                    note.unlink(missing_ok=True)
        if not moved:
            return None
        self._commits_since_gc += 1
        if self._commits_since_gc >= AUTO_GC_EVERY:
            self._commits_since_gc = 0
            with contextlib.suppress(VaultError):  # packing is housekeeping, never a failure
                self.repo.run("gc", "--auto", "--quiet")
        return sha

    def _blobs(self, paths: list[str], snapshot: Snapshot | None) -> dict[str, str | None]:
        """path -> the blob id of what it commits (written to git's objects); None: removed."""
        if snapshot is None:
            present = [p for p in paths if (self.root / p).is_file()]
        else:
            present = [p for p in paths if snapshot.get(p) is not None]
        if self.settings.blobs_in_process(present):
            read = (lambda p: snapshot[p]) if snapshot else (lambda p: (self.root / p).read_bytes())
            blobs = [self.objects.stage(b"blob", read(p) or b"").hex() for p in present]
        elif snapshot is None:
            blobs = (
                self.repo.run("hash-object", "-w", "--", *present).split("\n") if present else []
            )
        else:
            blobs = [
                self.repo.run("hash-object", "-w", "--stdin", f"--path={p}", stdin=snapshot[p])
                for p in present
            ]
        changes: dict[str, str | None] = dict.fromkeys(paths)
        changes.update(zip(present, blobs, strict=True))
        return changes

    def _stage(
        self,
        locked: LockedIndex,
        paths: list[str],
        changes: dict[str, str | None],
        snapshot: Snapshot | None,
    ) -> None:
        """Put the committed paths into git's index (in-process where index_edit.py can,
        else by git's command) and put it in place, the lock still held. VaultError or
        OSError (a full disk) if it cannot: then the index is as it was."""
        # A new file a `git clean` removed since it was read is committed all the same (and
        # put back, changes.py): staged at its blob, not removed as the folder would say.
        gone = {p for p in paths if changes.get(p) and not (self.root / p).exists()}
        from_disk = snapshot is None and not gone
        if not (
            self.settings.index_in_process()
            and self.index_editor.stage(locked, self.root, changes, from_disk)
        ):
            env = {"GIT_INDEX_FILE": str(locked.for_git())}
            if from_disk:
                self.repo.run("update-index", "--add", "--remove", "--", *paths, env=env)
            else:  # the committed blobs, not what the files hold by now
                info = index_info(changes)
                self.repo.run("update-index", "-z", "--index-info", stdin=info, env=env)
        locked.publish()

    def _move_head(
        self,
        changes: dict[str, str | None],
        message: str,
        author_date: str | None,
        stage: Callable[[], None],
    ) -> str | None:
        """Make the commit of changes on HEAD and move HEAD to it, git's index staged
        (stage) right before HEAD first moves; None if nothing changed."""
        staged = False
        subject = message.partition("\n\n")[0]
        for attempt in range(HEAD_RACE_ATTEMPTS):
            parent = self.repo.head_sha()
            old_root = self.repo.head_tree(parent)
            root, trees = edit_entries(self.repo.trees.entries, old_root, changes)
            if root == old_root:
                return None
            self._write_trees(trees)
            root = root or self._empty_tree()
            sha = self._commit_object(root, parent, message, author_date)
            self.objects.flush()  # (on disk before the branch names them, and before the look)
            # Asked again right before HEAD moves, and the branch itself moved (not HEAD):
            # a checkout, rebase or merge begun since the first ask never gets this commit.
            branch = self.guard.require_idle_branch()
            if not staged:
                # (a `git stash` reads the index unlocked: our files, staged for a commit not
                # landed, would be the person's to it, stashed and removed)
                no_moving_git(self.root)
                stage()  # (the entries are the same whichever commit they land in)
                staged = True
            try:
                self._move_branch(branch, sha, parent, f"commit: {subject}")
                self.repo.trees.keep_commit(sha, root)
                self.own.committed(parent, sha, changes, self._changed(old_root, changes))
                return sha
            except VaultError:
                if self.repo.head_or_none() == parent or attempt == HEAD_RACE_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")

    def _move_branch(self, branch: str, sha: str, parent: str, message: str) -> None:
        """`git update-ref -m message refs/heads/<branch> sha parent`, in-process where that
        is exactly what git does (refs.py); the last look for a git moving HEAD comes last."""
        if self.settings.refs_in_process():
            ident, when = self.settings.identity()[1], git_time(time.time())
            git_dir, look = self.repo.git_dir, lambda: no_moving_git(self.root)
            if refs.move_branch(git_dir, branch, sha, parent, ident, when, message, look):
                return
        no_moving_git(self.root)
        ref = f"refs/heads/{branch}"
        self.repo.run("update-ref", "-m", message, ref, sha, parent, retry_moved_head=False)

    def _changed(self, old_root: bytes | None, changes: dict[str, str | None]) -> set[str]:
        """The paths whose entry differs from the parent's (what `git log -- path` counts)."""
        entry = self.repo.trees.entry_at
        return {
            path
            for path, blob in changes.items()
            if entry(old_root, path) != ((FILE_MODE, bytes.fromhex(blob)) if blob else None)
        }

    def _commit_object(
        self, root: bytes, parent: str, message: str, author_date: str | None
    ) -> str:
        """Store the commit of root on parent (as `git commit-tree` makes it); its sha."""
        if self.settings.commit_in_process(author_date):
            author, committer = self.settings.identity()
            when = git_time(time.time())
            body = b"tree %s\nparent %s\nauthor %s %s\ncommitter %s %s\n\n" % (
                root.hex().encode(), parent.encode(), author, when, committer, when,
            )  # fmt: skip
            return self.objects.stage(b"commit", body + _message_bytes(message)).hex()
        self.objects.flush()  # (git reads the trees it is given)
        args = ["commit-tree", root.hex(), "-p", parent, "-F", "-"]
        if self.settings.signs():
            args.insert(1, "-S")
        with self.repo.dated(author_date):
            return self.repo.run(*args, stdin=_message_bytes(message))

    def _write_trees(self, trees: list[NewTree]) -> None:
        if not trees:
            return
        if self.settings.objects_in_process():
            for tree in trees:
                self._write_tree(tree)
            return
        written = self.repo.run(
            "mktree", "-z", "--batch", stdin=mktree_input([t.entries for t in trees])
        )
        if written.split("\n") != [tree.binsha.hex() for tree in trees]:
            raise VaultError(
                "git stored the new folder listings under unexpected ids",
                hint="run `vault-tool doctor`; nothing was committed",
            )

    def _empty_tree(self) -> bytes:
        """The tree of a commit that leaves nothing (git knows it without storing it)."""
        empty = NewTree(tree_sha({}), b"", {})
        return self._write_tree(empty) if self.settings.objects_in_process() else empty.binsha

    def _write_tree(self, tree: NewTree) -> bytes:
        binsha = self.objects.stage(b"tree", tree.body)
        self.repo.trees.keep(binsha, tree.entries)
        return binsha

    # --- git's index lock (index_lock.py) --------------------------------------------------

    def _index_locked(self, stale_after: float = STALE_LOCK_SECONDS) -> Any:
        return index_locked(self.repo, self.pending_dir, self.guard, stale_after)


def _message_bytes(message: str) -> bytes:
    """A commit message for git's stdin, as `-m subject -m body` would make it. Not as
    arguments: an import's trailers (one per memory) outgrow the 128 KiB one may hold."""
    subject, _, rest = message.partition("\n\n")
    return (f"{subject}\n\n{rest.strip()}\n" if rest.strip() else f"{subject}\n").encode()


def _bytes_or_none(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (OSError, ValueError):
        return None
