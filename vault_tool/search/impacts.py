"""BM25 without walking postings on every query: each word's scores kept per index
generation, a common word's as a column of doubles added up in C.

Scoring posting by posting costs about half a microsecond each in Python, so a query of
four words that are each in most of a 10k vault took 20 ms however few hits it returns.
A word's score in a document depends only on the generation (its idf, the average field
length) and the document, so it is computed once per generation: for a word in at least
1 / COMMON_DIVISOR of the documents, as one double per docnum (0.0 where the word is not,
or the document is deleted), which a query adds up with map(operator.add) (numpy in a
large vault) and counts with array.count, loops in C; a one-word query takes its best from
the column's matches sorted once (_ranked); for a rarer word, as a dict of its postings'
scores (word_scores), merged. Both are scored from the word's postings as decoded.py keeps
them per segment.

The floats are those of postings.bm25_scores: it adds a document's word scores in the
query's word order starting from 0.0, and so does this (0.0 + s == s and s + 0.0 == s);
a word absent from a document adds 0.0 here and nothing there. A matched document always
has a score above 0 (Whoosh's BM25 idf is over 0.3 and a posting's weight over 0), which
is what the count of matches relies on; a column that would break it is not made.
tests/integration/test_search_columns.py pins the ranking to bm25_scores's, bit for bit.
"""

from __future__ import annotations

import heapq
import operator
from array import array
from collections import Counter, OrderedDict
from collections.abc import Callable
from functools import partial
from itertools import compress
from typing import Any

from vault_tool.search import decoded, sparse_columns
from vault_tool.search.postings import add_bm25, bm25_scores, columns, doc_frequency, per_reader

# A word in at least 1 / COMMON_DIVISOR of the documents is scored as a column...
COMMON_DIVISOR = 20
# ... in a vault of at least this many documents: below, walking postings costs little.
COLUMNS_FROM = 2000
# The columns kept per generation hold at most this many doubles (16 MB; the order of a
# column's matches as much again): 200 words at 10k. A vault of decoded.NUMPY_FROM or more
# keeps them sparse (sparse_columns.py). The least recently used is dropped for a word
# asked for more often in this generation (_column).
KEPT_DOUBLES = 1 << 21
# The scores of rarer words kept per generation: at most this many (docnum, score), ~10 MB.
KEPT_POSTINGS = 100_000


class ColumnScores:
    """docnum -> score of a query over a whole generation; len() is how many it matched.

    ranked, when the scores are one word's column (filtered), gives that column's matches
    in top_scored's order, so the best n are the first n the filters leave.
    """

    def __init__(
        self, values: array, matched: int, ranked: Callable[[], array] | None = None
    ) -> None:
        self.values, self.matched, self.ranked = values, matched, ranked

    def __len__(self) -> int:
        return self.matched

    def matches(self) -> dict[int, float]:
        """docnum -> score of every match (the filters leave)."""
        return {docnum: value for docnum, value in enumerate(self.values) if value}

    def top(self, n: int, path: Any) -> list[tuple[int, float]]:
        """The n best (docnum, score), best first, equal scores by path (as top_scored)."""
        values = self.values
        if self.ranked is not None:
            best = []
            for docnum in self.ranked():
                if values[docnum]:  # (0.0: a match the filters left out)
                    best.append((docnum, values[docnum]))
                    if len(best) == n:
                        break
            return best
        if len(values) >= decoded.NUMPY_FROM:
            chosen = sparse_columns.best(values, n, self.matched)
        elif self.matched > n:
            threshold = heapq.nlargest(n, values)[-1]
            chosen = compress(range(len(values)), map(threshold.__le__, values))
        else:
            chosen = compress(range(len(values)), values)  # (0.0, unmatched, is false)
        best = [(docnum, values[docnum]) for docnum in chosen]
        best.sort(key=lambda item: (-item[1], path[item[0]]))
        return best[:n]


