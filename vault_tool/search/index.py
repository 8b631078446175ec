"""The Whoosh index on disk: its lifetime, writers, searcher reuse, lookups and state.

The index is a cache of the files (deleting .vault/index loses nothing); documents.py says
what it holds of each. Writers hold the vault lock; readers never block, and a searcher is
reopened after each commit keeping the readers of every segment that is still there.
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
from typing import Any, TypeVar

from vault_tool.errors import NotFound, VaultBusy, VaultError
from vault_tool.search.documents import INDEX_SCHEMA_VERSION, Indexed, whoosh_schema
from vault_tool.search.readers import read_toc, remember_missing_columns, segment_state

log = logging.getLogger(__name__)
T = TypeVar("T")

_META_FILE = "vault-tool-index.json"
# Writes merge segments themselves once there are this many; the leader merges earlier.
MAX_SEGMENTS = 12
# The leader merges when there are more segments than this.
MERGE_AT_SEGMENTS = 6


def index_state(root: Path) -> tuple[str, int | None]:
    """ok, missing, outdated or damaged, and the schema version the index was built with
    (for checks, which look without opening: Index.open() would build a missing index)."""
    from whoosh.reading import SegmentReader

    from vault_tool.search.disk import DAMAGE, TOC_DAMAGE, storage

    folder = root / ".vault" / "index"
    try:
        version = json.loads((folder / _META_FILE).read_text())["schema_version"]
    except (OSError, ValueError, KeyError, TypeError):
        return "missing", None
    if version != INDEX_SCHEMA_VERSION:
        return "outdated", version
    files = storage(folder)
    if not files.index_exists():
        return "missing", version
    try:
        toc = files.open_index()._read_toc()
    except TOC_DAMAGE:
        return "damaged", version
    for segment in toc.segments:  # a segment that cannot be opened cannot be searched
        try:
            SegmentReader(files, toc.schema, segment, generation=toc.generation).close()
        except DAMAGE:
            return "damaged", version
    return "ok", version


class IndexDamaged(VaultError):
    """A read of the index failed on damaged files (it is being rebuilt from the files)."""


class Index:
    """The on-disk index of one vault. Writers hold the vault lock; readers never block."""

    def __init__(self, root: Path) -> None:
        self.dir = root / ".vault" / "index"
        self._create_lock = root / ".vault" / "run" / "index-create.lock"
        self._ix: Any = None
        self._searcher: Any = None
        self._guard = threading.RLock()
        self.rebuilt = False
        # What was found unreadable (None while all is well), and who rebuilds it.
        self.damaged: str | None = None
        self.on_damage: Callable[[], None] | None = None
        # Whether a rebuild or catch-up runs: the index may then lack files it will hold.
        self.behind: Callable[[], bool] = lambda: False

    def open(self) -> Index:
        """Open the index, creating it (empty) when missing, broken or of an older schema."""

        from filelock import FileLock

        remember_missing_columns()
        with self._guard:
            if self._open_existing():
                return self
            # Several processes may find the index missing at once (a person deleted it):
            # one creates it, the others wait and open what it made.
            self._create_lock.parent.mkdir(parents=True, exist_ok=True)
            with FileLock(str(self._create_lock), timeout=60):
                if not self._open_existing():
                    self._create()
            return self

    def _open_existing(self) -> bool:
        """Open the index if it is there and current; False if it must be (re)built."""
        from vault_tool.search.disk import storage

        current = False
        with contextlib.suppress(OSError, ValueError, KeyError):
            meta = json.loads((self.dir / _META_FILE).read_text())
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
                self._ix = files.open_index()
                return True
            except FileNotFoundError:
                time.sleep(0.01 * (attempt + 1))
            except Exception:  # a torn or foreign index is only a cache
                log.warning("the search index is unreadable; rebuilding it", exc_info=True)
                return False
        return False

    def _create(self) -> None:
        from vault_tool.search.disk import storage

        if self.dir.exists():
            shutil.rmtree(self.dir)
        self.dir.mkdir(parents=True)
        self._ix = storage(self.dir).create_index(whoosh_schema())
        self.damaged = None
        # Written last: an index without it is unfinished and is rebuilt.
        meta = self.dir / f"{_META_FILE}.tmp"
        meta.write_text(json.dumps({"schema_version": INDEX_SCHEMA_VERSION}))
        os.replace(meta, self.dir / _META_FILE)
        self.rebuilt = True

    def clear(self) -> None:
        """Drop every document (for a full reindex)."""
        with self._guard:
            self._close_searcher()
            if self._ix is not None:
                self._ix.close()
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
    def writer(self, *, optimize: bool = False, bulk: bool = False) -> Iterator[Any]:
        """A writer whose changes are committed on success, dropped on error (raised) and
        on damage to the index's files (noted, and the index rebuilt: see below).

        Writes add a segment without merging, which keeps a write's index update short;
        the watcher's leader merges segments off the hot path (merge_segments). Past
        MAX_SEGMENTS, a write merges anyway, so queries never slow down without bound
        when no leader runs. A bulk writer (thousands of documents) indexes in a second
        process while this one parses files.
        """
        from whoosh.writing import LockError

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
            yield writer
            # writer.segments: the segments it started from (reading the TOC again costs ~3 ms).
            merge = optimize or len(getattr(writer, "segments", ())) >= MAX_SEGMENTS
            writer.commit(optimize=optimize, merge=merge)
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
        """Merge small segments (the caller holds the vault's write lock)."""
        from vault_tool.search.disk import TOC_DAMAGE

        with self._guard:
            try:
                self._ix.writer(timeout=10.0).commit(merge=True)
            except TOC_DAMAGE as problem:
                self._damaged(f"a merge of its segments failed ({problem})")

    def optimize(self) -> None:
        """Merge every segment into one (the caller holds the vault's write lock)."""
        with self.writer(optimize=True):
            pass

    @contextlib.contextmanager
    def searcher(self) -> Iterator[Any]:
        """A searcher that sees the latest commit (leaving out what cannot be read)."""
        from vault_tool.search.disk import DAMAGE
        from vault_tool.search.readers import reopen

        with self._guard:
            if self._searcher is None or not self._searcher.up_to_date():
                # (Damage found while opening leaves out only what it found.)
                self._searcher = reopen(self._ix, self._searcher, self._noted)
            try:
                yield self._searcher
            except DAMAGE as problem:
                self._damaged(f"a read of it failed ({problem})")
                raise IndexDamaged(
                    "the search index is damaged; it is being rebuilt from the files",
                    hint="retry in a moment (nothing was lost: the files and git hold every "
                    "memory), or run `vault-tool reindex`",
                ) from None

    def read(self, answer: Callable[[Any], T]) -> T:
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

    def forget(self, writer: Any, paths: list[str]) -> None:
        """Delete the documents of these files in writer, found through the kept searcher.

        writer.update_document and delete_by_term open a reader of every segment to find
        them (90 ms at 100k); the kept searcher has them open already. Its document numbers
        are the writer's when both see the same segments with the same deletions (the
        caller holds the vault's write lock, so nothing commits in between).
        """
        with self.searcher() as searcher:
            ours = [segment_state(leaf.segment()) for leaf, _ in searcher.reader().leaf_readers()]
            if ours != [segment_state(s) for s in getattr(writer, "segments", [None])]:
                for path in paths:
                    writer.delete_by_term("path", path)
                return
            for path in paths:
                for docnum in searcher.document_numbers(path=path):
                    writer.delete_document(docnum)

    # --- lookups -------------------------------------------------------------------------

    def find(self, field: str, value: str) -> list[Indexed]:
        """Every document whose ID field equals value."""
        if not value:
            return []
        stored = self.read(lambda searcher: list(searcher.documents(**{field: value})))
        return [Indexed.from_stored(f) for f in stored]

    def by_id(self, memory_id: str) -> Indexed | None:
        """The memory with this id; for a duplicated id, the one with the smallest path."""
        found = sorted(self.find("memory_id", memory_id), key=lambda d: d.path)
        return found[0] if found else None

    def require(self, memory_id: str) -> Indexed:
        """The memory with this id; NotFound (naming the fix) if there is none, VaultBusy
        while the index is behind (its file may not have been read yet)."""
        doc = self.by_id(memory_id)
        if doc is not None:
            return doc
        if self.behind():
            raise VaultBusy(
                "memory_id: the search index is being rebuilt or caught up from the files "
                f"and does not hold {memory_id} yet",
                hint="retry in a moment (nothing was changed or lost)",
                field="memory_id",
            )
        raise NotFound(
            f"memory_id: no memory has id {memory_id}",
            hint="search with a query to find the memory and its current id",
            field="memory_id",
        )

    def by_path(self, path: str) -> Indexed | None:
        """The document of this file."""
        found = self.find("path", path)
        return found[0] if found else None

    def expired_by(self, moment: int) -> list[Indexed]:
        """Every memory whose expires_at (epoch seconds) is at or before moment."""
        from whoosh import query as q

        due = q.NumericRange("expires_ts", 1, moment)
        stored = self.read(lambda s: [s.stored_fields(d) for d in s.docs_for_query(due)])
        return [Indexed.from_stored(f) for f in stored]

    def deltas(self) -> list[tuple[str, str, dict[str, Any]]]:
        """(path, memory id, semantic delta) of every indexed memory.

        A list, read at once: the searcher's lock is held while it is read, and a caller
        working through the memories must not keep searches and writes waiting.
        """
        stored = self.read(lambda searcher: list(searcher.all_stored_fields()))
        return [
            (f["path"], f["memory_id"], json.loads(f["record"])["semantic_delta"]) for f in stored
        ]

    def states(self) -> dict[str, tuple[int, int, str]]:
        """path -> (mtime_ns, size, blob) of every indexed file: what catch-up compares."""
        return self.read(_states)

    def count(self) -> int:
        """Number of indexed files."""
        return self.read(lambda searcher: searcher.doc_count())


def _states(searcher: Any) -> dict[str, tuple[int, int, str]]:
    reader = searcher.reader()
    if reader.doc_count_all() == 0:
        return {}  # (an empty index's reader has no columns)
    path, mtime, size, blob = (
        reader.column_reader(name) for name in ("path", "mtime_ns", "size", "blob")
    )
    return {path[d]: (mtime[d], size[d], blob[d]) for d in reader.all_doc_ids()}


@contextlib.contextmanager
def scratch_searcher(documents: Iterable[dict[str, Any]]) -> Iterator[Any]:
    """A searcher over a throwaway in-memory index of these documents (documents.py's)."""
    from whoosh.filedb.filestore import RamStorage

    ix = RamStorage().create_index(whoosh_schema())
    writer = ix.writer()
    for document in documents:
        writer.add_document(**document)
    writer.commit()
    with ix.searcher() as searcher:
        yield searcher
