"""Fast paths over Whoosh's internals: BM25F straight from posting blocks, field lengths.

Every query wants every match scored (total_matches is exact), and Whoosh's matcher and
collector machinery cost several times as much per posting as reading its W3 posting
blocks whole. So this module reads private parts of Whoosh 2.7: the W3 leaf matcher's
blocks, the filter that hides deleted documents, the one-byte length column; and it keeps
values on reader objects (per_reader). Besides index.py's reuse of segment readers, no
other module touches Whoosh's private parts. Each is pinned by a test
(tests/integration/test_search_postings.py) that fails when the part it relies on changes.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from math import log
from typing import Any

# Field lengths of recently used segments: a segment's lengths never change, and a new
# searcher (after every write) opens new readers of the same big segments.
_LENGTHS: OrderedDict[tuple[str, str], Any] = OrderedDict()
_LENGTHS_KEPT = 32
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
# BM25's term saturation: Whoosh's 1.2 let a word said often outweigh two words said once
# (bench/rare_words.py, two seeds: 0.9 found 207 notes of 240 by their rarer words, 1.2
# 202; the question set's nDCG@10 the same; 0.9 is also Anserini's default).
K1 = 0.9
# The attribute of a reader object under which per_reader keeps its values.
_KEPT = "_vault_kept"

# (segment reader, its docnum offset, word) -> (docnums, weights, deleted docnums or None)
# of the posting blocks to score.
Blocks = Callable[[Any, int, str], Iterable[tuple[Any, Any, set | None]]]


def per_reader(reader: Any, name: str, make: Callable[[], Any]) -> Any:
    """The value kept under name on one of Whoosh's reader objects, made on first use.

    What is read from a reader holds as long as the reader does: a searcher's reader is
    one index generation (the next write makes a new one), a segment's per-document
    reader one segment, which never changes once written.
    """
    kept = reader.__dict__.get(_KEPT)
    if kept is None:
        kept = reader.__dict__[_KEPT] = {}
    if name not in kept:
        kept[name] = make()
    return kept[name]


def bm25_scores(
    searcher: Any, field_name: str, words: list[str], allow: set | None, hidden: set | None
) -> dict[int, float]:
    """docnum -> BM25F score of the words in one field, for every live document that has
    one of them (in allow, if given; not in hidden).

    The same figures as Whoosh's scored search weighted by weighting() (same idf, field
    lengths and formula), read block by block straight from the postings.
    """

    def every(reader: Any, offset: int, word: str) -> Iterator[tuple[Any, Any, set | None]]:
        return posting_blocks(reader.postings(field_name, word))

    return _add_scores(searcher, field_name, words, {}, every, allow, hidden)


def add_bm25(
    searcher: Any, field_name: str, words: list[str], scores: dict[int, float]
) -> dict[int, float]:
    """scores with the BM25F score of more words added, for those documents only.

    Reads only the posting blocks that can hold one of the documents, so a word in most of
    the vault costs a few blocks, not its whole postings list (as bm25_scores would).
    """

    def of_candidates(reader: Any, offset: int, word: str) -> list[tuple[Any, Any, None]]:
        end = offset + reader.doc_count_all()
        local = sorted(d - offset for d in scores if offset <= d < end)
        found = list(postings_of(reader.postings(field_name, word), local)) if local else []
        return [([docnum for docnum, _ in found], [tf for _, tf in found], None)]

    return _add_scores(searcher, field_name, words, dict(scores), of_candidates)


def _add_scores(
    searcher: Any,
    field_name: str,
    words: list[str],
    scores: dict[int, float],
    blocks: Blocks,
    allow: set | None = None,
    hidden: set | None = None,
) -> dict[int, float]:
    """scores, with each word's BM25F score added for the live postings of blocks(reader,
    offset, word) (in allow, if given; not in hidden)."""
    weighting = searcher.weighting
    b = weighting._field_B.get(field_name, weighting.B)
    k1 = K1
    k1_plus_1, one_minus_b = k1 + 1, 1 - b
    avgfl = searcher.avg_field_length(field_name) or 1
    get = scores.get
    for word in words:
        word_idf = idf(searcher, field_name, word)
        for reader, offset in searcher.reader().leaf_readers():
            if not leaf_frequency(reader, field_name, word):
                continue
            lengths = field_lengths(reader, field_name)
            for docnums, weights, deleted in blocks(reader, offset, word):
                for docnum, tf in zip(docnums, weights, strict=True):
                    total = docnum + offset
                    if (
                        (deleted is None or docnum not in deleted)
                        and (allow is None or total in allow)
                        and not (hidden and total in hidden)
                    ):
                        fl = lengths[docnum]
                        # whoosh.scoring.bm25, term for term, so the floats are the same
                        score = word_idf * (
                            (tf * k1_plus_1) / (tf + k1 * (one_minus_b + b * fl / avgfl))
                        )
                        scores[total] = get(total, 0.0) + score
    return scores


def weighting() -> Any:
    """Whoosh's BM25F with K1: Whoosh's own scored search weighted by it gives the figures
    of the fast paths here (the tests compare the two). Its idf is Whoosh's: Lucene's
    raised the question set's nDCG@10 by 0.009 but cut abstention precision from 0.86 to
    0.70 and made feedback on the tuning questions cost the held-out ones 0.024."""
    from whoosh.scoring import BM25F

    return BM25F(K1=K1)


def leaf_matcher(matcher: Any) -> tuple[Any, set | None, bool]:
    """(the matcher under the filter that hides deleted documents, their docnums or None,
    whether its W3 posting blocks can be read directly)."""
    from whoosh.codec.whoosh3 import W3LeafMatcher
    from whoosh.matching.wrappers import FilterMatcher

    deleted = None
    if isinstance(matcher, FilterMatcher) and matcher._exclude:
        deleted, matcher = matcher._ids, matcher.child
    blocks = isinstance(matcher, W3LeafMatcher) and hasattr(matcher, "_read_weights")
    return matcher, deleted, blocks


def posting_blocks(matcher: Any) -> Iterator[tuple[Any, Any, set | None]]:
    """(docnums, weights, deleted docnums or None) of each stored block of a term's postings.

    Reads Whoosh's W3 posting blocks whole (one Python call per block rather than four
    per posting); any other matcher is walked one posting at a time.
    """
    matcher, deleted, blocks = leaf_matcher(matcher)
    if not blocks:
        while matcher.is_active():
            yield (matcher.id(),), (matcher.weight(),), deleted
            matcher.next()
        return
    while matcher.is_active():
        yield _block_ids(matcher), _block_weights(matcher), deleted
        matcher._next_block()


def postings_of(matcher: Any, docnums: list[int]) -> Iterator[tuple[int, float]]:
    """(docnum, weight) of the postings of the given (sorted, live) docnums.

    Whoosh's W3 blocks are skipped by their last id without being decoded; any other
    matcher is moved with skip_to.
    """
    # (the filter only hides deleted documents, and these are live)
    matcher, _, blocks = leaf_matcher(matcher)
    if not blocks:
        for docnum in docnums:
            if not matcher.is_active():
                return
            matcher.skip_to(docnum)
            if matcher.is_active() and matcher.id() == docnum:
                yield docnum, matcher.weight()
        return
    i = 0
    while i < len(docnums) and matcher.is_active():
        if matcher.block_max_id() >= docnums[i]:
            ids = _block_ids(matcher)
            while i < len(docnums) and docnums[i] <= ids[-1]:
                at = bisect_left(ids, docnums[i])
                if at < len(ids) and ids[at] == docnums[i]:
                    yield docnums[i], _block_weights(matcher)[at]
                i += 1
        matcher._next_block()


def _block_ids(matcher: Any) -> Any:
    if matcher._ids is None:
        matcher._read_ids()
    return matcher._ids


def _block_weights(matcher: Any) -> Any:
    if matcher._weights is None:
        matcher._read_weights()
    return matcher._weights


def field_lengths(reader: Any, field_name: str) -> Any:
    """docnum -> length of the field in one segment, read in one go and kept per segment.

    Whoosh stores a field's lengths as one byte per document; reading them at once spares
    four Python calls per posting. Falls back to Whoosh's own per-document lookup if the
    codec is not the one this was written for.
    """
    try:
        key = (reader.segment().segid, field_name)
    except AttributeError:
        return _PerDocLengths(reader, field_name)
    table = _LENGTHS.get(key)
    if table is not None:
        _LENGTHS.move_to_end(key)
        return table
    from vault_tool.search.posting_blocks import lengths_in_column

    try:
        table = lengths_in_column(reader._perdoc, field_name, reader.doc_count_all(), None)
    except (AttributeError, TypeError):
        table = None
    if table is None:
        return _PerDocLengths(reader, field_name)
    _LENGTHS[key] = table
    while len(_LENGTHS) > _LENGTHS_KEPT:
        _LENGTHS.popitem(last=False)
    return table


class _PerDocLengths:
    """Whoosh's own per-document length lookup, indexable like a list."""

    def __init__(self, reader: Any, field_name: str) -> None:
        self.reader, self.field_name = reader, field_name

    def __getitem__(self, docnum: int) -> Any:
        return self.reader.doc_field_length(docnum, self.field_name, 1)