def text_scores(
    searcher: Any, field_name: str, words: list[str], allow: set | None, hidden: set | None
) -> dict[int, float] | ColumnScores:
    """docnum -> BM25F score of the words in one field, for every live document that has
    one of them (in allow, if given; not in hidden): postings.bm25_scores's figures, by
    column when a word is common in a large vault."""
    if worth_columns(searcher, field_name, words):
        return column_scores(searcher, field_name, words, allow, hidden)
    return sparse_scores(searcher, field_name, words, allow, hidden)


def sparse_scores(
    searcher: Any, field_name: str, words: list[str], allow: set | None, hidden: set | None
) -> dict[int, float]:
    """text_scores from each word's scores of this generation (word_scores), merged: a
    document's sum is built in the words' order from 0.0, as bm25_scores builds it."""
    scores: dict[int, float] = {}
    for word in words:
        found = word_scores(searcher, field_name, word)
        if not scores:
            scores = dict(found)  # (0.0 + s == s)
            continue
        both = scores.keys() & found.keys()
        scores = {**found, **scores}  # a document in both keeps its sum so far...
        for docnum in both:
            scores[docnum] += found[docnum]  # ... and gets this word's score added to it
    return _filtered(scores, allow, hidden)


def with_forms(
    searcher: Any,
    field_name: str,
    scores: dict[int, float] | ColumnScores,
    forms: dict[str, list[str]],
    weight: float,
    allow: set | None,
    hidden: set | None,
) -> dict[int, float] | ColumnScores:
    """scores with related forms of the query's words (core/word_forms.py, word -> its
    forms) counted at weight, in the documents that lack the word itself: a memory saying
    both "owns" and "owner" is not found twice over by "owns"."""
    extra: dict[int, float] = {}
    for word, related in forms.items():
        has_word = word_scores(searcher, field_name, word)
        for docnum, score in sparse_scores(searcher, field_name, related, allow, hidden).items():
            if docnum not in has_word:
                extra[docnum] = extra.get(docnum, 0.0) + weight * score
    if not extra:
        return scores
    if isinstance(scores, dict):
        merged = dict(scores)
        for docnum, score in extra.items():
            merged[docnum] = merged.get(docnum, 0.0) + score
        return merged
    values = array("d", scores.values)  # (a copy: a one-word total is the kept column)
    for docnum, score in extra.items():
        values[docnum] += score
    return ColumnScores(values, len(values) - values.count(0.0))


def _filtered(scores: dict[int, float], allow: set | None, hidden: set | None) -> dict:
    if allow is not None:
        if len(allow) < len(scores):
            scores = {docnum: scores[docnum] for docnum in allow if docnum in scores}
        else:
            scores = {docnum: score for docnum, score in scores.items() if docnum in allow}
    if hidden:
        for docnum in hidden & scores.keys():
            del scores[docnum]
    return scores


def word_scores(searcher: Any, field_name: str, word: str) -> dict[int, float]:
    """docnum -> BM25F score of one word, for every live document that has it: read from
    the postings once per generation and kept (at most KEPT_POSTINGS of them, the least
    recently used word dropped first). The caller must not change it."""
    kept: OrderedDict = per_reader(searcher.reader(), "word scores", OrderedDict)
    key = (field_name, word)
    if key in kept:
        kept.move_to_end(key)
        return kept[key]
    found = _scored(searcher, field_name, word)
    kept[key] = found
    held = per_reader(searcher.reader(), "word scores held", lambda: [0])
    held[0] += len(found)
    while held[0] > KEPT_POSTINGS and len(kept) > 1:
        _, dropped = kept.popitem(last=False)
        held[0] -= len(dropped)
    return found


