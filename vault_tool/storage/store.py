"""The vault folder and its repository: atomic writes, the vault lock, crash repair.

Every change to memory files goes through Store.apply(): secret check -> journal -> temp
file -> fsync -> keep the old file (a hard link) -> compare -> rename -> commit only the
touched paths -> confirm (changes.py puts the files in place and undoes them). A crash
anywhere leaves either the old state or a renamed-but-uncommitted file that the next open()
commits (repair). A Store has a Git (git.py: running git, what git knows) and a Committer
(commits.py: how a commit is made); it answers the engine's questions about git by asking its Git.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from stat import S_ISREG

from vault_tool.core import stages
from vault_tool.core.changelog import client_of, subject
from vault_tool.core.ids import may_hold_memory
from vault_tool.core.memory import MAX_FILE_BYTES, too_large
from vault_tool.errors import InvalidInput, VaultBusy, VaultError, VersionConflict
from vault_tool.storage import adopt, diff_setup, merge_setup, versions
from vault_tool.storage import config as config_module
from vault_tool.storage.changes import (
    UNCHECKED,
    Change,
    Placing,
    failure,
    put_back_removed,
    refuse_secrets,
    wait_out_cleans,
)
from vault_tool.storage.commits import Committer, Snapshot
from vault_tool.storage.durable import temp_path, write_new
from vault_tool.storage.folder import files_under
from vault_tool.storage.git import (
    FALLBACK_EMAIL,
    FALLBACK_NAME,
    Git,
    blob_sha,
    clear_git_environment,
    open_repo,
)
from vault_tool.storage.head_movers import moving_git, wait_out_moving_git
from vault_tool.storage.left_out import LeftOut
from vault_tool.storage.locks import WriteLock
from vault_tool.storage.processes import git_command
from vault_tool.storage.repair import Repairs
from vault_tool.storage.repo_state import NestedFolders
from vault_tool.storage.steady import TooLarge, Whole, read_whole

log = logging.getLogger(__name__)

GITIGNORE = """\
# Machine-local state of vault-tool: rebuildable caches, locks, logs, the retrieval ledger.
.vault/index/
.vault/run/
.vault/ledger/
# Temporary files of interrupted writes (removed on the next start).
.*.vault-tmp-*
"""
_BYTE_FOR_BYTE = """\
# Store every file byte for byte, so a file's blob id tells at once whether it changed.
* -text
"""
GITATTRIBUTES = _BYTE_FOR_BYTE + merge_setup.ATTRIBUTES + diff_setup.ATTRIBUTES


__all__ = ["UNCHECKED", "Change", "Store"]


class Store:
    """One vault folder and its repository. Open with Store.open(); close() on shutdown."""

    def __init__(self, root: Path, repo: Git, settings: config_module.Config) -> None:
        self.root = root
        self._real_root = os.path.realpath(root)
        self._real_inside = os.path.join(self._real_root, "")
        self.repo = repo
        self.config = settings
        self.run_dir = root / ".vault" / "run"
        self.commits = Committer(repo, self.run_dir / "index-pending", self.run_dir)
        # What git knows, asked of the store by the engine and the checks: its Git answers.
        self.git = repo.run
        self.head_sha = repo.head_sha
        self.head_blob = repo.head_blob
        self.head_blobs = repo.head_blobs
        self.last_commit = repo.last_commit
        self.last_commits = functools.partial(versions.last_commits, repo)
        self.last_changes = functools.partial(versions.last_changes, repo)
        self.commit_time = functools.partial(versions.commit_time, repo)
        self.holds_at = functools.partial(versions.holds, repo)  # (sha, path, blob)
        self.log = repo.log
        self.show_file = repo.show_file
        self.diff = repo.diff
        self.commit_exists = repo.commit_exists
        self.git_environment = repo.repo.git.environment  # (the identity fallback, if any)
        self.repairs = Repairs(self)  # (repair.py: what crashed writers left)
        self._journal_dir = self.repairs.journal_dir
        # In git's own folder, which `git clean -xfd` never removes (it does remove .vault/run).
        self.write_lock_path = Path(repo.git_dir) / "vault-tool" / "write.lock"
        self._lock = WriteLock(self.write_lock_path)
        # Threads of one process queue here before the cross-process file lock.
        self._threads = threading.RLock()
        self.commits.guard.undo_stopped_sync = self._undo_stopped_sync
        # The Markdown files the person's own rules say are not memories (left_out.py).
        self.left_out = LeftOut(root, repo.ignored)

    def close(self) -> None:
        """Stop git's helper processes."""
        self.repo.close()

    # --- opening and creating ------------------------------------------------------------

    @classmethod
    def open(cls, root: Path, *, repair: bool = True) -> Store:
        """Open an existing vault, repairing what a crashed writer left behind."""
        root = config_module.find_vault(root)
        settings = config_module.read_config(root)
        store = cls(root, Git(root, open_repo(root), settings.lock_timeout_seconds), settings)
        store.run_dir.mkdir(parents=True, exist_ok=True)
        store.repo.use_identity_fallback_if_needed()
        with contextlib.suppress(OSError, VaultError):  # (doctor says when it is missing)
            merge_setup.register(store.git, store.repo.git_dir, root)
            diff_setup.register(store.git, store.repo.git_dir, root)
        if repair and store.repairs.look():
            try:
                with store.write_lock():  # repairs (a live sync holds it while its marker is there)
                    pass
            except BaseException:
                store.close()  # or git's helper processes outlive the failed open
                raise
        return store

    @classmethod
    def init(
        cls,
        root: Path,
        readme: str | None = None,
        found: adopt.Found | None = None,
        *,
        nested: bool = False,
    ) -> Store:
        """Make a folder a vault, a new one or a folder of notes in place (adopt.py): found is
        what the folder holds (adopt.existing_files), sorted out here by the folder's rules;
        without a repository of its own, its notes go into the first commit. A folder inside
        another repository is refused unless nested (it would be a repository in a repository),
        or that repository ignores the folder (then it is no part of it)."""
        root = Path(root).resolve()  # (as find_vault: the paths the system reports are)
        if (root / ".vault").exists():
            raise InvalidInput(
                f"{root} is already a vault", hint="use it as it is, or pick a new folder"
            )
        if root.exists() and not root.is_dir():
            raise InvalidInput(f"{root} exists and is not a folder", hint="pick another path")
        clear_git_environment(root)
        fresh = not (root / ".git").exists()
        outer = adopt.enclosing_repository(root) if fresh and not nested else None
        if outer is not None and not adopt.ignored_by(outer, root):
            raise InvalidInput(
                f"{root} is inside the git repository at {outer}: the vault would be a "
                "repository inside that one",
                hint="pick a folder outside it; or pass --nested to make the vault a repository "
                f"of its own there, and add {root.relative_to(outer).as_posix()}/ to "
                f"{outer / '.gitignore'}",
            )
        root.mkdir(parents=True, exist_ok=True)
        repo = adopt.new_repository(root) if fresh else open_repo(root)
        adopt.configure(repo)
        (root / ".vault" / "run").mkdir(parents=True)
        adopt.write_gitignore(root, GITIGNORE)
        write_new(root / ".gitattributes", GITATTRIBUTES)
        write_new(root / config_module.CONFIG_PATH, config_module.new_config(root.name))
        settings = config_module.read_config(root)
        store = cls(root, Git(root, repo, settings.lock_timeout_seconds), settings)
        merge_setup.register(store.git, store.repo.git_dir, root)
        diff_setup.register(store.git, store.repo.git_dir, root)
        if not store.repo.has_identity():
            store.git("config", "user.name", FALLBACK_NAME)
            store.git("config", "user.email", FALLBACK_EMAIL)
        paths = [".gitignore", ".gitattributes", config_module.CONFIG_PATH]
        if readme is not None and not (root / "README.md").exists():
            write_new(root / "README.md", readme)
            paths.append("README.md")
        store.git("add", "--", *paths)
        found = found or adopt.Found()
        left_out = store.left_out.why(found.notes)
        adopt.sort_out(found, root, left_out, commit=fresh)
        if not fresh:  # a person's repository: its staged work stays out of this commit
            store.git("commit", "--quiet", "-m", subject("initialize"), "--", *paths)
            return store
        if found.notes:
            listed = "\0".join(found.notes).encode()
            # Streamed into one pack (git's bulk check-in, for files over the threshold):
            # as loose objects, 10k notes cost a file each, and the commit below would
            # start git's automatic gc in the background to pack and delete them all
            # again (init of 10k notes: 19 s -> 13 s). A file git converts (a person's
            # filter or eol attributes) is stored as git always does.
            add = ["-c", "core.bigFileThreshold=1", "add", "--pathspec-from-file=-"]
            store.repo.run(*add, "--pathspec-file-nul", stdin=listed)
        store.git("commit", "--quiet", "-m", adopt.first_commit_message(found))
        return store

    # --- locking -------------------------------------------------------------------------

    @contextlib.contextmanager
    def write_lock(self, timeout: float | None = None) -> Iterator[None]:
        """The vault-wide writer lock (an OS file lock, released by the kernel if we die)."""
        wait = self.config.lock_timeout_seconds if timeout is None else timeout
        busy = VaultBusy(
            f"another writer held the vault lock for {wait:.0f} s",
            hint="retry in a moment; if it persists, `vault-tool doctor` shows who holds it",
        )
        with stages.stage("lock"):  # (time spent waiting for another writer)
            if not self._threads.acquire(timeout=wait):
                raise busy
        try:
            with stages.stage("lock"):
                if not self._lock.acquire(timeout=wait):
                    raise busy
            try:
                if self._lock.first_taken:  # (not in the middle of the holder's work)
                    self.repairs.run()  # before anyone reads a crashed or failed write's bytes
                yield
            except VersionConflict as conflict:
                # Found while the person's git changed the files (a checkout of an older
                # commit): the memory is only hidden, and the answer is to retry, not re-read.
                busy = self._git_in_the_way()
                if busy is None:
                    raise
                raise busy from conflict
            finally:
                self._lock.release()
        finally:
            self._threads.release()

    def _undo_stopped_sync(self) -> None:
        """Take the write lock if it is free at once, which undoes a dead sync's merge (its
        repairs run at the lock's first taking); a live sync holds it: then nothing."""
        with contextlib.suppress(VaultBusy), self.write_lock(timeout=0):
            pass

    # --- reading -------------------------------------------------------------------------

    def resolve(self, relpath: str) -> Path:
        """The absolute path of a vault-relative path, refusing anything that leaves the vault."""
        if not relpath or relpath.startswith("/") or "\\" in relpath or "\0" in relpath:
            raise InvalidInput(f"path {relpath!r} is not a vault-relative path", hint="use a/b.md")
        if any(part in ("", ".", "..") for part in relpath.split("/")):
            raise InvalidInput(f"path {relpath!r} has empty, . or .. parts", hint="use a/b.md")
        target = self.root / relpath
        # (os.path, not pathlib: every read asks this; the vault's own real path once)
        real_parent = os.path.realpath(os.path.dirname(target))
        if real_parent != self._real_root and not real_parent.startswith(self._real_inside):
            raise InvalidInput(
                f"path {relpath!r} leads out of the vault", hint="remove the symlink"
            )
        if os.path.islink(target):
            raise InvalidInput(
                f"{relpath} is a symlink; memory files must be regular files",
                hint="replace the link with the file it points to",
            )
        return target

    def read_bytes(self, relpath: str) -> bytes | None:
        """A file's bytes, or None if it does not exist; UnparseableFile, unread, if it is
        larger than a memory may be (no file the tool reads this way may be larger)."""
        try:
            with self.resolve(relpath).open("rb") as file:
                size = os.fstat(file.fileno()).st_size
                if size > MAX_FILE_BYTES:
                    raise too_large(relpath, f"{size} bytes")
                data = file.read(MAX_FILE_BYTES + 1)  # (it may grow meanwhile)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if len(data) > MAX_FILE_BYTES:
            raise too_large(relpath, f"more than {MAX_FILE_BYTES} bytes")
        return data

    def read_whole(self, relpath: str) -> Whole | None:
        """A file's bytes and stat, read whole (steady.py: StillWritten while it cannot be
        told); None if it does not exist; UnparseableFile, unread, if it is too large."""
        try:
            return read_whole(self.resolve(relpath))
        except (FileNotFoundError, NotADirectoryError):
            return None
        except TooLarge as large:
            raise too_large(relpath, f"{large.size} bytes") from None

    def iter_memory_paths(self) -> Iterator[tuple[str, os.stat_result]]:
        """Every memory file in the vault with its stat, without following symlinks. A file
        removed between the folder's listing and its stat (a person's checkout, stash or
        clean meanwhile) is left out, as a later listing would leave it."""
        found = [(rel, entry) for rel, entry in files_under(self.root) if may_hold_memory(rel)]
        left_out = self.left_out.why(rel for rel, _ in found)
        for rel, entry in found:
            if rel in left_out:
                continue
            try:
                stat = entry.stat(follow_symlinks=False)
            except (FileNotFoundError, NotADirectoryError):
                continue
            yield rel, stat

    def memory_files(self, relpaths: list[str]) -> list[str]:
        """Of these paths, those that can hold a memory (not left out: left_out.py), in order."""
        candidates = [p for p in relpaths if may_hold_memory(p)]
        left_out = self.left_out.why(candidates)
        return [p for p in candidates if p not in left_out]

    def lists(self, relpath: str) -> bool:
        """Whether iter_memory_paths would list this file now: a regular file, reached
        without a symlink (a link in its place is refused, and dropped from the index)."""
        try:
            if not may_hold_memory(relpath) or self.left_out.holds(relpath):
                return False
            return S_ISREG(os.lstat(self.resolve(relpath)).st_mode)
        except (InvalidInput, OSError):
            return False

    def matches_head(self, relpath: str, data: bytes | None) -> bool:
        """Whether these bytes (None: no file) are what HEAD holds at relpath: the one test
        for "is there an uncommitted change to this file"."""
        return (blob_sha(data) if data is not None else None) == self.head_blob(relpath)

    def pack(self) -> None:
        """Pack git's objects and write the commit-graph that keeps `git log -- PATH` fast."""
        self.git("gc", "--quiet")
        self.git("commit-graph", "write", "--reachable", "--changed-paths")

    def object_counts(self) -> dict[str, int]:
        """git's object counts, as `git count-objects -v` reports them."""
        counts = {}
        for line in self.git("count-objects", "-v").splitlines():
            name, _, value = line.partition(":")
            if value.strip().isdigit():
                counts[name.strip()] = int(value)
        return counts

    def uncommitted_paths(self) -> list[str]:
        """Memory files that differ from HEAD: modified, new (untracked) or deleted."""
        # A look, never a write: without optional locks git's status refreshes the index
        # under index.lock, and a person's git (or our own commit) meanwhile fails on it.
        out = self.git(
            "-c", "core.quotepath=off", "status", "--porcelain=v1", "-z", "-uall", "--no-renames",
            env={"GIT_OPTIONAL_LOCKS": "0"},
        )  # fmt: skip
        paths, nested = [], NestedFolders(self.root)
        for record in out.split("\0"):
            if len(record) > 3 and may_hold_memory(record[3:]) and not nested.holds(record[3:]):
                paths.append(record[3:])
        # (git's status leaves out what git ignores already: only the vault's own rules)
        left_out = self.left_out.why(paths, ask_git=False)
        return [p for p in paths if p not in left_out]

    # --- writing -------------------------------------------------------------------------

    def apply(self, changes: list[Change], message: str, *, author_date: str | None = None) -> str:
        """Write or delete files atomically and commit exactly those paths. Returns the sha.

        The caller holds write_lock(). Nothing is written if a file would hold a secret, or
        if a target no longer holds the bytes its change was planned from (Change.expected).
        If any step fails, the files and the git index are put back as they were and the
        error is raised (changes.py: how, and how a crash or a failed undo is finished).
        """
        self.commits.require_committable({c.path: c.data for c in changes})  # git idle, no markers
        refuse_secrets(changes)
        wait_out_moving_git(self.root)  # (a merge refuses files changed while it runs)
        journal = self._journal_dir / f"{time.time_ns()}-{os.getpid()}.json"
        placing = Placing(self.root, journal, changes, message, self.resolve, self.head_sha)
        committing = False
        try:
            placing.put_in_place()
            committing = True
            # An agent's write is authored by the agent, whoever built the message: its
            # Client trailer names the writer (config.Config.author_for).
            author = self.config.author_for(client_of(message))
            with self.repo.authored(author):
                paths = [c.path for c in changes]
                sha = self.commits.commit(paths, message, author_date=author_date)
            if sha is None:  # the files hold HEAD's bytes again: another program wrote them
                raise VersionConflict(
                    f"{', '.join(c.path for c in changes)} changed on disk while this write "
                    "ran (another program wrote it back: a `git stash`, a checkout, an editor); "
                    "nothing was committed",
                    current_version_id=self.head_sha(),
                    hint="read the memory again (search with memory_id) and retry",
                )
        except BaseException as problem:
            undo_failed = placing.undo(problem)
            if committing:  # (before it, git's index was not touched: a person's staging stays)
                with contextlib.suppress(VaultError):
                    self.git("reset", "--quiet", "--", *[c.path for c in changes])
            if undo_failed is not None:
                raise undo_failed from problem
            reported = failure(problem, placing)  # (a conflict: see write_lock)
            if reported is problem:
                raise
            raise reported from problem
        placing.finish(self.matches_head)
        return sha

    def _git_in_the_way(self) -> VaultBusy | None:
        """Why a write refused as a version conflict should be retried rather than read
        again: the person's git (a checkout, a stash, a merge) changed the folder while it
        ran and is still at it, or left HEAD where the vault commits nothing."""
        if running := moving_git(self.root):
            return VaultBusy(
                f"`{git_command(running[0])}` changed the vault's files while this write ran; "
                "nothing was changed",
                hint="retry once it has finished",
            )
        try:
            self.commits.require_committable()
        except VaultBusy as busy:
            return busy
        return None

    def commit_paths(
        self, paths: list[str], message: str, *, snapshot: Snapshot | None = None
    ) -> str | None:
        """Commit files already on disk (hand edits); the sha, or None if nothing changed.

        With a snapshot (path -> the bytes the caller checked, None for gone), exactly those
        bytes are committed even if a person saves the file again meanwhile.
        """
        self.commits.require_committable()  # before any file is touched: git must not be busy
        files = snapshot if snapshot is not None else {p: self.read_bytes(p) for p in paths}
        changed = [p for p in paths if not self.matches_head(p, files.get(p))]
        # A file made and removed again before any commit may still be staged (a commit
        # interrupted after its `git add`): unstage it, or `git status` never comes clean.
        gone = [p for p in paths if files.get(p) is None and p not in changed]
        if gone:
            self.git("rm", "--cached", "--quiet", "--ignore-unmatch", "--", *gone)
        if not changed:
            return None
        new = [
            (p, self.root / p, temp_path(self.root / p), data)
            for p in changed
            if (data := files.get(p)) is not None and self.head_blob(p) is None
        ]
        sha = self.commits.commit(changed, message, snapshot=snapshot)
        # A person's new note a `git clean` removed as the commit put it in git's index
        # (changes.py wait_out_cleans): put back as committed, or the watcher commits the
        # removal. Only when a clean ran: otherwise the person removed it, and that stands.
        if sha and new and wait_out_cleans(self.root):
            put_back_removed(new, self.matches_head)
        return sha
