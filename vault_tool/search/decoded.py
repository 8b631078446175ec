"""A word's postings decoded once per segment, and its BM25 scores computed over them.

Every write makes a new index generation, and a generation's kept scores (impacts.py)
start empty: the first query after a write, and every check for a memory a new one
repeats (engine/similar.py), scored each posting of its words in Python, half a
microsecond apiece, thousands for a common word. Yet a segment never changes once
written: only the deletions beside it, the idf and the average field length do. So a
word's postings in a segment (docnums, counts and the documents' field lengths) are
decoded once and kept (at most KEPT_POSTINGS over all words, the least recently used
dropped first), and each generation scores them in one pass, deleted documents left out
(with numpy in a large vault). A posting's score depends only on its (count, field length)
pair, and a word's postings hold few distinct pairs (counts are small, lengths one of 256
values): from the second generation that scores them on, each pair is scored once and the
postings look their pair's score up in C (numbering the pairs costs about one scoring).

The floats are postings.bm25_scores's, bit for bit: the same operations on the same
doubles, in the same order (numpy's too: IEEE arithmetic, elementwise, no fused
multiply-add); tests/integration/test_search_decoded.py compares the two.
"""

from __future__ import annotations

import io
import pickle
import struct
import threading
import zlib
from array import array
from collections import OrderedDict, deque
from collections.abc import Collection, Iterator
from functools import partial
from itertools import accumulate
from typing import Any

from whoosh.codec.whoosh3 import WHOOSH3_HEADER_MAGIC

from vault_tool.search.postings import (
    K1,
    field_lengths,
    idf,
    leaf_frequency,
    leaf_matcher,
    posting_blocks,
)

# Postings kept decoded, over all segments and words (~24 bytes each): this many, or ten
# for each document of a larger vault (5 MB at 10,000 notes, 24 MB at 100,000).
KEPT_POSTINGS = 200_000
KEPT_PER_DOCUMENT = 10
# In a vault of this many documents or more, postings are scored (and impacts.py's
# columns added) with numpy; in a smaller one by a list comprehension: numpy costs 16 MB
# of memory once imported, and saves a millisecond or less on the lists of such a vault.
NUMPY_FROM = 20_000


class Decoded:
    """A word's postings in one segment: docnums, counts and field lengths, deleted
    documents' too; once scored twice, each posting's number of its (count, length) pair."""

    __slots__ = ("_numbered", "docnums", "lengths", "scored", "tfs")

    def __init__(self, docnums: array, tfs: array, lengths: array) -> None:
        self.docnums, self.tfs, self.lengths = docnums, tfs, lengths
        self._numbered: tuple[array, list[tuple[float, float]]] | None = None
        self.scored = 0

    def __len__(self) -> int:
        return len(self.docnums)

    def numbered(self) -> tuple[array, list[tuple[float, float]]] | None:
        """(each posting's pair number, the distinct pairs), from the second call on."""
        self.scored += 1
        if self._numbered is None and self.scored > 1:
            numbers: dict[tuple[float, float], int] = {}
            pairs = zip(self.tfs, self.lengths, strict=True)
            found = array("I", [numbers.setdefault(p, len(numbers)) for p in pairs])
            self._numbered = (found, list(numbers))  # (one assignment: a reader sees both)
        return self._numbered


_kept: OrderedDict[tuple[str, str, str], Decoded] = OrderedDict()
_INT = struct.Struct("!i")  # (a posting block's length, as Whoosh's StructFile writes it)
_held = [0]
_mutex = threading.Lock()


class _Unread(Exception):
    """A segment whose postings this module does not read (the caller walks them)."""


def word_scores(searcher: Any, field_name: str, word: str) -> dict[int, float] | None:
    """docnum -> score of one word in a generation, for every live document that has it,
    in docnum order, as postings.bm25_scores scores it; None where a segment is not one
    this reads (the caller walks the postings instead)."""
    found: dict[int, float] = {}
    try:
        for offset, docnums, scores in _segment_scores(searcher, field_name, word):
            if not isinstance(scores, list):  # (numpy's: as Python ints and floats)
                docnums, scores = docnums.tolist(), scores.tolist()
            found.update(zip([docnum + offset for docnum in docnums], scores, strict=True))
    except _Unread:
        return None
    return found


def word_column(searcher: Any, field_name: str, word: str) -> array | None:
    """word_scores as a column: one double per docnum of the generation, 0.0 where the
    word is not (or the document is deleted). None where a segment is not one this reads,
    or a score is not above 0.0 (a column cannot carry it: impacts.py)."""
    size = searcher.doc_count_all()
    if size >= NUMPY_FROM:
        return _numpy_column(searcher, field_name, word, size)
    column = array("d", bytes(8 * size))
    try:
        for offset, docnums, scores in _segment_scores(searcher, field_name, word):
            if scores and min(scores) <= 0.0:
                return None
            at = docnums if not offset else map(offset.__add__, docnums)
            deque(map(column.__setitem__, at, scores), maxlen=0)  # (a loop in C)
    except _Unread:
        return None
    return column


def _numpy_column(searcher: Any, field_name: str, word: str, size: int) -> array | None:
    """word_column, each segment's scores put in place by numpy (they are numpy's)."""
    import numpy as np

    column = np.zeros(size)
    try:
        for offset, docnums, scores in _segment_scores(searcher, field_name, word):
            if len(scores) and scores.min() <= 0.0:
                return None
            column[docnums.astype(np.int64) + offset] = scores
    except _Unread:
        return None
    return array("d", column.tobytes())