def add_scores(
    searcher: Any, field_name: str, words: list[str], scores: dict[int, float]
) -> dict[int, float]:
    """scores with the BM25F score of more words added, for those documents only: as
    postings.add_bm25, a common word's from its column (one lookup per document, where
    add_bm25 decodes every posting block that holds one of them)."""
    scores = dict(scores)
    asked = per_reader(searcher.reader(), "asked to add", Counter)
    for word in words:
        # A column costs a walk of the word's postings: made when the word comes back in
        # this generation, not for the first query after a write (add_bm25 reads less).
        asked[field_name, word] += 1
        again = asked[field_name, word] > 1 or (field_name, word) in _kept(searcher)
        column = _column(searcher, field_name, word) if again and _large(searcher) else None
        if column is None:
            scores = add_bm25(searcher, field_name, [word], scores)
            continue
        for docnum, score in scores.items():
            if column[docnum]:  # (add_bm25 adds nothing for a document without the word)
                scores[docnum] = score + column[docnum]
    return scores


def _large(searcher: Any) -> bool:
    return searcher.doc_count_all() >= COLUMNS_FROM


def worth_columns(searcher: Any, field_name: str, words: list[str]) -> bool:
    """Whether a word of the query is in enough of a large enough vault to score by column."""
    size = searcher.doc_count_all()
    if not _large(searcher):
        return False
    return any(doc_frequency(searcher, field_name, w) * COMMON_DIVISOR >= size for w in words)


def column_scores(
    searcher: Any, field_name: str, words: list[str], allow: set | None, hidden: set | None
) -> ColumnScores:
    """text_scores by column: the common words' columns, the others' postings added in."""
    size = searcher.doc_count_all()
    total = array("d", bytes(8 * size))
    column = None
    for n, word in enumerate(words):
        column = _column(searcher, field_name, word)
        if column is not None:
            # (the first word's scores are its column: 0.0 + s == s)
            total = array("d", column) if n == 0 else _added(total, column)
            continue
        for docnum, score in word_scores(searcher, field_name, word).items():
            total[docnum] += score
    if allow is not None:
        kept = array("d", bytes(8 * size))
        for docnum in allow:
            kept[docnum] = total[docnum]
        total = kept
    for docnum in hidden or ():
        total[docnum] = 0.0
    ranked = None
    # (with few documents allowed, the order would mostly hold others; with numpy, the
    # best of a column are found in a millisecond, and a sort of 30,000 matches in Python
    # took 20-80 ms at 100k)
    one_kept = len(words) == 1 and _kept(searcher).get((field_name, words[0])) is not None
    few = allow is None or len(allow) * 8 >= size
    if one_kept and column is not None and few and size < decoded.NUMPY_FROM:
        # Sorted when the word comes back in this generation (a sort costs more than a scan).
        asked = per_reader(searcher.reader(), "asked to rank", Counter)
        asked[field_name, words[0]] += 1
        if asked[field_name, words[0]] > 1:
            ranked = partial(_ranked, searcher, field_name, words[0], column)
    return ColumnScores(total, sparse_columns.matched(total), ranked)


def _added(total: array, column: array) -> array:
    """total + column, element by element (the same doubles as one addition each; with
    numpy in a vault large enough for it to pay)."""
    if len(total) < decoded.NUMPY_FROM:
        return array("d", map(operator.add, total, column))
    import numpy as np

    summed = np.frombuffer(total, dtype=np.float64) + np.frombuffer(column, dtype=np.float64)
    return array("d", summed.tobytes())


def _kept(searcher: Any) -> OrderedDict:
    return per_reader(searcher.reader(), "impact columns", OrderedDict)


def _ranked(searcher: Any, field_name: str, word: str, column: array) -> array:
    """The docnums of a column's matches, best first and equal scores by path, as
    top_scored orders them: sorted once per generation."""
    kept = per_reader(searcher.reader(), "ranked columns", dict)
    key = (field_name, word)
    if key not in kept:
        path = columns(searcher)["path"]
        matched = compress(range(len(column)), column)
        # By path, then (a stable sort) by score: C-level keys, twice as fast as one
        # sort by (-score, path) through a Python key function.
        by_path = sorted(matched, key=path.__getitem__)
        kept[key] = array("q", sorted(by_path, key=column.__getitem__, reverse=True))
    return kept[key]


