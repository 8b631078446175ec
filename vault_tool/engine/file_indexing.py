"""Reading memory files into the index: each one read whole, parsed, checked, added.

A file that does not parse (or holds a secret, committed or not) is not indexed: its last
good version stays searchable and the problem is recorded for `vault-tool doctor`. A file
being written as it is read (storage/steady.py) is read once more a tick later, then left
for the next look. Catch-up and reindex (intake.py) decide which files; this reads them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from vault_tool.core import redact
from vault_tool.core.memory import UTF8_HINT
from vault_tool.engine.hand_edits import (
    SECRET,
    Committed,
    merge_flag,
    parse_memory,
    secret_problem,
)
from vault_tool.errors import InvalidInput, UnparseableFile
from vault_tool.search.documents import document_for
from vault_tool.search.index import Index
from vault_tool.storage import problems as recorded
from vault_tool.storage.git import blob_sha
from vault_tool.storage.steady import RACY_SECONDS, StillWritten
from vault_tool.storage.store import Store
from vault_tool.storage.versions import LastChange

Progress = Callable[[int, int], None]
# From this many files on, indexing runs in a second process beside the parsing.
BULK_DOCUMENTS = 2000


@dataclass
class SyncReport:
    """What a catch-up with the folder found and did."""

    indexed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    problems: dict[str, dict[str, Any]] = field(default_factory=dict)
    unchanged: int = 0
    kept: dict[str, str] = field(default_factory=dict)  # path -> why: refused, problem, secret
    # Indexed, and flagged: a merge committed their bodies with conflict markers.
    flagged: dict[str, dict[str, Any]] = field(default_factory=dict)
    commits: list[Committed] = field(default_factory=list)
    changing: list[str] = field(default_factory=list)  # being written as they were read


class FileIndexer:
    """Reads files of one open vault into its index."""

    def __init__(self, store: Store, index: Index) -> None:
        self.store = store
        self.index = index

    def index_paths(
        self,
        paths: list[str],
        removed: list[str],
        report: SyncReport | None = None,
        progress: Progress | None = None,
        unindexed: set[str] | frozenset[str] = frozenset(),
    ) -> SyncReport:
        """Re-read and index these files; a file that does not parse keeps its last good version.

        Paths in `unindexed` are known to have no document yet, which spares Whoosh the
        lookup of an old one (a third of a full reindex).
        """
        report = report or SyncReport()
        self.store.commits.own.forget([*paths, *removed])  # indexed here, as they are now
        problems = recorded.load(self.store.run_dir)
        bulk = len(paths) >= BULK_DOCUMENTS and (os.cpu_count() or 1) > 1
        with self.store.write_lock(), self.index.writer(bulk=bulk) as writer:
            # Asked again under the lock: a file made since the caller looked (a write, a
            # watcher's sync) is indexed by now and must not be added a second time, and a
            # file removed then may be back.
            unindexed = self.index.unindexed(writer, unindexed)
            back = [p for p in removed if self.store.lists(p)]  # (indexed as it is now)
            removed, paths = [p for p in removed if p not in back], [*paths, *back]
            # Versions are read under the lock: a writer that was mid-way has committed.
            committed = self.store.head_blobs() if paths else {}
            changes = self.changes_of(set(paths), committed)
            head = self.store.head_sha() if paths else ""
            for path in removed:
                writer.delete_by_term("path", path)
                problems.pop(path, None)
            batch = _Batch(writer, report, problems, committed, changes, head, unindexed)
            changing = []
            for n, path in enumerate(paths, 1):
                if progress:
                    progress(n, len(paths))
                if not self._index_file(path, batch):
                    changing.append(path)
            if changing:  # once more, a tick later; what still changes waits for the next look
                time.sleep(RACY_SECONDS)
                report.changing = [p for p in changing if not self._index_file(p, batch)]
        problems.update(report.problems)
        problems.update(report.flagged)
        recorded.save(self.store.run_dir, problems)
        return report

    def _index_file(self, path: str, batch: _Batch) -> bool:
        """Index one file, or record why not; False if it was being written as it was read."""
        report = batch.report
        try:
            whole = self.store.read_whole(path)
            if whole is None:
                return True
            data, stat = whole.data, whole.stat
            memory = parse_memory(data, path, committed=self.store.matches_head)
        except StillWritten:
            return False
        except UnicodeDecodeError as problem:
            report.problems[redact.redact_name(path)] = recorded.entry(
                None, f"not UTF-8 text ({problem.reason})", UTF8_HINT
            )
            return True
        except UnparseableFile as problem:  # (its name too: a secret in it is never written out)
            entry = recorded.entry(problem.line, problem.reason, problem.hint)
            report.problems[redact.redact_name(path)] = entry
            return True
        except (OSError, InvalidInput):
            return True  # gone, unreadable or a symlink since the listing: the next look sees it
        # No search may serve a secret: a file that differs from git's is neither committed
        # nor indexed (hand_edits.py), and one git holds already (a person's own commit, or
        # history from before the folder became a vault) is not indexed either, and is
        # named with how to purge it. Its last good version, if any, stays searchable.
        blob = blob_sha(data)
        committed = blob == batch.committed.get(path)
        if secret := secret_problem(data, in_git=committed):
            report.problems[path] = secret
            report.kept[path] = SECRET
            return True
        batch.problems.pop(path, None)
        if flag := merge_flag(data):
            report.flagged[path] = flag
        add = batch.writer.add_document if path in batch.unindexed else batch.writer.update_document
        change = batch.changes.get(path)
        add(**document_for(
            memory, path, version_id=change.sha if change else batch.head, blob=blob,
            mtime_ns=stat.st_mtime_ns, size=stat.st_size,
            changed=changed_at(change, stat, path in batch.committed, committed),
        ))  # fmt: skip
        report.indexed.append(path)
        return True

    def versions_of(
        self, paths: set[str], committed: dict[str, str] | None = None
    ) -> dict[str, str]:
        """path -> last commit that changed it; files git has never seen are left out.

        A file that was never committed has no version of its own: it reports HEAD.
        committed: HEAD's blobs, when the caller has read them already (one `git ls-tree`).
        """
        return {path: c.sha for path, c in self.changes_of(paths, committed).items()}

    def changes_of(
        self, paths: set[str], committed: dict[str, str] | None = None
    ) -> dict[str, LastChange]:
        """path -> the last commit that changed it, with its time (as versions_of)."""
        if not paths:
            return {}
        tracked = paths & set(self.store.head_blobs() if committed is None else committed)
        return self.store.last_changes(tracked)


def changed_at(
    change: LastChange | None, stat: os.stat_result, tracked: bool, committed: bool
) -> int | None:
    """When a file's bytes were made, if not at its `updated` (document_for's changed): an
    uncommitted edit of a committed file at its mtime; committed bytes at their commit's
    time, unless that commit stated it (it added the file, or kept `updated` on purpose)."""
    if not committed:
        return stat.st_mtime_ns // 1_000_000_000 if tracked else None
    return None if change is None or change.states_time else change.time


@dataclass(frozen=True)
class _Batch:
    """What index_paths read once, under the lock, for every file it indexes."""

    writer: Any
    report: SyncReport
    problems: dict[str, dict[str, Any]]
    committed: dict[str, str]  # HEAD's blobs
    changes: dict[str, LastChange]
    head: str
    unindexed: set[str] | frozenset[str]