def _segment_scores(searcher: Any, field_name: str, word: str) -> Iterator[tuple[int, Any, Any]]:
    """(docnum offset, live docnums, their scores) of each segment that has the word;
    _Unread where a segment is not one this reads."""
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
    kept = max(KEPT_POSTINGS, KEPT_PER_DOCUMENT * searcher.doc_count_all())
    for reader, offset in searcher.reader().leaf_readers():
        if not leaf_frequency(reader, field_name, word):
            continue
        decoded = _postings(reader, field_name, word, kept)
        if decoded is None:
            raise _Unread
        deleted = getattr(reader, "deleted_docs_set", None)
        yield (offset, *score(decoded, deleted or ()))


def _scored(
    with_numpy: bool,
    word_idf: float,
    k1_plus_1: float,
    one_minus_b: float,
    b: float,
    avgfl: float,
    decoded: Decoded,
    deleted: Collection[int],
) -> tuple[Any, list[float]]:
    """(live docnums, their scores) of one segment's postings of a word (numpy arrays
    with_numpy, else lists or arrays)."""
    docnums, tfs, lengths = decoded.docnums, decoded.tfs, decoded.lengths
    if with_numpy:
        import numpy as np

        at = np.frombuffer(docnums, dtype=np.uint32)
        tf, fl = np.frombuffer(tfs, dtype=np.float64), np.frombuffer(lengths, dtype=np.float64)
        if deleted:
            live = ~np.isin(at, np.fromiter(deleted, dtype=np.int64, count=len(deleted)))
            at, tf, fl = at[live], tf[live], fl[live]
        scores = word_idf * ((tf * k1_plus_1) / (tf + K1 * (one_minus_b + b * fl / avgfl)))
        return at, scores
    numbered = decoded.numbered()
    pairs = numbered[1] if numbered is not None else zip(tfs, lengths, strict=True)
    scores = [
        word_idf * ((tf * k1_plus_1) / (tf + K1 * (one_minus_b + b * fl / avgfl)))
        for tf, fl in pairs
    ]
    if numbered is not None:
        scores = list(map(scores.__getitem__, numbered[0]))  # (a pair's score per posting)
    if deleted:
        live = [n for n, docnum in enumerate(docnums) if docnum not in deleted]
        return [docnums[n] for n in live], [scores[n] for n in live]
    return docnums, scores


def _postings(reader: Any, field_name: str, word: str, kept: int) -> Decoded | None:
    """The postings of word in one segment (Decoded), deleted documents' too; kept per
    segment id (at most kept postings over all words)."""
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
            _held[0] += len(found)
        while _held[0] > kept and len(_kept) > 1:
            _, dropped = _kept.popitem(last=False)
            _held[0] -= len(dropped)
    return found


def _decode(reader: Any, field_name: str, word: str) -> Decoded | None:
    matcher, _, blocks = leaf_matcher(reader.postings(field_name, word))
    if not blocks:
        return None
    table = field_lengths(reader, field_name)
    if not isinstance(table, list):
        return None
    docnums, tfs = array("I"), array("d")
    try:
        blocks = list(_blocks(matcher))
    except (ValueError, struct.error, pickle.UnpicklingError, zlib.error):
        # (not laid out as _blocks reads them: through the matcher's own reads)
        blocks = [(ids, weights) for ids, weights, _ in posting_blocks(matcher)]
    for ids, weights in blocks:  # (iter: an array of another type code is not taken)
        docnums.extend(iter(ids))
        tfs.extend(iter(weights))  # (float counts, stored as 32-bit floats)
    try:  # (a document with a posting of the field has a length in it)
        return Decoded(docnums, tfs, array("d", [table[docnum] for docnum in docnums]))
    except TypeError:  # (one without: left to the walk, which says what is wrong)
        return None


def _blocks(matcher: Any) -> Iterator[tuple[Any, Any]]:
    """(docnums, counts) of each of a W3 leaf matcher's posting blocks, as its _read_ids
    and _read_weights give them, parsed from the term's postings read in one piece:
    Whoosh reads a block's length, its pickled statistics and its data a few bytes at a
    time, about twenty reads a block, and undoes the docnums' deltas in a generator."""
    length = matcher._length  # (the term info's extent: Whoosh keeps it as a 1-tuple)
    length = length[0] if isinstance(length, tuple) and len(length) == 1 else length
    if not isinstance(length, int):
        raise ValueError(f"a posting extent of {length!r}")
    raw = matcher._postfile.get(matcher._startoffset, length)
    if raw[:4] != WHOOSH3_HEADER_MAGIC:
        raise ValueError(f"posting block tag error {raw[:4]!r}")
    at = 4
    while True:
        (length,) = _INT.unpack_from(raw, at)
        last = length < 0
        end = at + _INT.size + abs(length)
        block = io.BytesIO(raw[at + _INT.size : end])
        count, _, _, compression, _, _ = pickle.load(block)
        data = block.read()
        ids, weights = pickle.loads(zlib.decompress(data) if compression else data)[:2]
        if not matcher._byteids:
            ids = accumulate(ids)  # (each block's first docnum is whole, the rest deltas)
        if weights is None or isinstance(weights, float):
            weights = array("f", [1.0 if weights is None else weights]) * count
        if end > len(raw) or (last and end != len(raw)):
            raise ValueError("posting blocks not where the term's extent says")
        yield ids, weights
        if last:
            return
        at = end
