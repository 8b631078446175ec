"""The commit protocol: one commit(paths, message) for every write, tool or hand edit.

A commit is made through git's plumbing (trees.py builds the new trees, git writes every
object) unless the repository has commit hooks, which only `git commit` runs, or a path
runs through a file in HEAD. Either way exactly the given paths are committed: neither
what a person staged nor their other edits.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import secrets
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

from vault_tool.errors import InvalidInput, VaultError
from vault_tool.storage.git import STALE_LOCK_SECONDS, Backoff, Git, held_too_long
from vault_tool.storage.processes import flock_held, git_processes
from vault_tool.storage.repo_state import (
    CONFLICT_HINT,
    CONFLICT_REASON,
    Guard,
    conflict_line,
    index_key,
)
from vault_tool.storage.trees import Entries, NotATree, edit_tree, mktree_input, tree_sha

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
        self._settings: dict[str, str] | None = None
        repo.take_over_index = self.bring_index_up
        # Whether git is in the middle of something: then nothing may be committed.
        self.guard = Guard(repo.git_dir, repo.run)

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
        if self._plumbing_allowed():
            try:
                return self._plumbing(paths, message, author_date, snapshot)
            except NotATree:
                pass  # a path runs through a file in HEAD: `git commit` sorts that out
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
        hooks = Path(os.path.expanduser(self._setting("core.hookspath", ".git/hooks")))
        folder = hooks if hooks.is_absolute() else self.root / hooks
        return not any(os.access(folder / name, os.X_OK) for name in COMMIT_HOOKS)

    def _present(self, path: str, snapshot: Snapshot | None) -> bool:
        """Whether the commit has bytes for path (else it removes the path)."""
        if snapshot is not None:
            return snapshot.get(path) is not None
        return (self.root / path).exists()

    def _setting(self, key: str, default: str = "") -> str:
        """A git setting that decides how writes commit (read once per open vault)."""
        if self._settings is None:
            try:
                out = self.repo.run(
                    "config", "-z", "--get-regexp",
                    r"^(commit\.gpgsign|core\.hookspath)$",
                )  # fmt: skip
            except VaultError:
                out = ""  # none of them is set
            settings = {}
            for record in filter(None, out.split("\0")):
                name, _, value = record.partition("\n")
                settings[name.lower()] = value
            if settings.get("commit.gpgsign", "false").lower() in ("", "yes", "on", "1", "true"):
                settings["commit.gpgsign"] = "true"
            self._settings = settings
        return self._settings.get(key, default) or default

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

        Like `git commit`, it holds git's index lock from before HEAD moves until the index
        has these paths: a person's `git commit` meanwhile would otherwise be built from an
        index that still has the old files, and revert them. HEAD moves by compare-and-swap,
        so a ref update from elsewhere is never overwritten; the commit is rebuilt on top of
        it. Raises NotATree when plumbing cannot make this commit.
        """
        moved = index_current = False
        note = None
        try:
            with self._index_locked() as staged_index:
                # The files are read under git's lock: read before it, a person's `git stash`
                # (or checkout) could put an older version on disk in between, and the commit
                # would hold bytes the folder no longer has (their stash pop then refused).
                changes = self._blobs(paths, snapshot)
                # Until git's index has the paths, a note names them: if this process dies
                # after HEAD moved, whoever next takes the index lock (the next write, or
                # the next open) resets them to HEAD first (_index_locked).
                note = self._note_pending(paths)
                sha = self._move_head(changes, message, author_date)
                if sha is None:
                    return None
                moved = True
                staged = self._stage(staged_index, paths, changes, snapshot, sha)
            index_current = staged  # (only now: the staged copy has replaced the index)
        finally:
            if note is not None and (not moved or index_current):
                note.unlink(missing_ok=True)
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
            blobs = (
                self.repo.run("hash-object", "-w", "--", *present).split("\n") if present else []
            )
        else:
            present = [p for p in paths if snapshot.get(p) is not None]
            blobs = [
                self.repo.run("hash-object", "-w", "--stdin", f"--path={p}", stdin=snapshot[p])
                for p in present
            ]
        changes: dict[str, str | None] = dict.fromkeys(paths)
        changes.update(zip(present, blobs, strict=True))
        return changes

    def _stage(
        self,
        staged_index: Path,
        paths: list[str],
        changes: dict[str, str | None],
        snapshot: Snapshot | None,
        sha: str,
    ) -> bool:
        """Put the committed paths into the locked copy of git's index; False if git failed
        (the commit has landed, only the index, what `git status` compares, lags)."""
        env = {"GIT_INDEX_FILE": str(staged_index)}
        try:
            if snapshot is None:
                self.repo.run("update-index", "--add", "--remove", "--", *paths, env=env)
            else:  # the snapshot's blobs, not what the files hold by now
                info = _index_info(changes)
                self.repo.run("update-index", "-z", "--index-info", stdin=info, env=env)
        except VaultError as problem:
            log.warning("committed %s; git's index is behind until reopened: %s", sha[:10], problem)
            return False
        return True

    def _move_head(
        self, changes: dict[str, str | None], message: str, author_date: str | None
    ) -> str | None:
        """Make the commit of changes on HEAD and move HEAD to it; None if nothing changed."""
        subject = message.partition("\n\n")[0]
        for attempt in range(HEAD_RACE_ATTEMPTS):
            parent = self.repo.head_sha()
            old_root = self.repo.head_tree(parent)
            root, trees = edit_tree(self.repo.read_object, old_root, changes)
            if root == old_root:
                return None
            self._write_trees(trees)
            args = ["commit-tree", (root or tree_sha({})).hex(), "-p", parent, "-F", "-"]
            if self._setting("commit.gpgsign") == "true":
                args.insert(1, "-S")
            with self.repo.dated(author_date):
                sha = self.repo.run(*args, stdin=_message_bytes(message))
            # Asked again right before HEAD moves, and the branch itself moved (not HEAD):
            # a checkout or rebase begun since the first ask never gets this commit.
            branch = self.guard.require_idle_branch()
            try:
                self.repo.run(
                    "update-ref", "-m", f"commit: {subject}", f"refs/heads/{branch}", sha,
                    parent, retry_moved_head=False,
                )  # fmt: skip
                return sha
            except VaultError:
                if self.repo.head_or_none() == parent or attempt == HEAD_RACE_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")

    def _write_trees(self, trees: list[Entries]) -> None:
        if not trees:
            return
        written = self.repo.run("mktree", "-z", "--batch", stdin=mktree_input(trees))
        if written.split("\n") != [tree_sha(entries).hex() for entries in trees]:
            raise VaultError(
                "git stored the new folder listings under unexpected ids",
                hint="run `vault-tool doctor`; nothing was committed",
            )

    # --- git's index lock ------------------------------------------------------------------

    @contextlib.contextmanager
    def _index_locked(self, stale_after: float = STALE_LOCK_SECONDS) -> Iterator[Path]:
        """git's index lock, taken and released the way git itself does.

        `.git/index.lock` is created exclusively (waiting out a person's git) and filled
        with a copy of the index; commands given it as GIT_INDEX_FILE update that copy,
        which then replaces the index (git's lockfile protocol). On an error the lock is
        removed and the index stays as it was. A lock still there after stale_after, with
        no git process in the vault and no vault process holding it (ours flock it while
        they hold it), was left by a killed process: it is taken over, not deleted, so no
        other git reads the index before the entries a killed writer of ours committed but
        never put in it (its note) are reset to HEAD.
        """
        lock, index = self.repo.git_dir / "index.lock", self.repo.git_dir / "index"
        wait = Backoff(self.repo.lock_timeout, stale_after)
        while True:
            try:
                fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                break
            except FileExistsError:
                # Stale only if no git works in the vault and no vault process holds it:
                # ours hold it between their git commands, flocked while they do.
                if wait.holder_due() and not git_processes(self.root) and not flock_held(lock):
                    with contextlib.suppress(FileNotFoundError):
                        fd = os.open(lock, os.O_WRONLY | os.O_TRUNC)
                        log.warning("took over a stale .git/index.lock left by a killed process")
                        break
                if wait.expired:
                    raise held_too_long(str(lock)) from None
                wait.pause()
        held = os.dup(fd)  # open (and flocked) while we hold the lock; the copy's fd closes
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        notes = sorted(self.pending_dir.glob("*.json")) if self.pending_dir.is_dir() else []
        before = index_key(self.repo.git_dir)  # (no other git writes it while we hold the lock)
        try:
            try:
                with os.fdopen(fd, "wb") as copy:
                    if index.exists():
                        copy.write(index.read_bytes())
                behind: set[str] = set()
                for note in notes:
                    with contextlib.suppress(OSError, ValueError):
                        behind.update(json.loads(note.read_text(encoding="utf-8")))
                if behind:
                    env = {"GIT_INDEX_FILE": str(lock)}
                    self.repo.run("reset", "--quiet", "--", *sorted(behind), env=env)
                yield lock
            except BaseException:
                lock.unlink(missing_ok=True)
                raise
            os.replace(lock, index)
        finally:
            os.close(held)
        self.guard.index_replaced(before)
        for note in notes:
            note.unlink(missing_ok=True)

    def _note_pending(self, paths: list[str]) -> Path:
        self.pending_dir.mkdir(parents=True, exist_ok=True)
        note = self.pending_dir / f"{time.time_ns()}-{os.getpid()}.json"
        note.write_text(json.dumps(paths))
        return note


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


def _index_info(changes: dict[str, str | None]) -> bytes:
    """`git update-index -z --index-info` lines: each path at its blob, or removed (mode 0)."""
    return b"".join(
        (f"100644 {blob}" if blob else "0 " + "0" * 40).encode() + b"\t" + path.encode() + b"\0"
        for path, blob in changes.items()
    )
