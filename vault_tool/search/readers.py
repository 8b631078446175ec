"""Searchers of the index's latest commit: kept readers reused, damaged segments left out.

Opening a segment costs 1 ms at 10k and 10 ms at 100k, and after a write every segment but
the new one is still there (at most with more deletions), so a new searcher keeps the old
one's reader of each segment still in the index. Whoosh's own Searcher.refresh() is not
used: it keeps readers of segments a merge removed and leaves kept readers with their old
deletions, so it can return old versions of updated documents.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from vault_tool.search.postings import per_reader

# Reads of the index's table of contents raced by a merge that removes files (as Whoosh).
TOC_ATTEMPTS = 10


def remember_missing_columns() -> None:
    """Make Whoosh's per-document reader remember what a segment's length columns hold.

    Writing postings asks for every posting's field length, a sixth of a reindex: for
    fields without lengths (ID, KEYWORD, NUMERIC) the reader then checked the file system
    each time, because it caches only the columns it found (290,000 stat calls in a
    reindex of 3,000 files), and for the others read one byte from the file through four
    calls. A segment never changes once written, so a missing column stays missing and a
    field's lengths (a byte a document) are read whole once.
    """
    from whoosh.codec import whoosh3
    from whoosh.columns import NumericColumn
    from whoosh.util.numeric import byte_to_length

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

    def whole_lengths(self: Any, fieldname: str) -> Any:
        column = cached_reader(self, whoosh3._lenfield(fieldname), whoosh3.LENGTHS_COLUMN)
        if type(column) is not NumericColumn.Reader or column._fixedlen != 1:
            return column  # (not the one-byte column this reads whole: read as Whoosh does)
        return column._dbfile.get(column._basepos, column._count)

    def doc_field_length(self: Any, docnum: int, fieldname: str, default: int = 0) -> Any:
        if docnum > self._doccount:
            raise IndexError(f"Asked for docnum {docnum!r} of {self._doccount}")
        table = per_reader(self, "field lengths", dict)
        lengths = table.get(fieldname, table)  # (the table itself: not read yet)
        if lengths is table:
            lengths = table[fieldname] = whole_lengths(self, fieldname)
        if lengths is None:
            return default
        if isinstance(lengths, bytes):
            lbyte = lengths[docnum] if docnum < len(lengths) else 0
        else:
            lbyte = lengths[docnum]
        # (Whoosh's own answer for a length byte of 0 is None, kept as it is)
        return byte_to_length(lbyte) if lbyte else None

    reader_class._cached_reader = cached_reader
    reader_class.whoosh_doc_field_length = reader_class.doc_field_length  # (tests compare)
    reader_class.doc_field_length = doc_field_length
    reader_class._vault_patched = True


def reopen(ix: Any, old: Any, damaged: Callable[[str], None]) -> Any:
    """A searcher of ix's latest commit that keeps old's reader of every segment still in
    the index. A segment (or a TOC) that cannot be read is reported to damaged and left out:
    the searcher answers from the rest (with no segment at all, from nothing)."""
    from whoosh.reading import EmptyReader, MultiReader
    from whoosh.searching import Searcher

    from vault_tool.search.disk import DAMAGE
    from vault_tool.search.documents import whoosh_schema

    reusable: dict[str, Any] = {}
    if old is not None:
        for leaf, _ in old.reader().leaf_readers():
            if leaf.segment() is not None:
                reusable[leaf.segment().segment_id()] = leaf
    toc, readers = _open_segments(ix, reusable, damaged)
    for leaf in reusable.values():
        if all(leaf is not kept for kept in readers):
            with contextlib.suppress(*DAMAGE):  # (its files may be gone)
                leaf.close()
    if not readers:
        # An EmptyReader has no generation: the next call looks at the TOC again.
        return Searcher(EmptyReader(toc.schema if toc else whoosh_schema()), fromindex=ix)
    # Always a MultiReader: it carries this generation, which up_to_date() compares.
    return Searcher(MultiReader(readers, generation=toc.generation), fromindex=ix)


def _open_segments(
    ix: Any, reusable: dict[str, Any], damaged: Callable[[str], None]
) -> tuple[Any, list[Any]]:
    """The latest TOC (None if unreadable) and a reader of each of its readable segments."""
    from whoosh.reading import SegmentReader

    from vault_tool.search.disk import DAMAGE, TOC_DAMAGE

    attempt = 1
    while True:
        try:
            toc = read_toc(ix)
        except TOC_DAMAGE as problem:
            damaged(f"its table of contents cannot be read ({_said(problem)})")
            return None, []
        readers, opened, missing = [], [], []
        for segment in toc.segments:
            leaf = rebound(reusable.get(segment.segment_id()), segment)
            if leaf is None:
                try:
                    leaf = SegmentReader(ix.storage, toc.schema, segment, generation=toc.generation)
                except FileNotFoundError:
                    missing.append(segment)
                    continue
                except DAMAGE as problem:
                    damaged(f"segment {segment.segment_id()} cannot be read ({_said(problem)})")
                    continue
                opened.append(leaf)
            readers.append(leaf)
        if not missing:
            return toc, readers
        if attempt == TOC_ATTEMPTS:
            # Gone for good, not removed by a merge between our TOC read and open.
            for segment in missing:
                damaged(f"segment {segment.segment_id()} is missing")
            return toc, readers
        for leaf in opened:
            leaf.close()
        attempt += 1
        time.sleep(0.05)


def read_toc(ix: Any) -> Any:
    """ix's latest table of contents. Another process's commit deletes the TOC it replaces,
    so one that vanishes between listing and opening is read again (the newer one)."""
    for _ in range(TOC_ATTEMPTS - 1):
        try:
            return ix._read_toc()
        except FileNotFoundError:
            time.sleep(0.01)
    return ix._read_toc()


def segment_state(segment: Any) -> tuple[str, int] | None:
    """A segment's id and deletion count: what a commit can change of it."""
    return (segment.segment_id(), segment.deleted_count()) if segment is not None else None


def rebound(leaf: Any, segment: Any) -> Any:
    """leaf, made to read this segment's deletions; None when that cannot be done.

    Deletions are the only thing of a segment a commit changes. Whoosh's segment reader
    and per-document reader read them from the segment object they hold, and the reader
    caches the set it filters postings with (deleted_docs_set) until it is dropped.
    """
    if leaf is None or segment_state(leaf.segment()) == segment_state(segment):
        return leaf
    perdoc = getattr(leaf, "_perdoc", None)
    if not hasattr(leaf, "_segment") or not hasattr(perdoc, "_segment"):
        return None  # (closed by the caller with the other readers it does not keep)
    leaf._segment = perdoc._segment = segment
    leaf.__dict__.pop("deleted_docs_set", None)
    return leaf


def _said(problem: BaseException) -> str:
    return f"{type(problem).__name__}: {problem}"[:200]


def sees_what_writer_sees(searcher: Any, writer: Any) -> bool:
    """Whether searcher reads the segments writer writes to, with the same deletions (then
    its document numbers are the writer's)."""
    ours = [segment_state(leaf.segment()) for leaf, _ in searcher.reader().leaf_readers()]
    return ours == [segment_state(s) for s in getattr(writer, "segments", [None])]