def docnums_with(searcher: Any, field_name: str, text: str) -> list[int]:
    """Docnums (live documents only) that have text in the field, in docnum order.

    Plain postings, not a scored search: a scored search costs ~0.7 ms each.
    """
    if not doc_frequency(searcher, field_name, text):  # (kept per segment: no lookup)
        return []
    return list(searcher.reader().postings(field_name, text).all_ids())


def columns(searcher: Any) -> dict[str, list[Any]]:
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


def warm(searcher: Any, busy: Callable[[], bool]) -> None:
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
    values = _texts_in_one_read(leaf, name)
    if values is None:
        values = list(leaf.column_reader(name))
    return values + [None] * (size - len(values))


def _texts_in_one_read(leaf: Any, name: str) -> list[str] | None:
    """The values of a column of texts (an ID field's: memory_id, path), the bytes of all
    of them read at once and cut where Whoosh's reader would cut them; None for another
    kind of column. Whoosh reads each value with a seek and a read of its own: the two
    columns of a 100,000-note segment took ~300 ms, most of a first search."""
    from whoosh.columns import VarBytesColumn
    from whoosh.fields import FieldType

    kind = type(leaf.schema[name])
    plain = (kind.from_column_value, kind.from_bytes) == (
        FieldType.from_column_value,
        FieldType.from_bytes,
    )  # (a value is its bytes as UTF-8)
    raw = leaf.column_reader(name, translate=False)
    if not plain or type(raw) is not VarBytesColumn.Reader:
        return None
    lengths = raw._lengths
    data = raw._dbfile.get(raw._basepos, sum(lengths))
    values, at = [], 0
    for length in lengths:
        values.append(data[at : at + length].decode("utf-8"))
        at += length
    return values


def doc_frequency(searcher: Any, field_name: str, word: str) -> int:
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


def idf(searcher: Any, field_name: str, word: str) -> float:
    """Whoosh's idf (WeightingModel.idf), from the kept document frequencies."""
    parent = searcher.get_parent()
    return log(parent.doc_count_all() / (doc_frequency(parent, field_name, word) + 1)) + 1


def top_scored(searcher: Any, scores: Any, n: int) -> list[tuple[int, float]]:
    """The n best (docnum, score), best first, equal scores by path.

    By path, not by docnum (as Whoosh's collector did): docnums depend on which indexing
    process took a file during a reindex, and the same vault must rank the same way after
    every reindex.
    """
    if hasattr(scores, "top"):  # a whole generation's scores (search/impacts.py)
        return scores.top(n, columns(searcher)["path"])
    if len(scores) > n:
        threshold = heapq.nlargest(n, scores.values())[-1]
        chosen = [item for item in scores.items() if item[1] >= threshold]
    else:
        chosen = list(scores.items())
    path = columns(searcher)["path"]
    chosen.sort(key=lambda item: (-item[1], path[item[0]]))
    return chosen[:n]
