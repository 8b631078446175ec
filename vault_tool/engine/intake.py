"""Keeping the index in step with the folder: catch-up, reindex, and hand edits.

The watcher and the start-up of every long-lived process feed changed paths here; which
files to read is decided here, and file_indexing.py reads them into the index. A file
that does not parse (or holds a secret) is neither indexed nor committed: its last good
version stays searchable and the problem is recorded for `vault-tool doctor`. A memory a
merge committed with conflict markers in its body is indexed as it is, and flagged
(hand_edits.merge_flag) until its markers are gone.
"""

from __future__ import annotations

import contextlib
import time
from stat import S_ISREG
from typing import Any

from vault_tool.core.redact import redact_name
from vault_tool.engine.file_indexing import FileIndexer, Progress, SyncReport, changed_at
from vault_tool.engine.hand_edits import (
    CHANGING,
    PROBLEM,
    Checked,
    HandEdits,
    Kept,
    stat_or_none,
)
from vault_tool.errors import InvalidInput, VaultError
from vault_tool.search.documents import document_for
from vault_tool.search.index import Index
from vault_tool.search.recent import SOFT_DOCUMENTS
from vault_tool.storage import problems as recorded
from vault_tool.storage.durable import replace_text
from vault_tool.storage.git import blob_sha
from vault_tool.storage.repo_state import NestedFolders, read_state
from vault_tool.storage.steady import RACY_SECONDS
from vault_tool.storage.store import Store

# How many times a file being written as it is read is read, RACY_SECONDS apart (~0.2 s).
STEADY_TRIES = 10
# In the index folder: the HEAD the last catch-up saw (deleted with the index it describes).
HEAD_RECORD = "git-head"