def warm(searcher: Any, busy: Callable[[], bool], field_name: str = "all") -> int:
    """Make the columns of the generation's most common words, as many as are kept without
    dropping one, before any query asks for them: a word's column costs ~2 ms to make at
    10k, and a query's first-asked words are mostly common ones. One word at a time,
    stopping as soon as busy() (a call came in); how many were made.

    Made so, a column counts as asked for by no one: the first column a query needs
    that finds no room takes the place of one made here (_column).
    """
    size = searcher.doc_count_all()
    if size < COLUMNS_FROM:
        return 0
    frequency: Counter = Counter()
    for leaf, _ in searcher.reader().leaf_readers():  # (per segment: merged, 10x slower)
        if busy():
            return 0
        for term, info in leaf.iter_field(field_name):
            frequency[term] += info.doc_frequency()
    room = _budget(size) - _held(_kept(searcher))
    made = 0
    for term, df in frequency.most_common():
        if df * COMMON_DIVISOR < size or busy():
            break
        needed = sparse_columns.cost(size, df)
        word = term.decode() if isinstance(term, bytes) else term
        if needed <= room and _column(searcher, field_name, word, asked=False) is not None:
            made += 1
            room -= needed
    return made


def _column(searcher: Any, field_name: str, word: str, *, asked: bool = True) -> array | None:
    """The word's column of this generation, made on first use; None for a word in too few
    documents (or one whose scores the column could not carry). asked=False: made ahead
    of any query (warm), so it counts as asked for by no one."""
    size = searcher.doc_count_all()
    if doc_frequency(searcher, field_name, word) * COMMON_DIVISOR < size:
        return None
    kept = _kept(searcher)
    key = (field_name, word)
    asks = per_reader(searcher.reader(), "column asks", Counter)
    asks[key] += asked
    if key in kept:
        kept.move_to_end(key)
        found = kept[key]
        return None if found is None else sparse_columns.whole(found, size)
    column = _made_column(searcher, field_name, word, size)
    if column is None:
        kept[key] = None
        return None
    form = sparse_columns.kept_form(column)
    victims = _to_drop(kept, sparse_columns.held(form), _budget(size))
    # Kept only in place of columns asked for less often: when the words asked for need
    # more columns than are kept, making each one anew evicted the next one needed, and
    # every query paid a column's making (asked again, slower than asked once).
    if any(asks[victim] >= asks[key] for victim in victims):
        return column
    ranked = per_reader(searcher.reader(), "ranked columns", dict)
    for victim in victims:
        del kept[victim]
        ranked.pop(victim, None)  # (its order: as large again)
    kept[key] = form
    return column


def _made_column(searcher: Any, field_name: str, word: str, size: int) -> array | None:
    """The word's scores as a column of size doubles (None if one is not above 0.0)."""
    column = decoded.word_column(searcher, field_name, word)
    if column is not None:
        return column
    scores = _scored(searcher, field_name, word)  # (walked; not kept twice)
    if any(score <= 0.0 for score in scores.values()):
        return None
    column = array("d", bytes(8 * size))
    for docnum, score in scores.items():
        column[docnum] = score
    return column


def _scored(searcher: Any, field_name: str, word: str) -> dict[int, float]:
    """docnum -> the word's score: from its decoded postings, else walked (decoded.py)."""
    found = decoded.word_scores(searcher, field_name, word)
    return found if found is not None else bm25_scores(searcher, field_name, [word], None, None)


def _to_drop(kept: OrderedDict, needed: int, budget: int) -> list[tuple[str, str]]:
    """The least recently used columns to drop to make room for needed more doubles."""
    held = _held(kept)
    victims = []
    for key, column in kept.items():
        if held + needed <= budget:
            break
        if column is not None:
            victims.append(key)
            held -= sparse_columns.held(column)
    return victims


def _held(kept: OrderedDict) -> int:
    return sum(sparse_columns.held(column) for column in kept.values() if column is not None)


def _budget(size: int) -> int:
    """How many doubles' worth of columns a generation of size documents keeps."""
    return KEPT_DOUBLES if size < decoded.NUMPY_FROM else sparse_columns.KEPT_SPARSE_DOUBLES
