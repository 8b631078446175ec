"""BM25 over every document at once: a word's postings read through Whoosh's public reader,
kept per segment, and scored with numpy.

Every query wants every match scored (the count of matches is exact), and Whoosh's scored
search walks its matchers in Python, a few microseconds a posting: a word in half of a
10k vault costs a search 20-30 ms. A word's postings in a segment never change once the
segment is written (only the deletions beside it do), so they are read once, through the
matcher's public methods (ids, counts, and each document's field length), and kept; a
query then scores each word's postings as one numpy expression into a column of one
double per document, adds the columns, and zeroes what is deleted, filtered or hidden.

The scores are Whoosh's own BM25F (its idf and formula, K1 below, B 0.75): Whoosh's scored
search weighted by weighting() finds the same documents with the same scores
(tests/integration/test_search_bm25.py holds the two together).
"""

from __future__ import annotations

import heapq
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable
from math import log
from typing import TYPE_CHECKING, Any

import numpy as np

from vault_tool.search.postings import columns, doc_frequency, leaf_frequency

if TYPE_CHECKING:
    from whoosh.searching import Searcher

# BM25's term saturation: Whoosh's 1.2 let a word said often outweigh two words said once
# (bench/rare_words.py, two seeds: 0.9 found 207 notes of 240 by their rarer words, 1.2
# 202; the question set's nDCG@10 the same; 0.9 is also Anserini's default).
K1 = 0.9
# BM25's length normalisation: Whoosh's default.
B = 0.75
# Postings kept read, over all segments and words (12 bytes each): at most this many,
# about every posting of a 10k vault's `all` field (a few query words' at 100k).
KEPT_POSTINGS = 4_000_000
# The field lengths of this many (segment, field) kept, one float a document.
KEPT_LENGTHS = 32
# The postings of words in at least 1 / COMMON_DIVISOR of the documents are read ahead.
COMMON_DIVISOR = 20

_kept: OrderedDict[tuple[str, str, str], _Postings] = OrderedDict()
_held = [0]  # postings in _kept
_lengths_kept: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_mutex = threading.Lock()


def weighting() -> Any:
    """Whoosh's BM25F with K1: its own scored search weighted by it gives the figures of
    text_scores (the tests compare the two). Its idf is Whoosh's: Lucene's raised the
    question set's nDCG@10 by 0.009 but cut abstention precision from 0.86 to 0.70."""
    from whoosh.scoring import BM25F

    return BM25F(B=B, K1=K1)


class Scores:
    """docnum -> score of a query over one index generation; len() is how many it matched
    (a match always scores above 0: Whoosh's idf is over 0.3 and a count over 0)."""

    def __init__(self, values: np.ndarray) -> None:
        self.values = values

    def __len__(self) -> int:
        return int(np.count_nonzero(self.values))

    def matches(self) -> dict[int, float]:
        """docnum -> score of every match."""
        found = np.flatnonzero(self.values)
        return dict(zip(found.tolist(), self.values[found].tolist(), strict=True))


def text_scores(
    searcher: Searcher, field_name: str, words: list[str], allow: set | None, hidden: set | None
) -> Scores:
    """The BM25F score of the words in one field, for every live document that has one of
    them (in allow, if given; not in hidden)."""
    values = _summed(searcher, field_name, words)
    _only_allowed(searcher, values, allow, hidden)
    return Scores(values)


def with_forms(
    searcher: Searcher,
    field_name: str,
    scores: Scores,
    forms: dict[str, list[str]],
    weight: float,
    allow: set | None,
    hidden: set | None,
) -> Scores:
    """scores with related forms of the query's words (core/word_forms.py, word -> its
    forms) counted at weight, in the documents that lack the word itself: a memory saying
    both "owns" and "owner" is not found twice over by "owns"."""
    values = scores.values.copy()
    for word, related in forms.items():
        extra = text_scores(searcher, field_name, related, allow, hidden).values
        extra[holding(searcher, field_name, [word])] = 0.0
        values += weight * extra
    return Scores(values)


