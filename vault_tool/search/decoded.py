"""A word's postings decoded once per segment, and its BM25 scores computed over them in C.

Every write makes a new index generation, and a generation's kept scores (impacts.py)
start empty: the first query after a write, and every check for a memory a new one
repeats (engine/similar.py), scored each posting of its words in Python, half a
microsecond apiece, thousands for a common word. Yet a segment never changes once
written: only the deletions beside it, the idf and the average field length do. So a
word's postings in a segment (docnums, counts and the documents' field lengths) are
decoded once and kept (at most KEPT_POSTINGS over all words, the least recently used
dropped first), and each generation scores them with numpy, deleted documents left out.

The floats are postings.bm25_scores's, bit for bit: the same operations on the same
doubles, in the same order (IEEE arithmetic, elementwise, no fused multiply-add);
tests/integration/test_search_decoded.py compares the two.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from vault_tool.search.postings import (
    K1,
    field_lengths,
    idf,
    leaf_frequency,
    leaf_matcher,
    per_reader,
)

# Postings kept decoded, over all segments and words (~20 bytes each: 4 MB).
KEPT_POSTINGS = 200_000

_kept: OrderedDict[tuple[str, str, str], tuple[Any, Any, Any]] = OrderedDict()
_held = [0]
_mutex = threading.Lock()


def word_arrays(searcher: Any, field_name: str, word: str) -> tuple[Any, Any] | None:
    """(docnums, scores) of one word in a generation: every live document that has it,
    in docnum order, scored as postings.bm25_scores scores it; None where a segment is not
    one this reads (the caller walks the postings instead)."""
    import numpy as np

    weighting = searcher.weighting
    b = weighting._field_B.get(field_name, weighting.B)
    k1_plus_1, one_minus_b = K1 + 1, 1 - b
    avgfl = searcher.avg_field_length(field_name) or 1
    word_idf = idf(searcher, field_name, word)
    found_docnums, found_scores = [], []
    for reader, offset in searcher.reader().leaf_readers():
        if not leaf_frequency(reader, field_name, word):
            continue
        decoded = _postings(reader, field_name, word)
        if decoded is None:
            return None
        docnums, tfs, lengths = decoded
        deleted = getattr(reader, "deleted_docs_set", None)
        if deleted:
            live = ~np.isin(docnums, np.fromiter(deleted, dtype=np.int64, count=len(deleted)))
            docnums, tfs, lengths = docnums[live], tfs[live], lengths[live]
        # whoosh.scoring.bm25, as postings._add_scores writes it, operation for operation
        scores = word_idf * ((tfs * k1_plus_1) / (tfs + K1 * (one_minus_b + b * lengths / avgfl)))
        found_docnums.append(docnums + offset)
        found_scores.append(scores)
    if not found_docnums:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    return np.concatenate(found_docnums), np.concatenate(found_scores)


def word_scores(searcher: Any, field_name: str, word: str) -> dict[int, float] | None:
    """docnum -> score of word_arrays, as a dict (None where it gives None)."""
    found = word_arrays(searcher, field_name, word)
    if found is None:
        return None
    return dict(zip(found[0].tolist(), found[1].tolist(), strict=True))


def _postings(reader: Any, field_name: str, word: str) -> tuple[Any, Any, Any] | None:
    """(local docnums, counts, field lengths) of every posting of word in one segment,
    deleted documents too; kept per segment id."""
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
        while _held[0] > KEPT_POSTINGS and len(_kept) > 1:
            _, dropped = _kept.popitem(last=False)
            _held[0] -= len(dropped[0])
    return found


def _decode(reader: Any, field_name: str, word: str) -> tuple[Any, Any, Any] | None:
    import numpy as np

    matcher, _, blocks = leaf_matcher(reader.postings(field_name, word))
    if not blocks:
        return None
    ids, weights = [], []
    while matcher.is_active():
        if matcher._ids is None:
            matcher._read_ids()
        if matcher._weights is None:
            matcher._read_weights()
        ids.append(np.asarray(matcher._ids, dtype=np.int64))
        weights.append(np.asarray(matcher._weights, dtype=np.float64))
        matcher._next_block()
    docnums = np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64)
    table = per_reader(reader, f"length array {field_name}", lambda: _lengths(reader, field_name))
    if table is None:
        return None
    return docnums, np.concatenate(weights) if weights else np.zeros(0), table[docnums]


def _lengths(reader: Any, field_name: str) -> Any:
    """A segment's field lengths as doubles (None where a document has none; no posting
    of the field is in such a document)."""
    import numpy as np

    table = field_lengths(reader, field_name)
    if not isinstance(table, list):
        return None
    return np.array([0.0 if length is None else length for length in table], dtype=np.float64)
