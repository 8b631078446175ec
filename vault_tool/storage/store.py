"""The vault folder on top of its repository: atomic writes, the vault lock, crash repair.

Every change to memory files goes through Store.apply(): journal -> temp file -> fsync ->
rename -> stage only the touched paths -> commit -> confirm. A crash anywhere leaves either
the old state or a renamed-but-uncommitted file that the next open() commits (repair).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vault_tool.errors import InvalidInput, VaultBusy, VaultError, VaultUnavailable
from vault_tool.storage import config as config_module
from vault_tool.storage.git import (
    FALLBACK_EMAIL,
    FALLBACK_NAME,
    Repository,
    blob_sha,
    clear_git_environment,
    open_repo,
)
from vault_tool.storage.trees import NotATree

log = logging.getLogger(__name__)

GITIGNORE = """\
# Machine-local state of vault-tool: rebuildable caches, locks, logs, the retrieval ledger.
.vault/index/
.vault/run/
.vault/ledger/
# Temporary files of interrupted writes (removed on the next start).
.*.vault-tmp-*
"""
GITATTRIBUTES = """\
# Store every file byte for byte, so a file's blob id tells at once whether it changed.
* -text
"""
TMP_MARKER = ".vault-tmp-"


@dataclass(frozen=True)
class Change:
    """One path to write (data) or delete (data is None), with a title for messages."""

    path: str
    data: bytes | None
    title: str = ""


def is_memory_path(relpath: str) -> bool:
    """Whether a vault-relative path can hold a memory (not .git, .vault, dotfiles, backups)."""
    parts = relpath.split("/")
    name = parts[-1]
    if not name.endswith(".md") or relpath == "README.md":
        return False
    if any(p.startswith(".") or not p for p in parts):
        return False
    # Editor artefacts: emacs autosave (#x.md#), backups (x.md~), vim/jetbrains temp names.
    return not (name.startswith("#") or name.startswith("~") or name.endswith("~"))


class Store(Repository):
    """One vault folder and its repository. Open with Store.open(); close() on shutdown."""

    def __init__(self, root: Path, repo: Any, settings: config_module.Config) -> None:
        run_dir = root / ".vault" / "run"
        super().__init__(root, repo, settings.lock_timeout_seconds, run_dir / "index-pending")
        self.config = settings
        self.run_dir = run_dir
        self._journal_dir = self.run_dir / "journal"
        self._lock: Any = None
        # Threads of one process queue here before the cross-process file lock.
        self._threads = threading.RLock()

    # --- opening and creating ------------------------------------------------------------

    @classmethod
    def open(cls, root: Path, *, repair: bool = True) -> Store:
        """Open an existing vault, repairing what a crashed writer left behind."""
        root = Path(root).absolute()
        if not (root / ".git").exists() or not (root / ".vault").is_dir():
            raise VaultUnavailable(
                f"no vault at {root}",
                hint="create one with `vault-tool init PATH`, or point --vault / "
                f"${config_module.ENV_VAR} at an existing vault",
            )
        store = cls(root, open_repo(root), config_module.read_config(root))
        store.run_dir.mkdir(parents=True, exist_ok=True)
        store._use_identity_fallback_if_needed()
        journals = store._journal_dir.is_dir() and any(store._journal_dir.iterdir())
        if repair and (journals or store.index_behind()):
            try:
                with store.write_lock():
                    store.bring_index_up()
                    store.repair()
            except BaseException:
                store.close()  # or git's helper processes outlive the failed open
                raise
        return store

    @classmethod
    def init(cls, root: Path, readme: str | None = None) -> Store:
        """Make a new vault: folder, git repository, settings, and the first commit."""
        root = Path(root).absolute()
        if (root / ".vault").exists():
            raise InvalidInput(
                f"{root} is already a vault", hint="use it as it is, or pick a new folder"
            )
        if root.exists() and not root.is_dir():
            raise InvalidInput(f"{root} exists and is not a folder", hint="pick another path")
        root.mkdir(parents=True, exist_ok=True)
        clear_git_environment(root)
        import git

        if (root / ".git").exists():
            repo = open_repo(root)
        else:
            repo = git.Repo.init(root, initial_branch="main")
        writer = repo.config_writer()
        try:
            # Durable commits, and a commit-graph that keeps `git log -- path` fast on big vaults.
            writer.set_value("core", "fsync", "committed")
            writer.set_value("core", "commitGraph", "true")
            writer.set_value("gc", "writeCommitGraph", "true")
        finally:
            writer.release()
        (root / ".vault" / "run").mkdir(parents=True)
        _write_new(root / ".gitignore", GITIGNORE)
        _write_new(root / ".gitattributes", GITATTRIBUTES)
        _write_new(root / config_module.CONFIG_PATH, config_module.DEFAULT_CONFIG)
        store = cls(root, repo, config_module.read_config(root))
        if not store._has_identity():
            store.git("config", "user.name", FALLBACK_NAME)
            store.git("config", "user.email", FALLBACK_EMAIL)
        paths = [".gitignore", ".gitattributes", config_module.CONFIG_PATH]
        if readme is not None and not (root / "README.md").exists():
            _write_new(root / "README.md", readme)
            paths.append("README.md")
        store.git("add", "--", *paths)
        store.git("commit", "--quiet", "-m", "Initialize vault", "--", *paths)
        return store

    # --- locking -------------------------------------------------------------------------

    @contextlib.contextmanager
    def write_lock(self, timeout: float | None = None) -> Iterator[None]:
        """The vault-wide writer lock (an OS file lock, released by the kernel if we die)."""
        from filelock import FileLock, Timeout

        if self._lock is None:
            self._lock = FileLock(str(self.run_dir / "write.lock"))
        wait = self.config.lock_timeout_seconds if timeout is None else timeout
        busy = VaultBusy(
            f"another writer held the vault lock for {wait:.0f} s",
            hint="retry in a moment; if it persists, `vault-tool doctor` shows who holds it",
        )
        if not self._threads.acquire(timeout=wait):
            raise busy
        try:
            try:
                self._lock.acquire(timeout=wait)
            except Timeout:
                raise busy from None
            try:
                yield
            finally:
                self._lock.release()
        finally:
            self._threads.release()

    # --- reading -------------------------------------------------------------------------

    def resolve(self, relpath: str) -> Path:
        """The absolute path of a vault-relative path, refusing anything that leaves the vault."""
        if not relpath or relpath.startswith("/") or "\\" in relpath or "\0" in relpath:
            raise InvalidInput(f"path {relpath!r} is not a vault-relative path", hint="use a/b.md")
        if any(part in ("", ".", "..") for part in relpath.split("/")):
            raise InvalidInput(f"path {relpath!r} has empty, . or .. parts", hint="use a/b.md")
        target = self.root / relpath
        real_parent = target.parent.resolve()
        if not real_parent.is_relative_to(self.root.resolve()):
            raise InvalidInput(
                f"path {relpath!r} leads out of the vault", hint="remove the symlink"
            )
        if target.is_symlink():
            raise InvalidInput(
                f"{relpath} is a symlink; memory files must be regular files",
                hint="replace the link with the file it points to",
            )
        return target

    def read_bytes(self, relpath: str) -> bytes | None:
        """A file's bytes, or None if it does not exist."""
        try:
            return self.resolve(relpath).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None

    def iter_memory_paths(self) -> Iterator[tuple[str, os.stat_result]]:
        """Every memory file in the vault with its stat, without following symlinks."""
        stack = [self.root]
        while stack:
            folder = stack.pop()
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                if entry.name.startswith(".") or entry.is_symlink():
                    continue
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                    continue
                if not entry.is_file(follow_symlinks=False):
                    continue  # a FIFO or a device: reading it could block for ever
                rel = Path(entry.path).relative_to(self.root).as_posix()
                if is_memory_path(rel):
                    yield rel, entry.stat(follow_symlinks=False)

    def uncommitted_paths(self) -> list[str]:
        """Memory files that differ from HEAD: modified, new (untracked) or deleted."""
        out = self.git(
            "-c", "core.quotepath=off", "status", "--porcelain=v1", "-z", "-uall", "--no-renames"
        )
        paths = []
        for record in out.split("\0"):
            if len(record) > 3 and is_memory_path(record[3:]):
                paths.append(record[3:])
        return paths

    # --- writing -------------------------------------------------------------------------

    def apply(self, changes: list[Change], message: str, *, author_date: str | None = None) -> str:
        """Write or delete files atomically and commit exactly those paths. Returns the sha.

        The caller holds write_lock(). If any step fails, the files and the git index are
        put back as they were and the error is raised.
        """
        journal = self._journal_dir / f"{time.time_ns()}-{os.getpid()}.json"
        staged: list[tuple[Change, Path, bytes | None]] = []
        self._journal_dir.mkdir(parents=True, exist_ok=True)
        entries = []
        for change in changes:
            target = self.resolve(change.path)
            tmp = target.with_name(f".{target.name}{TMP_MARKER}{secrets.token_hex(4)}")
            entries.append(
                {
                    "path": change.path,
                    "tmp": tmp.relative_to(self.root).as_posix(),
                    "blob": blob_sha(change.data) if change.data is not None else None,
                    "title": change.title,
                }
            )
        _durable_write(journal, json.dumps({"message": message, "entries": entries}).encode())
        try:
            for change, entry in zip(changes, entries, strict=True):
                target = self.root / change.path
                old = target.read_bytes() if target.exists() else None
                staged.append((change, target, old))
                if change.data is None:
                    if old is not None:
                        target.unlink()
                        _fsync_dir(target.parent)
                else:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    tmp = self.root / entry["tmp"]
                    _durable_write(tmp, change.data)
                    os.replace(tmp, target)
                    _fsync_dir(target.parent)
            sha = self.commit_written([c.path for c in changes], message, author_date)
            if sha is None:
                raise VaultError(
                    "git reported success but made no commit", hint="run `vault-tool doctor`"
                )
        except BaseException:
            self._roll_back(staged, entries)
            journal.unlink(missing_ok=True)
            raise
        journal.unlink(missing_ok=True)
        return sha

    def commit_paths(
        self, paths: list[str], message: str, *, snapshot: dict[str, bytes | None] | None = None
    ) -> str | None:
        """Commit files already on disk (hand edits); the sha, or None if nothing changed.

        With a snapshot (path -> the bytes the caller checked, None for gone), exactly those
        bytes are committed even if a person saves the file again meanwhile (through
        `git commit`, git reads them from a scratch work tree instead of the vault).
        """
        files = snapshot if snapshot is not None else {p: self.read_bytes(p) for p in paths}
        changed = [p for p in paths if _blob_or_none(files.get(p)) != self.head_blob(p)]
        # A file made and removed again before any commit may still be staged (a commit
        # interrupted after its `git add`): unstage it, or `git status` never comes clean.
        gone = [p for p in paths if files.get(p) is None and p not in changed]
        if gone:
            self.git("rm", "--cached", "--quiet", "--ignore-unmatch", "--", *gone)
        if not changed:
            return None
        if self.plumbing_allowed():
            try:
                return self.commit_trees(changed, message, None, snapshot)
            except NotATree:
                pass  # a path runs through a file in HEAD: `git commit` sorts that out
        before = self._head_or_none()
        with self._work_tree(files if snapshot is not None else None) as tree:
            new = [p for p in changed if files.get(p) is not None and self.head_blob(p) is None]
            if new:
                self.git(*tree, "add", "--intent-to-add", "--", *new)
            self._commit(message, changed, None, tree)
        sha = self.head_sha()
        return sha if sha != before else None

    @contextlib.contextmanager
    def _work_tree(self, files: dict[str, bytes | None] | None) -> Iterator[list[str]]:
        """git options that read these files from a scratch folder (none: from the vault)."""
        if files is None:
            yield []
            return
        folder = self.run_dir / f"snapshot-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            for path, data in files.items():
                if data is not None:
                    (folder / path).parent.mkdir(parents=True, exist_ok=True)
                    (folder / path).write_bytes(data)
            folder.mkdir(parents=True, exist_ok=True)
            yield ["--work-tree", str(folder)]
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def repair(self) -> list[str]:
        """Finish or discard what crashed writers left; returns the shas of repair commits.

        A file that was renamed into place is committed; a temp file is removed; a path
        whose bytes are neither the old nor the new version was edited by a person and
        is left alone. The caller holds write_lock().
        """
        made = []
        for journal in sorted(self._journal_dir.glob("*.json")):
            try:
                record = json.loads(journal.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                # The crash hit while the journal itself was written: no file was touched yet.
                journal.unlink(missing_ok=True)
                continue
            to_commit, titles = [], []
            for entry in record["entries"]:
                (self.root / entry["tmp"]).unlink(missing_ok=True)
                data = self.read_bytes(entry["path"])
                disk = blob_sha(data) if data is not None else None
                head = self.head_blob(entry["path"])
                if disk == entry["blob"] and head != disk:
                    to_commit.append(entry["path"])
                    titles.append(entry["title"] or entry["path"])
            if to_commit:
                what = titles[0] if len(titles) == 1 else f"{len(titles)} memories"
                trailers = (
                    record["message"].split("\n\n", 1)[1] if "\n\n" in record["message"] else ""
                )
                message = f"Repair: commit interrupted write of {what}\n\n{trailers}"
                sha = self.commit_paths(to_commit, message)
                if sha:
                    made.append(sha)
                    log.warning("repaired an interrupted write: %s (%s)", what, sha[:10])
            journal.unlink(missing_ok=True)
        return made

    def _roll_back(
        self, staged: list[tuple[Change, Path, bytes | None]], entries: list[dict]
    ) -> None:
        for change, target, old in reversed(staged):
            with contextlib.suppress(OSError):
                if old is None:
                    target.unlink(missing_ok=True)
                    _remove_empty_folders(target.parent, self.root)
                else:
                    tmp = target.with_name(f".{target.name}{TMP_MARKER}{secrets.token_hex(4)}")
                    _durable_write(tmp, old)
                    os.replace(tmp, target)
            log.info("rolled back %s", change.path)
        for entry in entries:
            (self.root / entry["tmp"]).unlink(missing_ok=True)
        if staged:
            with contextlib.suppress(VaultError):
                self.git("reset", "--quiet", "--", *[c.path for c, _, _ in staged])


def _blob_or_none(data: bytes | None) -> str | None:
    return blob_sha(data) if data is not None else None


def _remove_empty_folders(folder: Path, root: Path) -> None:
    """Remove folder and its parents up to root while they are empty (undoing a mkdir)."""
    while folder != root and root in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def _durable_write(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data) if len(data) < 2**30 else None
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_new(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        path.write_text(text, encoding="utf-8", newline="\n")
