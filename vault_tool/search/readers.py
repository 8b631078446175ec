"""Searchers of the index's latest commit: kept readers reused, damaged segments left out.

Opening a segment costs 1 ms at 10k and 10 ms at 100k, and after a write most segments
are still there unchanged, so a new searcher keeps the old one's reader of each segment
still in the index with the same deletions (one whose deletions changed is opened again).
Whoosh's own Searcher.refresh() is not used: it keeps readers of segments a merge removed
and leaves kept readers with their old deletions, so it can return old versions of updated
documents.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from vault_tool.search.disk import read_toc

if TYPE_CHECKING:
    from whoosh.searching import Searcher

# Opens of a segment raced by a merge that removes its files.
TOC_ATTEMPTS = 10


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
            leaf = reusable.get(segment.segment_id())
            if leaf is None or segment_state(leaf.segment()) != segment_state(segment):
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


def segment_state(segment: Any) -> tuple[str, int] | None:
    """A segment's id and deletion count: what a commit can change of it."""
    return (segment.segment_id(), segment.deleted_count()) if segment is not None else None


def _said(problem: BaseException) -> str:
    return f"{type(problem).__name__}: {problem}"[:200]


def sees_what_writer_sees(searcher: Searcher, writer: Any) -> bool:
    """Whether searcher reads the segments writer writes to, with the same deletions (then
    its document numbers are the writer's)."""
    ours = [segment_state(leaf.segment()) for leaf, _ in searcher.reader().leaf_readers()]
    return ours == [segment_state(s) for s in getattr(writer, "segments", [None])]
