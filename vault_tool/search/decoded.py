"""A word's postings decoded once per segment, and its BM25 scores computed over them.

Every write makes a new index generation, and a generation's kept scores (impacts.py)
start empty: the first query after a write, and every check for a memory a new one
repeats (engine/similar.py), scored each posting of its words in Python, half a
microsecond apiece, thousands for a common word. Yet a segment never changes once
written: only the deletions beside it, the idf and the average field length do. So a
word's postings in a segment (docnums, counts and the documents' field lengths) are
decoded once and kept (at most KEPT_POSTINGS over all words, the least recently used
dropped first), and each generation scores them in one pass, deleted documents left out
(with numpy in a large vault).

The floats are postings.bm25_scores's, bit for bit: the same operations on the same
doubles, in the same order (numpy's too: IEEE arithmetic, elementwise, no fused
multiply-add); tests/integration/test_search_decoded.py compares the two.
"""

from __future__ import annotations

import threading
from array import array
from collections import OrderedDict
from collections.abc import Collection
from functools import partial
from typing import Any

from vault_tool.search.postings import (
    K1,
    field_lengths,
    idf,
    leaf_frequency,
    leaf_matcher,
)

# Postings kept decoded, over all segments and words (~20 bytes each): this many, or ten
# for each document of a larger vault (4 MB at 10,000 notes, 20 MB at 100,000).
KEPT_POSTINGS = 200_000
KEPT_PER_DOCUMENT = 10
# In a vault of this many documents or more, postings are scored (and impacts.py's
# columns added) with numpy; in a smaller one by a list comprehension: numpy costs 16 MB
# of memory once imported, and saves a millisecond or less on the lists of such a vault.
NUMPY_FROM = 20_000

_kept: OrderedDict[tuple[str, str, str], tuple[array, array, array]] = OrderedDict()
_held = [0]
_mutex = threading.Lock()


def word_scores(searcher: Any, field_name: str, word: str) -> dict[int, float] | None:
    """docnum -> score of one word in a generation, for every live document that has it,
    in docnum order, as postings.bm25_scores scores it; None where a segment is not one
    this reads (the caller walks the postings instead)."""
    weighting = searcher.weighting
    b = weighting._field_B.get(field_name, weighting.B)
    # whoosh.scoring.bm25, as postings._add_scores writes it, operation for operation
    score = partial(
        _scored,
        searcher.doc_count_all() >= NUMPY_FROM,
        idf(searcher, field_name, word),
        K1 + 1,
        1 - b,
        b,
        searcher.avg_field_length(field_name) or 1,
    )
    found: dict[int, float] = {}
    kept = max(KEPT_POSTINGS, KEPT_PER_DOCUMENT * searcher.doc_count_all())
    for reader, offset in searcher.reader().leaf_readers():
        if not leaf_frequency(reader, field_name, word):
            continue
        decoded = _postings(reader, field_name, word, kept)
        if decoded is None:
            return None
        deleted = getattr(reader, "deleted_docs_set", None)
        docnums, scores = score(*decoded, deleted or ())
        found.update(zip([docnum + offset for docnum in docnums], scores, strict=True))
    return found


def _scored(
    with_numpy: bool,
    word_idf: float,
    k1_plus_1: float,
    one_minus_b: float,
    b: float,
    avgfl: float,
    docnums: array,
    tfs: array,
    lengths: array,
    deleted: Collection[int],
) -> tuple[list[int], list[float]]:
    """(live docnums, their scores) of one segment's postings of a word."""
    if with_numpy:
        import numpy as np

        at = np.frombuffer(docnums, dtype=np.uint32)
        tf, fl = np.frombuffer(tfs, dtype=np.float64), np.frombuffer(lengths, dtype=np.float64)
        if deleted:
            live = ~np.isin(at, np.fromiter(deleted, dtype=np.int64, count=len(deleted)))
            at, tf, fl = at[live], tf[live], fl[live]
        scores = word_idf * ((tf * k1_plus_1) / (tf + K1 * (one_minus_b + b * fl / avgfl)))
        return at.tolist(), scores.tolist()
    rows = zip(docnums, tfs, lengths, strict=True)
    if deleted:
        rows = ((docnum, tf, fl) for docnum, tf, fl in rows if docnum not in deleted)
    kept = list(rows)
    return [row[0] for row in kept], [
        word_idf * ((tf * k1_plus_1) / (tf + K1 * (one_minus_b + b * fl / avgfl)))
        for _, tf, fl in kept
    ]


def _postings(
    reader: Any, field_name: str, word: str, kept: int
) -> tuple[array, array, array] | None:
    """(local docnums, counts, field lengths) of every posting of word in one segment,
    deleted documents too; kept per segment id (at most kept postings over all words)."""
    try:
        key = (reader.segment().segid, field_name, word)
    except AttributeError:
        return None
    with _mutex:
        found = _kept.get(key)
        if found is not None:
            _kept.move_to_end(key)
            return found
    found = _decode(reader, field_name, word)
    if found is None:
        return None
    with _mutex:
        if key not in _kept:
            _kept[key] = found
            _held[0] += len(found[0])
        while _held[0] > kept and len(_kept) > 1:
            _, dropped = _kept.popitem(last=False)
            _held[0] -= len(dropped[0])
    return found


def _decode(reader: Any, field_name: str, word: str) -> tuple[array, array, array] | None:
    matcher, _, blocks = leaf_matcher(reader.postings(field_name, word))
    if not blocks:
        return None
    table = field_lengths(reader, field_name)
    if not isinstance(table, list):
        return None
    docnums, tfs = array("I"), array("d")
    while matcher.is_active():
        if matcher._ids is None:
            matcher._read_ids()
        if matcher._weights is None:
            matcher._read_weights()
        docnums.extend(iter(matcher._ids))
        tfs.extend(iter(matcher._weights))  # (float counts, stored as 32-bit floats)
        matcher._next_block()
    try:  # (a document with a posting of the field has a length in it)
        return docnums, tfs, array("d", [table[docnum] for docnum in docnums])
    except TypeError:  # (one without: left to the walk, which says what is wrong)
        return None