class Intake:
    """Reads the folder into the index, and commits hand edits, for one open vault."""

    def __init__(self, store: Store, index: Index) -> None:
        self.store = store
        self.index = index
        self.root = store.root
        self.hand_edits = HandEdits(store, index)
        self.files = FileIndexer(store, index)
        # True while a catch-up has found changes it has not indexed yet: searches say so then,
        # and only then (a scan that finds nothing to do is not worth a note).
        self.pending = False

    def catch_up(self, progress: Progress | None = None) -> SyncReport:
        """Index what changed in the folder since the index last saw it; never rewrites files.

        Nothing while git is half-way through a merge, a rebase, a cherry-pick or a revert
        (repo_state.py): the folder then holds its work in progress, read by the next
        catch-up after it. A checkout of an older commit is indexed as it is.
        """
        report = SyncReport()
        if read_state(self.store.repo.git_dir).applying:
            return report
        head = self.store.head_sha()
        was_pending = self.pending
        try:
            return self._caught_up(head, report, progress)
        finally:
            self.pending = was_pending

    def _caught_up(self, head: str, report: SyncReport, progress: Progress | None) -> SyncReport:
        known = self.index.states()
        on_disk = dict(self.store.iter_memory_paths())
        changed = [
            p
            for p, st in on_disk.items()
            if known.get(p, (None, None))[:2] != (st.st_mtime_ns, st.st_size)
        ]
        recommitted = self._committed_since_last_catch_up(
            head, set(known) & set(on_disk) - set(changed)
        )
        report.unchanged = len(on_disk) - len(changed) - len(recommitted)
        report.removed = sorted(set(known) - set(on_disk))
        self._forget_left_out_problems()
        # Searches say so while this is indexed, unless all of it is what this process wrote
        # (and indexed) while the scan ran.
        self.pending = bool(recommitted) or self._any_stale([*changed, *report.removed])
        changed += recommitted
        if changed or report.removed:
            unindexed = set(changed) - set(known)
            self.files.index_paths(changed, report.removed, report, progress, unindexed=unindexed)
        with contextlib.suppress(OSError):  # without it, the next catch-up checks more
            replace_text(self.index.dir / HEAD_RECORD, head)
        return report

    def _forget_left_out_problems(self) -> None:
        """Drop the recorded problems of files the folder's rules now leave out (a template
        that never parsed, before its folder was named): they are no memories at all."""
        problems = recorded.load(self.store.run_dir)
        left_out = self.store.left_out.why(list(problems)) if problems else {}
        if left_out:
            kept = {p: entry for p, entry in problems.items() if p not in left_out}
            recorded.save(self.store.run_dir, kept)

    def _any_stale(self, paths: list[str]) -> bool:
        """Whether the index holds another version of any of these files than the folder.

        Asked under the write lock, so that a write of this process half-way through (its
        file renamed in, the index not updated yet) is not taken for a change to catch up on.
        """
        if not paths:
            return False
        # A file a problem keeps out of the index (a secret, broken front matter) is no
        # change to catch up on: else every catch-up would read as behind while it runs,
        # and a read of an id it does not hold would answer "retry" instead of "no memory".
        kept_out = recorded.load(self.store.run_dir)
        with self.store.write_lock():
            for path in paths:
                stat, indexed = stat_or_none(self.root / path), self.index.by_path(path)
                if indexed is None and path in kept_out:
                    continue
                if stat is None and indexed is not None:
                    return True
                seen = None if stat is None else (stat.st_mtime_ns, stat.st_size)
                if stat is not None and (
                    indexed is None or (indexed.mtime_ns, indexed.size) != seen
                ):
                    return True
        return False

    def filled(self) -> bool:
        """Whether a catch-up has read the whole folder into this index since it was made.

        An index is made empty (the first open after `git clean -xfd` removed it, a rebuild,
        a reindex) and then filled by that process's catch-up; until then every process's
        miss means "not read yet", not "gone"."""
        return (self.index.dir / HEAD_RECORD).exists()

    def _committed_since_last_catch_up(self, head: str, candidates: set[str]) -> list[str]:
        """Indexed files whose bytes did not change but whose version did.

        A file indexed while uncommitted carries the HEAD of that moment as its version;
        when it is then committed without a byte changing (a person's own `git commit`, or
        a watcher killed between its commit and its index update), its mtime and size say
        nothing. So every file git changed since the last catch-up has its version checked.
        """
        try:
            last = (self.index.dir / HEAD_RECORD).read_text().strip()
        except OSError:
            last = ""  # a new or pre-existing index: check every file once
        if last == head or not candidates:
            return []
        if last:
            try:
                out = self.store.git(
                    "-c", "core.quotepath=off", "diff", "--name-only", "-z", "--no-renames",
                    last, head,
                )  # fmt: skip
                candidates &= set(out.split("\0"))
            except VaultError:
                pass  # the old HEAD is gone (a reset and a gc): check every file
        if not candidates:
            return []
        with self.index.searcher() as searcher:
            indexed = {
                f["path"]: f["version_id"]
                for f in searcher.all_stored_fields()
                if f["path"] in candidates
            }
        versions = self.files.versions_of(candidates)
        return sorted(p for p, v in indexed.items() if p in versions and versions[p] != v)

    def reindex(self, progress: Progress | None = None) -> SyncReport:
        """Rebuild the index from the files (refused while catch_up would skip them)."""
        state = read_state(self.store.repo.git_dir)
        if state.applying:
            raise state.refusal(self.store.repo.git_dir)
        with self.store.write_lock():
            self.index.clear()
        return self.catch_up(progress)

    def sync_paths(self, paths: list[str], *, commit: bool | None = None) -> SyncReport:
        """Take in hand edits of these files: check, commit (one commit per memory, its
        subject saying what happened: core/changelog.py), index.

        A file that does not parse, or that holds a secret, is neither committed nor
        indexed: its last good version stays searchable and the problem is recorded for
        `vault-tool doctor`. Files that equal what the index holds are skipped. While git is
        busy (repo_state.py) nothing is taken in: VaultBusy says why, and the caller retries.
        Files of a repository or vault nested in this one are not this vault's, and files
        the person's rules leave out are no memories (storage/left_out.py): ignored.
        A file that changes as it is read (storage/steady.py) is read again, a clock tick
        apart, a few times; if it never holds still it is left as it was, recorded as a
        problem and listed in report.changing, for the caller's next look.
        """
        commit = self.store.config.auto_commit if commit is None else commit
        nested = NestedFolders(self.root)
        paths = self.store.memory_files([p for p in paths if not nested.holds(p)])
        for _ in range(STEADY_TRIES - 1):
            report = self._sync_once(paths, commit, last_try=False)
            if report is not None:
                return report
            time.sleep(RACY_SECONDS)
        report = self._sync_once(paths, commit, last_try=True)
        assert report is not None
        return report

    def _sync_once(self, paths: list[str], commit: bool, *, last_try: bool) -> SyncReport | None:
        """One look at these files; None (and nothing done) if one of them, or the other
        end of a move, was being written, unless this is the last try: those are then
        left as they are, and the rest taken in (a move half-seen is two commits)."""
        self.store.commits.require_committable()
        report = SyncReport()
        problems = recorded.load(self.store.run_dir)
        self.store.commits.own.forget(paths)  # taken in here, as they are now
        with self.store.write_lock():
            known = {p: self.index.by_path(p) for p in paths}
            ready: dict[str, Checked] = {}
            for path in sorted(set(paths)):
                checked = self.hand_edits.check(path, known[path])
                if isinstance(checked, Kept):
                    named = redact_name(path)  # (a secret in a name is never written out)
                    report.problems[named] = problems[named] = checked.entry
                    report.kept[named] = PROBLEM if checked.kind == CHANGING else checked.kind
                    if checked.kind == CHANGING:
                        report.changing.append(path)
                elif checked is not None:
                    ready[path] = checked
                elif not _flags(problems.get(path), known[path]):
                    # Gone, or put back as indexed and committed: its problem is gone too.
                    problems.pop(path, None)
                    problems.pop(redact_name(path), None)
            partners_changing = self.hand_edits.add_move_partners(ready, known) if commit else []
            if (report.changing or partners_changing) and not last_try:
                return None
            for path, checked in ready.items():
                problems.pop(path, None)
                if checked.flag is not None:
                    problems[path] = report.flagged[path] = checked.flag
            versions: dict[str, str] = {}
            if commit:
                versions, report.commits = self.hand_edits.commit(ready, known)
            self._index_synced(ready, versions, report)
        recorded.save(self.store.run_dir, problems)
        return report

    def settled(self, path: str) -> bool:
        """Whether this file is already indexed and committed as it is (no lock taken).

        The watcher asks first, so the events of the tool's own writes never queue behind
        (or hold up) the next write for the vault's lock. While git is busy it raises
        VaultBusy, as sync_paths would, before any file is read.
        """
        self.store.commits.require_committable()
        stat = stat_or_none(self.root / path)
        # A write of this process's own is committed as it is; indexed as it is too, unless
        # another process indexed other bytes since (a catch-up while a checkout showed an
        # older commit): the index is asked either way.
        if stat is None:
            return self.store.commits.is_own(path, None) and self.index.by_path(path) is None
        if not S_ISREG(stat.st_mode):
            return False  # a FIFO (reading it would block), a symlink: sync_paths decides
        try:
            data = self.store.read_bytes(path)
        except (InvalidInput, OSError):
            return False
        if data is None:
            return False
        doc = self.index.by_path(path)
        if self.store.commits.is_own(path, data):
            return doc is not None and doc.blob == blob_sha(data)
        return self.hand_edits.taken_in(doc, path, data)

    def _index_synced(
        self, ready: dict[str, Checked], committed: dict[str, str], report: SyncReport
    ) -> None:
        present = {p for p, c in ready.items() if c.memory is not None and p not in committed}
        changes = self.files.changes_of(present)
        versions = {**{p: c.sha for p, c in changes.items()}, **committed}
        # A hand edit's time is its commit's (a new file's, its own dates: as catch-up reads
        # it, storage/versions.py); one left uncommitted, its file's mtime.
        times = {sha: self.store.commit_time(sha) for sha in set(committed.values())}
        head = self.store.head_sha()
        # A few edits go to the journal of recent writes, as a tool write does (a segment
        # on disk costs ~50 ms more, between the save and the edit being found); many
        # (a `git pull`) to a segment of their own.
        few = len(ready) <= SOFT_DOCUMENTS
        with self.index.recorded() if few else self.index.writer() as writer:
            if few:
                writer.forget(list(ready))
            else:
                self.index.forget(writer, list(ready))
            for path, checked in ready.items():
                memory, data, stat = checked.memory, checked.data, checked.stat
                if memory is None or data is None or stat is None:
                    report.removed.append(path)
                    continue
                # The blob and stat of the bytes that were parsed, not of the file now: if
                # it changed since, catch-up and the next event see that and read it again.
                if path in committed:
                    changed = None if checked.new else times[committed[path]]
                else:
                    held = self.store.matches_head(path, data)
                    changed = changed_at(changes.get(path), stat, not checked.new, held)
                writer.add_document(**document_for(
                    memory, path, version_id=versions.get(path, head), blob=blob_sha(data),
                    mtime_ns=stat.st_mtime_ns, size=stat.st_size, changed=changed,
                ))  # fmt: skip
                report.indexed.append(path)

    def take_in_offline_changes(self, progress: Progress | None = None) -> SyncReport:
        """At start: commit hand edits made while nothing ran, then index whatever changed
        (VaultBusy while git is busy: nothing is taken in then)."""
        self.store.commits.require_committable()
        pending = self.store.uncommitted_paths()
        self.pending = self._any_stale(pending)
        try:
            report = self.sync_paths(pending) if pending else SyncReport()
            caught = self.catch_up(progress)
        finally:
            self.pending = False
        report.indexed += caught.indexed
        report.removed += caught.removed
        report.problems.update(caught.problems)
        report.flagged.update(caught.flagged)
        report.changing += caught.changing
        return report

    def problems(self) -> dict[str, dict[str, Any]]:
        """Files that did not parse when last read: path -> line, reason, hint."""
        return recorded.load(self.store.run_dir)


def _flags(entry: dict[str, Any] | None, doc: Any) -> bool:
    """Whether entry flags the very bytes the index holds of a file (a merged body)."""
    return entry is not None and doc is not None and entry.get("blob") == doc.blob