def added_within(
    searcher: Searcher,
    field_name: str,
    scores: Scores,
    words: list[str],
    within: set[int],
    allow: set | None,
    hidden: set | None,
) -> Scores:
    """scores with the words' scores added in the documents within (in allow, if given; not
    in hidden) only: a document elsewhere is not matched by them."""
    kept = within if allow is None else within & allow
    return Scores(scores.values + text_scores(searcher, field_name, words, kept, hidden).values)


def holding(searcher: Searcher, field_name: str, words: list[str]) -> np.ndarray:
    """docnum -> whether the document holds one of the words in the field."""
    return _summed(searcher, field_name, words) > 0


def add_scores(
    searcher: Searcher, field_name: str, words: list[str], scores: dict[int, float]
) -> dict[int, float]:
    """scores with the BM25F score of more words added, for those documents only."""
    added = _summed(searcher, field_name, words)
    return {docnum: score + float(added[docnum]) for docnum, score in scores.items()}


def top_scored(
    searcher: Searcher, scores: Scores | dict[int, float], n: int
) -> list[tuple[int, float]]:
    """The n best (docnum, score), best first, equal scores by path.

    By path, not by docnum (as Whoosh's collector does): docnums depend on which indexing
    process took a file during a reindex, and the same vault must rank the same way after
    every reindex.
    """
    if isinstance(scores, Scores):
        values = scores.values
        matched = np.flatnonzero(values)
        if len(matched) > n:  # (every score equal to the n-th best is a candidate)
            threshold = np.partition(values[matched], len(matched) - n)[len(matched) - n]
            matched = matched[values[matched] >= threshold]
        chosen = list(zip(matched.tolist(), values[matched].tolist(), strict=True))
    elif len(scores) > n:
        threshold = heapq.nlargest(n, scores.values())[-1]
        chosen = [item for item in scores.items() if item[1] >= threshold]
    else:
        chosen = list(scores.items())
    path = columns(searcher)["path"]
    chosen.sort(key=lambda item: (-item[1], path[item[0]]))
    return chosen[:n]


def idf(searcher: Searcher, field_name: str, word: str) -> float:
    """Whoosh's idf (WeightingModel.idf), from the kept document frequencies."""
    parent = searcher.get_parent()
    return log(parent.doc_count_all() / (doc_frequency(parent, field_name, word) + 1)) + 1


def warm(searcher: Searcher, busy: Callable[[], bool]) -> int:
    """Read the postings of the index's common words (in at least 1 / COMMON_DIVISOR of
    the documents: the costliest to read, and most of a query's first-asked words) before
    a query asks, one word at a time, stopping as soon as busy() (a call came in); how
    many words were read."""
    reader = searcher.reader()
    size = reader.doc_count_all()
    frequency: Counter = Counter()
    for leaf, _ in reader.leaf_readers():  # (per segment: merged, 10x slower)
        if busy():
            return 0
        if "all" in leaf.indexed_field_names():
            for term, info in leaf.iter_field("all"):
                frequency[term] += info.doc_frequency()
    read = 0
    for term, df in frequency.most_common():
        if df * COMMON_DIVISOR < size or busy():
            break
        word = term.decode() if isinstance(term, bytes) else term
        for leaf, _ in reader.leaf_readers():
            if leaf_frequency(leaf, "all", word):
                _postings(leaf, "all", word)
        read += 1
    return read


class _Postings:
    """A word's postings in one segment as read: docnums, counts, the documents' field
    lengths, and the deletions the segment had when they were read (left out)."""

    __slots__ = ("deleted", "docnums", "lengths", "tfs")

    def __init__(self, docnums: np.ndarray, tfs: np.ndarray, lengths: np.ndarray, deleted):
        self.docnums, self.tfs, self.lengths, self.deleted = docnums, tfs, lengths, deleted


