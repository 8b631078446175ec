"""Context: a memory borrows, at a lower weight, the match of the memories written beside it.

The items of one `remember` batch are an ordered exchange (a conversation's turns, one
session's notes): "Yeah, we go a few times a week" answers the turn before it, which holds
the question's "park" that the answer lacks. So a memory the words found lends a share of
its text score to the item just after it in its batch (AFTER_SHARE: the reply) and a
smaller one to the item just before it (BEFORE_SHARE: what it replies to); ranking adds
what the neighbour's own text score falls short of, no more. A batch is the
memories of one commit in the order of their ids, which are minted in order (core/ids.py).
Only the tool's memories (ULIDs) count: a person's notes committed together (the links a
rename rewrote) are no exchange.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from vault_tool.core.ids import is_ulid
from vault_tool.search import postings, stored
from vault_tool.search.postings import per_reader

AFTER_SHARE = 0.8
BEFORE_SHARE = 0.4
# A batch larger than this is not an exchange (an import, a bulk load): no context.
LARGEST_BATCH = 50


def borrowed(
    searcher: Any, scored: Iterable[tuple[int, float]], allowed: Callable[[int], bool]
) -> dict[int, float]:
    """docnum -> the most it borrows from a scored neighbour in its batch, for the allowed
    neighbours of each (docnum, text score)."""
    lent: dict[int, float] = {}
    for docnum, score in scored:
        before, after = neighbours(searcher, docnum)
        for other, share in ((after, AFTER_SHARE), (before, BEFORE_SHARE)):
            if other is not None and allowed(other):
                lent[other] = max(lent.get(other, 0.0), share * score)
    return lent


def neighbours(searcher: Any, docnum: int) -> tuple[int | None, int | None]:
    """The memories written just before and just after this one in its batch (or None)."""
    ids = postings.columns(searcher)["memory_id"]
    commit = stored.times(searcher, docnum).get("commit")
    if not commit or not is_ulid(ids[docnum]):
        return None, None
    batch = _batch(searcher, commit)
    at = batch.index(docnum) if docnum in batch else -1
    if at < 0:
        return None, None
    before = batch[at - 1] if at > 0 else None
    after = batch[at + 1] if at + 1 < len(batch) else None
    return before, after


def _batch(searcher: Any, commit: str) -> list[int]:
    """The docnums of a commit's memories with ULIDs, in id order; kept per reader."""
    kept = per_reader(searcher.reader(), "batches", dict)
    if commit not in kept:
        ids = postings.columns(searcher)["memory_id"]
        docnums = postings.docnums_with(searcher, "version_id", commit)
        members = sorted((d for d in docnums if is_ulid(ids[d])), key=ids.__getitem__)
        kept[commit] = members if 1 < len(members) <= LARGEST_BATCH else []
    return kept[commit]
