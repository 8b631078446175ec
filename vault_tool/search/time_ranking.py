"""The time signals of ranking: what a query says about time, against each candidate's.

A query naming a time (core/spoken_dates.py) lifts candidates whose facts hold then, or
that were made then; a query about now lowers candidates whose best fact has ended, and
places a later memory of a candidate's type about the same entities above it. Each
writes into a hit's parts (hits.Hit) so `search --explain` shows it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from vault_tool.core.spoken_dates import NamedTime
from vault_tool.core.text import name_key
from vault_tool.search import stored
from vault_tool.search.postings import doc_frequency
from vault_tool.search.signals import (
    ended_for_now,
    made_on,
    new_value,
    said_on,
    valid_time_match,
)

# A hit with a fact valid on a date the query names gets this share of the best text score.
VALID_TIME_WEIGHT = 0.6
# ... and a memory made on a day the query names, this share of it ("what did Ana say last
# week": the turns of that week).
MADE_THEN_SHARE = 0.5
# A hit whose best-matching fact has ended, for a question about now, is weighed by this.
ENDED_FACTOR = 0.6
# A later memory of a hit's type about the same entities is placed above it when its text
# score is at least this share of the hit's.
SAID_AGAIN_SHARE = 0.8
# ... when one of its entities is mentioned in at most this many memories.
SAID_AGAIN_MENTIONS = 100


def time_signals(
    searcher: Any,
    hits: dict[int, Any],
    named: NamedTime,
    words: list[str],
    now: datetime,
    best_text: float,
) -> None:
    """Lift hits whose facts hold on a time the query names, or that were made then; when
    it names none and does not ask about the past, lower hits whose best fact has ended."""
    # All the query's words: "service" is too common to search by, not to tell the billing
    # service's facts from the billing worker's.
    today = now.date().isoformat()
    times = {docnum: stored.times(searcher, docnum) for docnum in hits}
    if named.dates:  # (one naming today asks about now too: what is said again, below)
        for docnum, hit in hits.items():
            match = valid_time_match(times[docnum]["facts"], list(named.dates), words)
            if made_on(times[docnum], list(named.dates)):
                match = max(match, MADE_THEN_SHARE)
            if match:
                hit.parts["valid_time"] = round(VALID_TIME_WEIGHT * match * best_text, 6)
    if named.past or (named.dates and today not in named.dates):
        return
    for docnum, newer in _said_again(searcher, hits, times).items():
        hits[docnum].said_again_by = newer
    if named.dates:  # (today: what holds today is lifted already)
        return
    for docnum, hit in hits.items():
        if ended_for_now(times[docnum]["facts"], today, words):
            hit.parts["factor"] = hit.parts.get("factor", 1.0) * ENDED_FACTOR


def _said_again(
    searcher: Any, hits: dict[int, Any], times: dict[int, dict[str, Any]]
) -> dict[int, list[str]]:
    """docnum -> ids of the hits that say it again later, matching the query at least
    SAID_AGAIN_SHARE as well: a memory of the same type about the same entities, or one
    that states a new value for one of its facts (signals.new_value). They are placed
    above it, as a replacement is, without lowering it ("everything about Ana" wants both).

    Only entities that tell memories apart count: one of them must be mentioned in at
    most SAID_AGAIN_MENTIONS memories, or an agent that gives every memory the same two
    entities would have its whole vault put newest first.
    """
    found = {
        docnum: (
            times[docnum].get("type", ""),
            frozenset(name_key(n) for n, _, _ in hit.fields["mentions"]),
            said_on(times[docnum]),
        )
        for docnum, hit in hits.items()
        if any(
            doc_frequency(searcher, "entity_keys", f"{name_key(n)}|{kind}") <= SAID_AGAIN_MENTIONS
            for n, kind, _ in hit.fields["mentions"]
        )
    }
    text = {docnum: hit.parts.get("text", 0.0) for docnum, hit in hits.items()}
    placed = {}
    for docnum, (kind, names, day) in found.items():
        newer = [
            hits[other].memory_id
            for other, (other_kind, other_names, other_day) in found.items()
            if other_kind == kind
            and other_day > day
            and text[other] >= SAID_AGAIN_SHARE * text[docnum]
            and (other_names == names or new_value(times[docnum]["facts"], times[other]["facts"]))
        ]
        if newer:
            placed[docnum] = newer
    return placed
