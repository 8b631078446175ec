"""The Whoosh index on disk: its lifetime, writers, searcher reuse, lookups and state.

The index is a cache of the files (deleting .vault/index loses nothing); documents.py says
what it holds of each. Writers hold the vault lock; readers never block, and a searcher is
reopened after each commit keeping the readers of every segment that is still there.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from vault_tool.errors import NotFound, VaultBusy
from vault_tool.search.documents import INDEX_SCHEMA_VERSION, Indexed, whoosh_schema
from vault_tool.search.postings import per_reader

log = logging.getLogger(__name__)

_META_FILE = "vault-tool-index.json"
# Writes merge segments themselves once there are this many; the leader merges earlier.
MAX_SEGMENTS = 12
# Reads of the index's table of contents raced by a merge that removes files (as Whoosh).
TOC_ATTEMPTS = 10
# The leader merges when there are more segments than this.
MERGE_AT_SEGMENTS = 6


def _remember_missing_columns() -> None:
    """Make Whoosh remember that a segment has no length column for a field.

    Writing postings asks for every posting's field length; for fields without lengths
    (ID, KEYWORD, NUMERIC) Whoosh's per-document reader then checks the file system each
    time, because it caches only the columns it found: 290,000 stat calls in a reindex of
    3,000 files. A segment never changes once written, so a missing column stays missing.
    """
    from whoosh.codec import whoosh3

    reader_class = whoosh3.W3PerDocReader
    if getattr(reader_class, "_vault_patched", False):
        return
    found_or_not = reader_class._cached_reader

    def cached_reader(self: Any, fieldname: str, column: Any) -> Any:
        missing = per_reader(self, "missing columns", set)
        if fieldname in missing:
            return None
        reader = found_or_not(self, fieldname, column)
        if reader is None:
            missing.add(fieldname)
        return reader

    reader_class._cached_reader = cached_reader
    reader_class._vault_patched = True


def index_state(root: Path) -> tuple[str, int | None]:
    """ok, missing or outdated, and the schema version the index was built with (for checks,
    which look without opening: Index.open() would build a missing index)."""
    from whoosh import index as whoosh_index

    folder = root / ".vault" / "index"
    try:
        version = json.loads((folder / _META_FILE).read_text())["schema_version"]
    except (OSError, ValueError, KeyError, TypeError):
        return "missing", None
    if version != INDEX_SCHEMA_VERSION:
        return "outdated", version
    if not whoosh_index.exists_in(str(folder)):
        return "missing", version
    return "ok", version


class Index:
    """The on-disk index of one vault. Writers hold the vault lock; readers never block."""

    def __init__(self, root: Path) -> None:
        self.dir = root / ".vault" / "index"
        self._create_lock = root / ".vault" / "run" / "index-create.lock"
        self._ix: Any = None
        self._searcher: Any = None
        self._guard = threading.RLock()
        self.rebuilt = False

    def open(self) -> Index:
        """Open the index, creating it (empty) when missing, broken or of an older schema."""

        from filelock import FileLock

        _remember_missing_columns()
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
        from whoosh import index as whoosh_index

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
                if not whoosh_index.exists_in(str(self.dir)):
                    return False
                self._ix = whoosh_index.open_dir(str(self.dir))
                return True
            except FileNotFoundError:
                time.sleep(0.01 * (attempt + 1))
            except Exception:  # a torn or foreign index is only a cache
                log.warning("the search index is unreadable; rebuilding it", exc_info=True)
                return False
        return False

    def _create(self) -> None:
        from whoosh import index as whoosh_index

        if self.dir.exists():
            shutil.rmtree(self.dir)
        self.dir.mkdir(parents=True)
        self._ix = whoosh_index.create_in(str(self.dir), whoosh_schema())
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

    def close(self) -> None:
        """Release the searcher and the index."""
        with self._guard:
            self._close_searcher()
            if self._ix is not None:
                self._ix.close()
                self._ix = None

    @contextlib.contextmanager
    def writer(self, *, optimize: bool = False, bulk: bool = False) -> Iterator[Any]:
        """A writer whose changes are committed on success and dropped on error.

        Writes add a segment without merging, which keeps a write's index update short;
        the watcher's leader merges segments off the hot path (merge_segments). Past
        MAX_SEGMENTS, a write merges anyway, so queries never slow down without bound
        when no leader runs. A bulk writer (thousands of documents) indexes in a second
        process while this one parses files.
        """
        from whoosh.writing import LockError

        # multisegment: each process's documents stay a segment of their own. Merging them
        # into one re-reads and re-writes every posting in Python, which was half of a
        # full reindex (10k: 19.7 s with the merge, 10.0 s without; queries over two
        # segments cost the same).
        options = {"procs": 2, "limitmb": 256, "multisegment": True} if bulk else {"limitmb": 128}
        try:
            writer = self._ix.writer(timeout=10.0, **options)
        except LockError:
            raise VaultBusy(
                "the search index is locked by another process",
                hint="retry in a moment; `vault-tool doctor` shows which process leads",
            ) from None
        try:
            yield writer
        except BaseException:
            writer.cancel()
            raise
        # writer.segments: the segments it started from (reading the TOC again costs ~3 ms).
        merge = optimize or len(getattr(writer, "segments", ())) >= MAX_SEGMENTS
        writer.commit(optimize=optimize, merge=merge)

    def segment_count(self) -> int:
        """How many segments the index has (each one costs every query a little)."""
        return len(self._ix._segments())

    def merge_segments(self) -> None:
        """Merge small segments (the caller holds the vault's write lock)."""
        with self._guard:
            self._ix.writer(timeout=10.0).commit(merge=True)

    def optimize(self) -> None:
        """Merge every segment into one (the caller holds the vault's write lock)."""
        with self.writer(optimize=True):
            pass

    @contextlib.contextmanager
    def searcher(self) -> Iterator[Any]:
        """A searcher that sees the latest commit."""
        with self._guard:
            if self._searcher is None or not self._searcher.up_to_date():
                self._searcher = self._reopen(self._searcher)
            yield self._searcher

    def _reopen(self, old: Any) -> Any:
        """A searcher of the latest commit that keeps old's reader of every segment still in
        the index.

        Opening a segment costs 1 ms at 10k and 10 ms at 100k, and after a write every
        segment but the new one is still there (at most with more deletions). Whoosh's own
        Searcher.refresh() is not used: it keeps readers of segments a merge removed and
        leaves kept readers with their old deletions, so it can return old versions of
        updated documents.
        """
        from whoosh.reading import EmptyReader, MultiReader, SegmentReader
        from whoosh.searching import Searcher

        reusable: dict[str, Any] = {}
        if old is not None:
            for leaf, _ in old.reader().leaf_readers():
                if leaf.segment() is not None:
                    reusable[leaf.segment().segment_id()] = leaf
        for attempt in range(TOC_ATTEMPTS):
            toc = self._ix._read_toc()
            readers, opened = [], []
            try:
                for segment in toc.segments:
                    leaf = _rebound(reusable.get(segment.segment_id()), segment)
                    if leaf is None:
                        leaf = SegmentReader(
                            self._ix.storage, toc.schema, segment, generation=toc.generation
                        )
                        opened.append(leaf)
                    readers.append(leaf)
                break
            except OSError:
                # A writer removed a segment's files (a merge) between our TOC read and open.
                for leaf in opened:
                    leaf.close()
                if attempt == TOC_ATTEMPTS - 1:
                    raise
                time.sleep(0.05)
        for leaf in reusable.values():
            if all(leaf is not kept for kept in readers):
                leaf.close()
        if not readers:
            return Searcher(EmptyReader(toc.schema), fromindex=self._ix)
        # Always a MultiReader: it carries this generation, which up_to_date() compares.
        return Searcher(MultiReader(readers, generation=toc.generation), fromindex=self._ix)

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
            ours = [_state(leaf.segment()) for leaf, _ in searcher.reader().leaf_readers()]
            if ours != [_state(segment) for segment in getattr(writer, "segments", [None])]:
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
        with self.searcher() as searcher:
            return [Indexed.from_stored(f) for f in searcher.documents(**{field: value})]

    def by_id(self, memory_id: str) -> Indexed | None:
        """The memory with this id; for a duplicated id, the one with the smallest path."""
        found = sorted(self.find("memory_id", memory_id), key=lambda d: d.path)
        return found[0] if found else None

    def require(self, memory_id: str) -> Indexed:
        """The memory with this id; NotFound (naming the fix) if there is none."""
        doc = self.by_id(memory_id)
        if doc is None:
            raise NotFound(
                f"memory_id: no memory has id {memory_id}",
                hint="search with a query to find the memory and its current id",
                field="memory_id",
            )
        return doc

    def by_path(self, path: str) -> Indexed | None:
        """The document of this file."""
        found = self.find("path", path)
        return found[0] if found else None

    def expired_by(self, moment: int) -> list[Indexed]:
        """Every memory whose expires_at (epoch seconds) is at or before moment."""
        from whoosh import query as q

        with self.searcher() as searcher:
            return [
                Indexed.from_stored(searcher.stored_fields(docnum))
                for docnum in searcher.docs_for_query(q.NumericRange("expires_ts", 1, moment))
            ]

    def deltas(self) -> list[tuple[str, str, dict[str, Any]]]:
        """(path, memory id, semantic delta) of every indexed memory.

        A list, read at once: the searcher's lock is held while it is read, and a caller
        working through the memories must not keep searches and writes waiting.
        """
        with self.searcher() as searcher:
            stored = list(searcher.all_stored_fields())
        return [
            (f["path"], f["memory_id"], json.loads(f["record"])["semantic_delta"]) for f in stored
        ]

    def states(self) -> dict[str, tuple[int, int, str]]:
        """path -> (mtime_ns, size, blob) of every indexed file: what catch-up compares."""
        with self.searcher() as searcher:
            reader = searcher.reader()
            if reader.doc_count_all() == 0:
                return {}  # (an empty index's reader has no columns)
            path, mtime, size, blob = (
                reader.column_reader(name) for name in ("path", "mtime_ns", "size", "blob")
            )
            return {path[d]: (mtime[d], size[d], blob[d]) for d in reader.all_doc_ids()}

    def count(self) -> int:
        """Number of indexed files."""
        with self.searcher() as searcher:
            return searcher.doc_count()


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


def _state(segment: Any) -> tuple[str, int] | None:
    return (segment.segment_id(), segment.deleted_count()) if segment is not None else None


def _rebound(leaf: Any, segment: Any) -> Any:
    """leaf, made to read this segment's deletions; None when that cannot be done.

    Deletions are the only thing of a segment a commit changes. Whoosh's segment reader
    and per-document reader read them from the segment object they hold, and the reader
    caches the set it filters postings with (deleted_docs_set) until it is dropped.
    """
    if leaf is None or _state(leaf.segment()) == _state(segment):
        return leaf
    perdoc = getattr(leaf, "_perdoc", None)
    if not hasattr(leaf, "_segment") or not hasattr(perdoc, "_segment"):
        return None  # (closed by the caller with the other readers it does not keep)
    leaf._segment = perdoc._segment = segment
    leaf.__dict__.pop("deleted_docs_set", None)
    return leaf