def _summed(searcher: Searcher, field_name: str, words: list[str]) -> np.ndarray:
    """docnum -> the sum of the words' BM25F scores (deleted documents' too)."""
    reader = searcher.reader()
    values = np.zeros(reader.doc_count_all())
    avgfl = searcher.avg_field_length(field_name) or 1
    for word in words:
        word_idf = idf(searcher, field_name, word)
        for leaf, offset in reader.leaf_readers():
            if not leaf_frequency(leaf, field_name, word):
                continue
            found = _postings(leaf, field_name, word)
            tfs, lengths = found.tfs.astype(np.float64), found.lengths.astype(np.float64)
            # whoosh.scoring.bm25, term for term
            scores = word_idf * ((tfs * (K1 + 1)) / (tfs + K1 * ((1 - B) + B * lengths / avgfl)))
            values[found.docnums + offset] += scores
    return values


def _only_allowed(
    searcher: Searcher, values: np.ndarray, allow: set | None, hidden: set | None
) -> None:
    """Zero, in place, the scores of deleted documents, those not in allow, those hidden."""
    for leaf, offset in searcher.reader().leaf_readers():
        if leaf.has_deletions():
            dead = np.fromiter(leaf.segment().deleted_docs(), dtype=np.int64)
            values[dead + offset] = 0.0
    if allow is not None:
        kept = np.zeros(len(values), dtype=bool)
        kept[np.fromiter(allow, dtype=np.int64, count=len(allow))] = True
        values[~kept] = 0.0
    if hidden:
        values[np.fromiter(hidden, dtype=np.int64, count=len(hidden))] = 0.0


def _postings(leaf: Any, field_name: str, word: str) -> _Postings:
    """The postings of word in one segment reader, read once per segment and kept (at most
    KEPT_POSTINGS over all words; the least recently used dropped first). Kept ones are
    read again if a deletion they left out is undone (the recent writes' journal hides
    documents for a while: search/recent.py)."""
    key = (leaf.segment().segment_id(), field_name, word)
    deleted = frozenset(leaf.segment().deleted_docs()) if leaf.has_deletions() else frozenset()
    with _mutex:
        found = _kept.get(key)
        if found is not None and found.deleted <= deleted:
            _kept.move_to_end(key)
            return found
    matcher = leaf.postings(field_name, word)  # (deleted documents left out)
    docnums, tfs = [], []
    while matcher.is_active():
        docnums.append(matcher.id())
        tfs.append(matcher.weight())
        matcher.next()
    at = np.array(docnums, dtype=np.int32)
    tf = np.array(tfs, dtype=np.float32)
    found = _Postings(at, tf, _field_lengths(leaf, field_name)[at], deleted)
    limit = KEPT_POSTINGS
    with _mutex:
        previous = _kept.pop(key, None)
        _held[0] += len(docnums) - (len(previous.docnums) if previous else 0)
        _kept[key] = found
        while _held[0] > limit and len(_kept) > 1:
            _, dropped = _kept.popitem(last=False)
            _held[0] -= len(dropped.docnums)
    return found


def _field_lengths(leaf: Any, field_name: str) -> np.ndarray:
    """docnum -> the field's length in one segment, read once and kept (a few segments':
    a posting's length is read with it, so only new segments are asked)."""
    key = (leaf.segment().segment_id(), field_name)
    with _mutex:
        found = _lengths_kept.get(key)
        if found is not None:
            _lengths_kept.move_to_end(key)
            return found
    length = leaf.doc_field_length
    found = np.array(
        [length(docnum, field_name, 1) for docnum in range(leaf.doc_count_all())],
        dtype=np.float32,
    )
    with _mutex:
        _lengths_kept[key] = found
        while len(_lengths_kept) > KEPT_LENGTHS:
            _lengths_kept.popitem(last=False)
    return found
