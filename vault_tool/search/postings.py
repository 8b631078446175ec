"""The index read through Whoosh's public reader: the values kept per reader, word counts,
the id and path columns, a word's documents.

A searcher's reader is one index generation (the next write makes a new one) and a
segment's reader one segment, which never changes once written; so what is read from one
is kept beside it (per_reader) as long as the reader lives.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from whoosh.searching import Searcher

# Words whose count in one segment is kept (per segment reader) before the counts are dropped.
_FREQUENCIES_KEPT = 50_000
# Fields whose words a segment holds are kept as a set, so that a word it lacks costs no
# lookup in Whoosh's term table (~20 us each, for each segment): fields with few words
# that a query asks mostly for words no document has (a note's link keys, a gloss's
# words: 99% of the link keys a query asks are missing)...
_TERM_SET_FIELDS = frozenset({"link_keys", "glosses"})
# ... and every field of a segment this small (the segments recent writes made): its set
# costs about what a hundred lookups do, once in the segment's life.
_TERM_SET_SEGMENT = 200

# reader -> name -> value: dropped with the reader.
_KEPT: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


def per_reader(reader: Any, name: str, make: Callable[[], Any]) -> Any:
    """The value kept under name for one of Whoosh's reader objects, made on first use."""
    kept = _KEPT.get(reader)
    if kept is None:
        kept = _KEPT[reader] = {}
    if name not in kept:
        kept[name] = make()
    return kept[name]


def docnums_with(searcher: Searcher, field_name: str, text: str) -> list[int]:
    """Docnums (live documents only) that have text in the field, in docnum order.

    Plain postings, not a scored search: a scored search costs ~0.7 ms each.
    """
    if not doc_frequency(searcher, field_name, text):  # (kept per segment: no lookup)
        return []
    return list(searcher.reader().postings(field_name, text).all_ids())


def columns(searcher: Searcher) -> dict[str, list[Any]]:
    """docnum -> memory_id and path, as lists, per reader (an index generation).

    Built from each segment's values, read whole once and kept per segment (a segment never
    changes; a new generation reuses the readers of its big segments): a lookup through
    Whoosh's column readers costs ~20 us, and ranking makes dozens per query.
    """
    reader = searcher.reader()

    def joined() -> dict[str, list[Any]]:
        made: dict[str, list[Any]] = {"memory_id": [], "path": []}
        for leaf, offset in reader.leaf_readers():
            for name, values in made.items():
                values += [None] * (offset - len(values))  # (not expected: segments abut)
                values += per_reader(leaf, f"column {name}", partial(_column_values, leaf, name))
        return made

    return per_reader(reader, "columns", joined)


def warm(searcher: Searcher, busy: Callable[[], bool]) -> None:
    """Read what every ranked query reads first, before one asks: the id and path columns,
    then each segment's words of the fields kept as sets (at 100,000 notes, ~150 ms of a
    first search), the sets stopping as soon as busy() (a call came in)."""
    columns(searcher)
    for leaf, _ in searcher.reader().leaf_readers():
        for field_name in sorted(_TERM_SET_FIELDS):
            if busy():
                return
            _term_set(leaf, field_name)


def _column_values(leaf: Any, name: str) -> list[Any]:
    size = leaf.doc_count_all()
    if not leaf.has_column(name):
        return [None] * size
    values = list(leaf.column_reader(name))
    return values + [None] * (size - len(values))


def doc_frequency(searcher: Searcher, field_name: str, word: str) -> int:
    """How many documents hold word in the field (deleted ones too, as Whoosh counts), kept
    per reader, from each segment's count (kept per segment: Whoosh looks the word up in
    every segment on each call, and a write makes a new reader of mostly the same ones)."""
    kept = per_reader(searcher.reader(), "doc frequency", dict)
    key = (field_name, word)
    if key not in kept:
        leaves = searcher.reader().leaf_readers()
        kept[key] = sum(leaf_frequency(leaf, field_name, word) for leaf, _ in leaves)
    return kept[key]


def leaf_frequency(leaf: Any, field_name: str, word: str) -> int:
    """How many documents of one segment hold word in the field (0: the segment has not
    got the word), kept per segment reader: a segment's postings never change."""
    kept = per_reader(leaf, "doc frequency here", dict)
    key = (field_name, word)
    found = kept.get(key)
    if found is None:
        held = _term_set(leaf, field_name)
        if held is not None and word not in held:
            return 0
        if len(kept) >= _FREQUENCIES_KEPT:
            kept.clear()
        found = kept[key] = leaf.doc_frequency(field_name, word)
    return found


def _term_set(leaf: Any, field_name: str) -> frozenset[str] | None:
    """Every word one segment holds in the field, where that is kept (see
    _TERM_SET_FIELDS); None where it is not."""
    if field_name not in _TERM_SET_FIELDS and leaf.doc_count_all() > _TERM_SET_SEGMENT:
        return None

    def words() -> frozenset[str]:
        if field_name not in leaf.indexed_field_names():
            return frozenset()
        return frozenset(leaf.field_terms(field_name))

    return per_reader(leaf, f"words of {field_name}", words)
