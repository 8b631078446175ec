"""Finishing what crashed writers left: journals of writes, failed undos, a killed sync's
merge (sync_merge.py), HEAD's and the branch's lock files (refs.py) when no git works in
the vault.

A write whose files all reached the disk is committed with its own message, one cut short
is undone whole from its kept old versions (never committed in part). All of it runs under
the write lock, at the first lock taken after the vault is opened. A killed sync's merge is
also looked for at every lock taken after that (one stat): a sync may die while this
process has the vault open, and its merge must not keep git busy until a restart.

While a person's git is busy (a checkout left HEAD detached, a merge or a rebase stopped),
a repair commit would land where that git throws it away, so the repair waits: the vault
opens all the same (searches answer from the index; writes say git is busy), and the first
write lock taken once git is free repairs before anything else runs under it. The watcher
takes nothing in meanwhile, so the interrupted write keeps its own message.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from vault_tool.core.changelog import memories, subject
from vault_tool.errors import VaultBusy, VaultError
from vault_tool.storage import sync_merge
from vault_tool.storage.changes import UNDO_SUFFIX, blob_at, finish_undo, is_undo_journal
from vault_tool.storage.commits import Committer
from vault_tool.storage.git import Git
from vault_tool.storage.processes import git_processes
from vault_tool.storage.repo_state import SYNC_RECORD

log = logging.getLogger(__name__)


class Repaired(Protocol):
    """What a repair needs of the store it repairs (store.py)."""

    root: Path
    run_dir: Path
    repo: Git
    commits: Committer
    git: Callable[..., str]
    head_blob: Callable[[str], str | None]

    def read_bytes(self, relpath: str) -> bytes | None: ...
    def commit_paths(self, paths: list[str], message: str) -> str | None: ...


class Repairs:
    """The repairs one open store owes: asked for at open, run under the write lock."""

    def __init__(self, store: Repaired) -> None:
        self.store = store
        self.journal_dir = store.run_dir / "journal"
        self.pending = False
        self._said_busy = False
        self._stale_locks: dict[Path, tuple[int, int]] = {}

    def look(self) -> bool:
        """Whether a crashed writer or sync left something to repair; marks it pending."""
        store = self.store
        journals = self.journal_dir.is_dir() and any(self.journal_dir.iterdir())
        syncing = (store.repo.git_dir / SYNC_RECORD).exists()
        self._stale_locks = _branch_locks(store.repo.git_dir)
        if self._stale_locks and git_processes(store.root):
            self._stale_locks = {}  # (a live git's: git.py waits it out)
        self.pending = self.pending or journals or syncing or store.commits.index_behind()
        self.pending = self.pending or bool(self._stale_locks)
        return self.pending

    def run(self) -> None:
        """Finish failed undos, then (if pending and git is free) the rest. The caller
        holds the write lock."""
        self.finish_failed_undos()  # before anyone reads a failed write's bytes
        store = self.store
        if not self.pending and not (store.repo.git_dir / SYNC_RECORD).exists():
            return
        self._remove_stale_locks()
        try:
            # (its merge made git busy: undone first; under the lock, its sync is dead)
            sync_merge.undo(store.root, store.repo.git_dir, store.git)
            store.commits.guard.require_idle()
            store.commits.bring_index_up()
            self.commit_journals()
        except VaultBusy as busy:
            if not self._said_busy:
                log.warning("an interrupted write waits for git to be free: %s", busy)
                self._said_busy = True
            return
        self.pending = False

    def _remove_stale_locks(self) -> None:
        """Remove HEAD's and the branches' lock files a killed git or writer left (found at
        open with no git working in the vault, and still the same files): without this the
        next write would wait for git.py's stale-lock rule first."""
        stale, self._stale_locks = self._stale_locks, {}
        if not stale or git_processes(self.store.root):
            return
        now = _branch_locks(self.store.repo.git_dir)
        for path, key in stale.items():
            if now.get(path) == key:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                log.warning("removed %s, which a killed git or writer left", path.name)

    def commit_journals(self) -> None:
        """Commit or undo each interrupted write.

        Temp files are removed; a file holding neither version was edited by a person and
        is left alone. A journal is removed only once its write is finished, so a repair
        that fails half-way (git busy again) is taken up again whole.
        """
        store = self.store
        for journal in sorted(self.journal_dir.glob("*.json")):
            if is_undo_journal(journal):
                continue  # its undo failed again: the next write lock tries again
            try:
                record = json.loads(journal.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                # The crash hit while the journal itself was written: no file was touched yet.
                journal.unlink(missing_ok=True)
                continue
            entries = record["entries"]
            done = [self._holds(entry["path"], entry["blob"]) for entry in entries]
            if not all(done) and all(entry.get("keep") for entry in entries):
                # A write of several files cut short: undone whole, never committed in part.
                finish_undo(store.root, record, store.read_bytes)
                journal.unlink(missing_ok=True)
                continue
            to_commit, titles = [], []
            for entry, holds in zip(entries, done, strict=True):
                if holds and store.head_blob(entry["path"]) != entry["blob"]:
                    to_commit.append(entry["path"])
                    titles.append(entry["title"] or entry["path"])
            if to_commit:
                what = titles[0] if len(titles) == 1 else memories(len(titles))
                trailers = (
                    record["message"].split("\n\n", 1)[1] if "\n\n" in record["message"] else ""
                )
                sha = store.commit_paths(to_commit, f"{subject('repair', what=what)}\n\n{trailers}")
                if sha:
                    log.warning("repaired an interrupted write: %s (%s)", what, sha[:10])
            for entry in entries:
                (store.root / entry["tmp"]).unlink(missing_ok=True)
                if entry.get("keep"):
                    (store.root / entry["keep"]).unlink(missing_ok=True)
            journal.unlink(missing_ok=True)

    def _holds(self, relpath: str, blob: str | None) -> bool:
        """Whether the file at relpath has this blob (None: there is no file)."""
        return blob_at(self.store.read_bytes, relpath) == blob

    def finish_failed_undos(self) -> None:
        """Undo what failed writes could not undo themselves (their undo journals). Tried
        again at every write lock until it works."""
        store = self.store
        for journal in sorted(self.journal_dir.glob(f"*{UNDO_SUFFIX}")):
            try:
                record = json.loads(journal.read_text(encoding="utf-8"))
                finish_undo(store.root, record, store.read_bytes)
            except ValueError:
                journal.unlink(missing_ok=True)
                continue
            except OSError as problem:
                log.warning("could not finish undoing a failed write yet: %s", problem)
                continue
            paths = [entry["path"] for entry in record["entries"]]
            with contextlib.suppress(VaultError):
                store.git("reset", "--quiet", "--", *paths)
            journal.unlink(missing_ok=True)


def _branch_locks(git_dir: Path) -> dict[Path, tuple[int, int]]:
    """HEAD's and the branches' lock files (refs.py and git take them), by inode and mtime."""
    found = {}
    for path in [git_dir / "HEAD.lock", *(git_dir / "refs" / "heads").rglob("*.lock")]:
        with contextlib.suppress(OSError):
            stat = path.stat()
            found[path] = (stat.st_ino, stat.st_mtime_ns)
    return found
