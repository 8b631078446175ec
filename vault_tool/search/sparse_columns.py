"""The common words' columns of a large vault, kept as their matches only.

impacts.py makes a common word's scores a column of one double per document; in a vault
of 100,000 notes that is 800 KB a word, so its 16 MB kept 20 of the 130 common words the
benchmark's queries ask for, and each query made most of its columns anew from the
postings. A common word is in 5-50% of the documents: kept as its matches (their docnums
as 32-bit integers and their scores), a column costs 12 bytes a match, and is made whole
again (numpy: zeros, then the scores put in place) in a fraction of a millisecond, the
same doubles at the same places. Below decoded.NUMPY_FROM columns are kept as they are.

A large vault's columns are also ranked and counted with numpy (best, matched).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Any

from vault_tool.search import decoded

# What the sparse columns of a generation may hold, in doubles' worth (8 bytes each): 48 MB,
# the benchmark's 130 common words at 100,000 notes.
KEPT_SPARSE_DOUBLES = 6 << 20


@dataclass(frozen=True)
class Matches:
    """A column's matches: docnums (int32) and their scores (float64), in docnum order."""

    docnums: Any
    scores: Any


Kept = array | Matches


def kept_form(column: array) -> Kept:
    """What is kept of a column: the column itself in a small vault, its matches in a
    large one."""
    if len(column) < decoded.NUMPY_FROM:
        return column
    import numpy as np

    scores = np.frombuffer(column, dtype=np.float64)
    docnums = np.flatnonzero(scores)
    if cost(len(column), len(docnums)) >= len(column):
        return column  # (a word in over two thirds of the documents: whole is smaller)
    return Matches(docnums.astype(np.int32), scores[docnums])


def whole(kept: Kept, size: int) -> array:
    """The column a kept form holds (a new one, for Matches)."""
    if isinstance(kept, array):
        return kept
    import numpy as np

    column = np.zeros(size)
    column[kept.docnums] = kept.scores
    return array("d", column.tobytes())


def held(kept: Kept) -> int:
    """What a kept form holds, in doubles' worth."""
    return len(kept) if isinstance(kept, array) else _matches_cost(len(kept.docnums))


def cost(size: int, matches: int) -> int:
    """What a word's column will hold once kept (matches: its document frequency)."""
    return size if size < decoded.NUMPY_FROM else min(size, _matches_cost(matches))


def _matches_cost(matches: int) -> int:
    return (matches * 3 + 1) // 2  # (4 + 8 bytes a match, in doubles of 8)


def best(values: array, n: int, matched: int) -> list[int]:
    """The docnums ColumnScores.top chooses among (each scored at least the n-th best
    score, ties included), found by numpy: a scan in Python of a 100k column took ~6 ms.

    The n-th best is chosen among the matches only: numpy's partition of a whole column,
    mostly zeros, took 13-16 ms at 100k (its selection slows on many equal values); of the
    matches, 0.6 ms."""
    import numpy as np

    scores = np.frombuffer(values, dtype=np.float64)
    docnums = np.flatnonzero(scores)
    if matched <= n:
        return docnums.tolist()
    found = scores[docnums]
    threshold = np.partition(found, len(found) - n)[len(found) - n]  # (the n-th largest)
    return docnums[found >= threshold].tolist()


def matched(total: array) -> int:
    """How many documents a column of scores matched (a score above 0.0)."""
    if len(total) < decoded.NUMPY_FROM:
        return len(total) - total.count(0.0)
    import numpy as np

    return int(np.count_nonzero(np.frombuffer(total, dtype=np.float64)))
