"""The Whoosh index on disk: its lifetime, writers, the journal's flush, searcher reuse.

The index is a cache of the files (deleting .vault/index loses nothing); documents.py says
what it holds of each. Writers hold the vault lock; readers never block, and a searcher is
reopened after each commit keeping the readers of every segment that is still there. The
tool's own writes go to the journal of recent writes (recorded(), recent.py), searched
beside the segments, and flushed into one segment when idle, when big, and before any
other commit (writer()); lookups are in lookups.py.
A damaged index (disk.py says what counts) never fails a call: reads answer from the
segments that can be read, a failed index update is dropped (the files and git have the
write), and `damaged` plus the on_damage hook let the engine rebuild it from the files.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from vault_tool.errors import VaultBusy, VaultError
from vault_tool.search.disk import read_toc
from vault_tool.search.documents import INDEX_SCHEMA_VERSION, whoosh_schema
from vault_tool.search.lookups import Lookups
from vault_tool.search.readers import sees_what_writer_sees
from vault_tool.search.recent import IDLE_SECONDS, PAUSE_SECONDS, Recent, Recorder, journals

if TYPE_CHECKING:
    from whoosh.searching import Searcher

log = logging.getLogger(__name__)
T = TypeVar("T")

# Writes merge segments themselves once there are this many; the leader merges earlier.
MAX_SEGMENTS = 12
# The leader merges when there are more segments than this.
MERGE_AT_SEGMENTS = 6


def index_state(root: Path) -> tuple[str, int | None]:
    """ok, missing, outdated or damaged, and the schema version the index was built with
    (for checks, which look without opening: Index.open() would build a missing index)."""
    from vault_tool.search import disk

    return disk.index_state(root)


class IndexDamaged(VaultError):
    """A read of the index failed on damaged files (it is being rebuilt from the files)."""


class Index(Lookups):
    """The on-disk index of one vault. Writers hold the vault lock; readers never block."""

    def __init__(self, root: Path) -> None:
        self.dir = root / ".vault" / "index"
        self._create_lock = root / ".vault" / "run" / "index-create.lock"
        self._ix: Any = None
        self._searcher: Searcher = None  # of the segments on disk
        self._searcher_made: tuple[int, int] | None = None  # of which making (_made)
        self._recent = Recent(self.dir)
        self._guard = threading.RLock()
        self.rebuilt = False
        # What was found unreadable (None while all is well), and who rebuilds it.
        self.damaged: str | None = None
        self.on_damage: Callable[[], None] | None = None
        # Whether a rebuild or catch-up runs: the index may then lack files it will hold.
        self.behind: Callable[[], bool] = lambda: False

    def open(self) -> Index:
        """Open the index, creating it (empty) when missing, broken or of an older schema."""

        from vault_tool.search import disk

        with self._guard:
            if self._open_existing():
                return self
            # Several processes may find the index missing at once (a person deleted it):
            # one creates it, the others wait and open what it made.
            with disk.creating(self._create_lock):
                if not self._open_existing():
                    self._create()
            return self

    def _open_existing(self) -> bool:
        """Open the index if it is there and current; False if it must be (re)built."""
        from vault_tool.search.disk import META_FILE, storage

        current = False
        with contextlib.suppress(OSError, ValueError, KeyError):
            meta = json.loads((self.dir / META_FILE).read_text())
            current = meta["schema_version"] == INDEX_SCHEMA_VERSION
        if not current:
            return False
        # Another process's commit replaces the table of contents while we read it, so a
        # missing file is retried; only an index that stays unreadable is rebuilt.
        for attempt in range(20):
            try:
                files = storage(self.dir)
                if not files.index_exists():
                    return False
                self._ix = files.open_index(schema=whoosh_schema())  # (core/words.py)
                return True
            except FileNotFoundError:
                time.sleep(0.01 * (attempt + 1))
            except Exception:  # a torn or foreign index is only a cache
                log.warning("the search index is unreadable; rebuilding it", exc_info=True)
                return False
        return False

    def _create(self) -> None:
        from vault_tool.search.disk import META_FILE, storage

        if self.dir.exists():
            shutil.rmtree(self.dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._ix = storage(self.dir).create_index(whoosh_schema())
        self.damaged = None
        # Written last: an index without it is unfinished and is rebuilt.
        meta = self.dir / f"{META_FILE}.tmp"
        meta.write_text(json.dumps({"schema_version": INDEX_SCHEMA_VERSION}))
        os.replace(meta, self.dir / META_FILE)
        self.rebuilt = True

    def clear(self) -> None:
        """Drop every document (for a full reindex)."""
        from vault_tool.search import disk

        with self._guard:
            self._close_searcher()
            if self._ix is not None:
                self._ix.close()
            with disk.creating(self._create_lock):
                self._create()

    def start_over_if_damaged(self) -> bool:
        """Empty the index if it is still damaged or gone (another process may have rebuilt
        it meanwhile), and forget the damage; True if emptied (the caller holds the vault's
        write lock, then catches up with the files)."""
        with self._guard:
            with contextlib.suppress(Exception):  # (readers of damaged files)
                self._close_searcher()
            self.damaged = None
            if index_state(self.dir.parent.parent)[0] == "ok":
                return False
            self.clear()
            return True

    def close(self) -> None:
        """Release the searcher and the index."""
        with self._guard:
            self._close_searcher()
            if self._ix is not None:
                self._ix.close()
                self._ix = None

    @contextlib.contextmanager
    def writer(
        self,
        *,
        optimize: bool = False,
        bulk: bool = False,
        merge: bool = False,
        _flush: bool = False,
    ) -> Iterator[Any]:
        """A writer whose changes are committed on success, dropped on error (raised) and
        on damage to the index's files (noted, and the index rebuilt: see below).

        The journal of recent writes (recent.py) is flushed first, in a commit of its own.
        Writes add a segment without merging, which keeps a write's index update short;
        the watcher's leader merges segments off the hot path (merge_segments). Past
        MAX_SEGMENTS, a write merges anyway, so queries never slow down without bound
        when no leader runs. A bulk writer (thousands of documents) indexes in a second
        process while this one parses files.
        """
        from whoosh.writing import LockError

        if not _flush and journals(self.dir):
            self.flush()

        # multisegment: each process's documents stay a segment of their own. Merging them
        # re-reads and re-writes every posting in Python, half of a full reindex (10k:
        # 19.7 s with the merge, 10.0 s without; queries over two segments cost the same).
        options = {"procs": 2, "limitmb": 256, "multisegment": True} if bulk else {"limitmb": 128}
        from vault_tool.search.disk import DAMAGE, TOC_DAMAGE, DroppedWriter

        try:
            writer = self._ix.writer(timeout=10.0, **options)
        except LockError:
            raise VaultBusy(
                "the search index is locked by another process",
                hint="retry in a moment; `vault-tool doctor` shows which process leads",
            ) from None
        except TOC_DAMAGE as problem:  # (a removed folder too: no lock file can be made)
            self._damaged(f"no writer could be opened ({problem})")
            writer = DroppedWriter()
        # Most updates follow a commit: the files and git hold what was written, so an
        # update that fails on the index's files leaves it behind, for the rebuild to index.
        try:
            if _flush and not isinstance(writer, DroppedWriter):  # (which answers any name)
                if self._recent.generation != writer.generation - 1:  # (the lock prevents it)
                    raise IndexDamaged("its journal of recent writes is of another generation")
                self._recent.hide_on_disk(writer.segments)
                for document in self._recent.documents_to_write():
                    writer.add_document(**document)
            yield writer
            # writer.segments: the segments it started from (reading the TOC again costs ~3 ms).
            merge = merge or optimize or len(getattr(writer, "segments", ())) >= MAX_SEGMENTS
            writer.commit(optimize=optimize, merge=merge)
            for journal in journals(self.dir) if _flush else ():
                journal.unlink(missing_ok=True)  # (after the commit that holds it)
        except (*DAMAGE, IndexDamaged) as problem:
            with contextlib.suppress(Exception):
                writer.cancel()
            self._damaged(f"an update of it failed ({problem})")
        except BaseException:
            with contextlib.suppress(*DAMAGE):
                writer.cancel()
            raise

    def segment_count(self) -> int:
        """How many segments the index has (each one costs every query a little)."""
        from vault_tool.search.disk import TOC_DAMAGE

        try:
            return len(read_toc(self._ix).segments)
        except TOC_DAMAGE as problem:
            self._damaged(f"its table of contents cannot be read ({problem})")
            return 0

    def merge_segments(self) -> None:
        """Flush the journal and merge small segments (the caller holds the write lock)."""
        self.flush(merge=True)

    @contextlib.contextmanager
    def recorded(self) -> Iterator[Recorder]:
        """A writer of one write's changes (forget, add_document) into the journal of recent
        writes (recent.py): searchable when it ends, in every process, and written to disk
        by a later flush. The caller holds the vault's write lock, as for writer()."""
        from vault_tool.search.disk import DAMAGE

        recorder = Recorder()
        yield recorder
        if not (recorder.forgotten or recorder.added):
            return
        with self._guard:
            try:
                with self.searcher():  # reads the latest generation's journal to its end
                    pass
                self._recent.append(recorder)
                with self.searcher():  # builds the record's segment now, not at a search
                    pass
            except (*DAMAGE, IndexDamaged) as problem:  # (the files and git have the write)
                self._damaged(f"an update of it failed ({problem})")
                return
        if self._recent.due(hard=True):
            self.flush()

    def flush(self, *, merge: bool = False) -> None:
        """Write the journal into a segment on disk and remove it; merge: small segments
        too (the caller holds the vault's write lock)."""
        with self._guard:
            with contextlib.suppress(IndexDamaged), self.searcher():
                pass  # (the journal read to its end)
            with self.writer(merge=merge, _flush=True):
                pass

    def flush_due(self) -> bool:
        """Whether the journal should be flushed now: idle long enough, or big."""
        with self._guard, contextlib.suppress(IndexDamaged), self.searcher():
            idle = self._recent.idle_for()  # (big: flushed between two writes in a stream)
            return idle >= IDLE_SECONDS or (idle >= PAUSE_SECONDS and self._recent.due())
        return False

    def pending_writes(self) -> bool:
        """Whether the journal of recent writes holds writes no segment on disk has yet."""
        return bool(journals(self.dir))

    def optimize(self) -> None:
        """Merge every segment into one (the caller holds the vault's write lock)."""
        with self.writer(optimize=True):
            pass

    @contextlib.contextmanager
    def searcher(self) -> Iterator[Searcher]:
        """A searcher that sees the latest commit (leaving out what cannot be read)."""
        from vault_tool.search import disk
        from vault_tool.search.readers import reopen

        with self._guard:
            made = disk.made(self.dir)
            if (
                self._searcher is None
                or (made is not None and made != self._searcher_made)
                or not self._searcher.up_to_date()
            ):
                # (Damage found while opening leaves out only what it found.)
                self._searcher = reopen(self._ix, self._searcher, self._noted)
                self._searcher_made = made
            try:
                yield self._recent.view(self._searcher, self._ix)
            except disk.DAMAGE as problem:
                self._damaged(f"a read of it failed ({problem})")
                raise IndexDamaged(
                    "the search index is damaged; it is being rebuilt from the files",
                    hint="retry in a moment (nothing was lost: the files and git hold every "
                    "memory), or run `vault-tool reindex`",
                ) from None

    def read(self, answer: Callable[[Searcher], T]) -> T:
        """answer(searcher), over what can be read: a read that fails on damaged files is
        asked again of the segments that still open (damage the first open did not see),
        then of an empty index."""
        from whoosh.reading import EmptyReader
        from whoosh.searching import Searcher

        for _ in range(2):
            with contextlib.suppress(IndexDamaged), self.searcher() as searcher:
                return answer(searcher)
        with Searcher(EmptyReader(whoosh_schema())) as searcher:
            return answer(searcher)

    def _damaged(self, what: str) -> None:
        """Note that the index cannot be read, drop every reader of it (a reader opened
        before the damage reads on into it), and have it rebuilt."""
        with self._guard, contextlib.suppress(Exception):  # closing what broke may fail too
            self._close_searcher()
        self._noted(what)

    def _noted(self, what: str) -> None:
        if self.damaged is None:
            log.warning("the search index is damaged: %s", what)
        self.damaged = f"the search index is damaged: {what}"
        if self.on_damage is not None:
            self.on_damage()

    def _close_searcher(self) -> None:
        if self._searcher is not None:
            self._searcher.close()
            self._searcher = None

    def unindexed(self, writer: Any, paths: set[str]) -> set[str]:
        """The paths no document is of in what writer writes to (a term lookup each).

        Asked of the kept searcher when it sees writer's segments, else of writer's own
        reader: the kept one may be behind a rebuild another process made, or leave out
        what it could not read, and a file it does not find would be added a second time.
        """
        from vault_tool.search.disk import DroppedWriter

        def absent(searcher: Searcher) -> set[str]:
            if searcher.doc_count() == 0:
                return set(paths)
            return {p for p in paths if searcher.document_number(path=p) is None}

        if not paths or isinstance(writer, DroppedWriter):  # (which writes nothing)
            return set()
        with contextlib.suppress(IndexDamaged), self.searcher() as searcher:
            if self.damaged is None and sees_what_writer_sees(searcher, writer):
                return absent(searcher)
        return absent(writer.searcher())

    def forget(self, writer: Any, paths: list[str]) -> None:
        """Delete the documents of these files in writer, found through the kept searcher.

        writer.update_document and delete_by_term open a reader of every segment to find
        them (90 ms at 100k); the kept searcher has them open already. Its document numbers
        are the writer's when both see the same segments with the same deletions (the
        caller holds the vault's write lock, so nothing commits in between).
        """
        with self.searcher() as searcher:
            if not sees_what_writer_sees(searcher, writer):
                for path in paths:
                    writer.delete_by_term("path", path)
                return
            for path in paths:
                for docnum in searcher.document_numbers(path=path):
                    writer.delete_document(docnum)


def scratch_searcher(documents: Iterable[dict[str, Any]]) -> Any:
    """A searcher over a throwaway in-memory index of these documents (in_memory.py)."""
    from vault_tool.search import in_memory

    return in_memory.scratch_searcher(documents)
