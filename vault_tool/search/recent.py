"""The index's recent writes: a journal beside its segments, searched from memory until a
flush writes it into one segment on disk.

A segment on disk costs a write most of 50 ms at 10k notes (per-field files copied into a
compound file, three fsyncs, a new table of contents, and a reader of it opened again in
every process). A write by the tool instead appends one record (the paths it forgets, the
documents it adds) to `recent-<generation>.jsonl` in the index folder. Every process with
the vault open searches the records as segments built in memory, one per record, on its
next search: a write is searchable when it returns, here and in every other process.

A journal holds on top of the index generation its name carries, and only that one:
every commit of the index on disk first writes the journal into a segment and then
removes it (Index.flush), so a reader that sees a newer table of contents never reads an
older journal into it. Records are appended, and segments committed, under the vault's
write lock. A document a record forgets is hidden if it is on disk (as a deletion is, and
counted in the term statistics until a merge, as Whoosh counts deleted documents), and
taken out of its record's segment if it is in memory (which is built again, as the flush
writes it): a document ranks the same whether its record is in the journal or flushed.

A record torn by a crash fails its checksum and ends what is read (the next append cuts
it off). Its write is in the files and git and not in the index, so the next catch-up
(which compares every file with what the index holds) indexes it; nothing here is
fsynced, for the same reason.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import time
import zlib
from pathlib import Path
from typing import Any

# A journal is flushed when the leader finds it idle this long, or this big at a pause
# this long (each record is a segment every search reads, and that a new process builds
# at its first search).
IDLE_SECONDS = 1.0
PAUSE_SECONDS = 0.25
SOFT_RECORDS = 16
SOFT_DOCUMENTS = 100
# Past these, the write itself flushes (no leader runs, or it is busy).
HARD_RECORDS = 32
HARD_DOCUMENTS = 200
_PREFIX = "recent-"


class Recorder:
    """The index changes of one write, in the order made (a writer's two methods)."""

    def __init__(self) -> None:
        self.forgotten: list[str] = []
        self.added: list[dict[str, Any]] = []

    def forget(self, paths: list[str]) -> None:
        """Remove the documents of these files (made before this write)."""
        self.forgotten += paths

    def add_document(self, **fields: Any) -> None:
        self.added.append(fields)


def encode(recorder: Recorder) -> bytes:
    """One journal line: a checksum, then the record as JSON."""
    body = json.dumps({"forget": recorder.forgotten, "add": recorder.added}).encode()
    return b"%08x %s\n" % (zlib.crc32(body), body)


def decode(data: bytes) -> tuple[list[dict[str, Any]], int]:
    """The whole records at the start of data, and how many bytes they take."""
    records, at = [], 0
    while (end := data.find(b"\n", at)) >= 0:
        crc, _, body = data[at:end].partition(b" ")
        try:
            if int(crc, 16) != zlib.crc32(body):
                break
            record = json.loads(body)
        except ValueError:
            break
        records.append(record)
        at = end + 1
    return records, at


def journals(folder: Path) -> list[Path]:
    """Every journal file in the index folder (of any generation)."""
    with contextlib.suppress(OSError):
        return [folder / n for n in os.listdir(folder) if n.startswith(_PREFIX)]
    return []


class Recent:
    """What this process has read of the journal of one index generation, as segments in
    memory, and what its records hide of the segments before them."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._reset(-2)

    def _reset(self, generation: int) -> None:
        self.generation = generation
        self._identity: tuple[int, int] | None = None  # (device, inode) of the file read
        self.read_to = 0
        # One segment per record: (its reader, the documents it was built from).
        self.segments: list[tuple[Any, list[dict[str, Any]]]] = []
        self.hidden: dict[str, set[int]] = {}  # disk segment id -> its forgotten docnums
        self.documents = 0
        self._view: Any = None
        self._base: Any = None
        for reader in getattr(self, "_masked", ()):
            reader.close()
        # Readers of disk segments opened again with the deletions the records add.
        self._masked: list[Any] = []

    def path(self, generation: int | None = None) -> Path:
        gen = self.generation if generation is None else generation
        return self.folder / f"{_PREFIX}{gen}.jsonl"

    def view(self, disk: Any, ix: Any) -> Any:
        """A searcher of the disk searcher's segments and the journal's records on top."""
        generation = disk.reader().generation()
        if generation is None or generation < 0:  # (an empty index's reader has none)
            generation = ix.latest_generation()
        if generation != self.generation:
            self._reset(generation)
        try:
            with open(self.path(), "rb") as file:
                stat = os.fstat(file.fileno())
                if (stat.st_dev, stat.st_ino) != self._identity:
                    self._reset(generation)
                    self._identity = (stat.st_dev, stat.st_ino)
                if stat.st_size > self.read_to:
                    file.seek(self.read_to)
                    records, used = decode(file.read())
                    self.read_to += used
                    self._take(records, disk)
        except FileNotFoundError:
            if self._identity is not None:  # removed without a new generation: a cleared index
                self._reset(generation)
        if not self.segments and not self.hidden:
            return disk
        if self._view is None or self._base is not disk:
            self._view = self._compose(disk, ix)
            self._base = disk
        return self._view

    def append(self, recorder: Recorder) -> None:
        """Add a record to the journal read so far (the caller holds the vault's write lock
        and has just had view() read the journal to its end)."""
        fd = os.open(self.path(), os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            if os.fstat(fd).st_size != self.read_to:
                os.ftruncate(fd, self.read_to)  # a torn record, read by nobody
            os.pwrite(fd, encode(recorder), self.read_to)
        finally:
            os.close(fd)

    def idle_for(self) -> float:
        """Seconds since the journal of this generation was last written (-1 if none)."""
        try:
            return time.time() - self.path().stat().st_mtime
        except OSError:
            return -1.0

    def due(self, hard: bool = False) -> bool:
        """Whether the records read so far are enough to flush (hard: the write must)."""
        records, documents = (
            (HARD_RECORDS, HARD_DOCUMENTS) if hard else (SOFT_RECORDS, SOFT_DOCUMENTS)
        )
        return len(self.segments) >= records or self.documents >= documents

    def documents_to_write(self) -> list[dict[str, Any]]:
        """The documents of the records, in order (none of them forgotten since)."""
        return [document for _, documents in self.segments for document in documents]

    def hide_on_disk(self, segments: list[Any]) -> None:
        """Delete, in a writer's segments, the documents the records forgot."""
        for segment in segments:
            for docnum in self.hidden.get(segment.segment_id(), ()):
                segment.delete_document(docnum)

    def _take(self, records: list[dict[str, Any]], disk: Any) -> None:
        """Records newly read: what they forget hidden, what they add one more segment
        (one for all: a new process reads the whole journal at once, and a segment costs
        most of its time whatever it holds)."""
        from vault_tool.search.in_memory import segment_of

        added: list[dict[str, Any]] = []
        for record in records:
            paths = set(record["forget"])
            if paths:  # hidden on disk (counted until a merge, as a deletion is); gone in memory
                for leaf, _ in disk.reader().leaf_readers():
                    found = _documents_of(leaf, paths) if leaf.segment() else set()
                    if found:
                        self.hidden.setdefault(leaf.segment().segment_id(), set()).update(found)
                for n, (_, documents) in enumerate(self.segments):
                    kept = [d for d in documents if d["path"] not in paths]
                    if len(kept) < len(documents):  # (the segment as a flush would write it)
                        self.segments[n] = (segment_of(kept) if kept else None, kept)
                        self.documents -= len(documents) - len(kept)
                self.segments = [(reader, docs) for reader, docs in self.segments if docs]
                added = [d for d in added if d["path"] not in paths]
            added += record["add"]
        if added:
            self.segments.append((segment_of(added), added))
            self.documents += len(added)
        self._view = None

    def _compose(self, disk: Any, ix: Any) -> Any:
        """A searcher of the disk's segment readers, each with a segment that hides what
        the records forget opened again with those deletions, and the records' segments."""
        from whoosh.reading import MultiReader, SegmentReader
        from whoosh.searching import Searcher

        for reader in self._masked:  # (the view they were made for is being replaced)
            reader.close()
        self._masked = []
        leaves = []
        for leaf, _ in disk.reader().leaf_readers():
            segment = leaf.segment()
            if segment is None:
                continue
            hidden = self.hidden.get(segment.segment_id())
            if hidden:
                masked = copy.deepcopy(segment)
                for docnum in hidden:
                    masked.delete_document(docnum)
                leaf = SegmentReader(ix.storage, leaf.schema, masked, generation=self.generation)
                self._masked.append(leaf)
            leaves.append(leaf)
        leaves += [reader for reader, _ in self.segments]
        return Searcher(MultiReader(leaves, generation=self.generation), fromindex=ix)


def _documents_of(leaf: Any, paths: set[str]) -> set[int]:
    """The live docnums of these files' documents in one segment reader."""
    from whoosh.reading import TermNotFound

    found: set[int] = set()
    for path in paths:
        with contextlib.suppress(TermNotFound):
            found.update(leaf.postings("path", path).all_ids())
    return found
