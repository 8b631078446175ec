"""Ranking, stage two: the signals, each a part of a candidate's score.

Every part is a share of the best text score of the query, so the parts weigh alike
whatever the words; each is kept in the hit's parts, so `search --explain` shows it:
- entity (given by stage one, search/candidates.py), and here a memory that names in full
  an entity the query names ("Ana Costa", not her namesake Ana Ruiz): NAME_WEIGHT;
- about: a fact's subject is someone the query names (what Ana said, for "what did Ana
  make"): ABOUT_WEIGHT;
- type: the kind of memory the question asks for ("what did we decide"): TYPE_WEIGHT;
- feedback: operators' judgements of similar queries, bounded: FEEDBACK_WEIGHT;
- valid_time: a fact that holds on a time the query names, or a memory made then;
- meaning, with `[search] semantic = true` (search/fusion.py);
- factor: x 1.15 pinned, x 0.6 when the fact it is best found by has ended and the query
  asks about now; and in a question about now, a later memory that says it again (of its
  type about the same entities, or with a new value of one of its facts) is placed above it.
The maths of each is a small pure function here, tested on its own.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from vault_tool.core.spoken_dates import NamedTime
from vault_tool.core.text import analysed_words, name_key, normalize_name
from vault_tool.core.times import holds_in, valid_on
from vault_tool.search import stored
from vault_tool.search.candidates import Candidates, of_type
from vault_tool.search.postings import doc_frequency

if TYPE_CHECKING:
    from whoosh.searching import Searcher

# A hit mentioning an entity the query names in full gets this share of the best text score.
NAME_WEIGHT = 0.15
# A hit about someone the query names (a fact's subject: who said or did it) gets this share
# of the best text score: "what did Ana say about the park" means Ana's words first.
ABOUT_WEIGHT = 0.2
# A hit of the type the question asks for gets this share of the best text score.
TYPE_WEIGHT = 0.2
# Feedback moves a hit by at most this share of the best text score of the query.
FEEDBACK_WEIGHT = 0.25
PINNED_FACTOR = 1.15
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


def who_and_what(
    searcher: Searcher,
    found: Candidates,
    text: str,
    kinds: frozenset[str],
    judgements: list[tuple[str, int, str]],
    every: list[str],
) -> None:
    """The parts of who a question names, what kind of memory it asks for, what operators
    judged of queries like it, and whether a hit is pinned."""
    best, said = found.best_text, f" {words_of(text)} "
    for docnum, hit in found.hits.items():
        if _names_in_full(hit.fields["mentions"], said):
            hit.parts["entity"] = max(hit.parts.get("entity", 0.0), round(NAME_WEIGHT * best, 6))
        if about_someone_named(stored.times(searcher, docnum)["facts"], said):
            hit.parts["about"] = round(ABOUT_WEIGHT * best, 6)
        if any(docnum in of_type(searcher, kind) for kind in kinds):
            hit.parts["type"] = round(TYPE_WEIGHT * best, 6)
        if hit.fields.get("pinned"):
            hit.parts["factor"] = hit.parts.get("factor", 1.0) * PINNED_FACTOR
    # All the query's words, not only the distinctive ones: the judged queries are compared
    # the same way, whatever the size of the vault.
    for memory_id, signal in feedback_signals(judgements, every).items():
        for hit in found.hits.values():
            if hit.memory_id == memory_id:
                hit.parts["feedback"] = round(FEEDBACK_WEIGHT * signal * best, 6)


def _names_in_full(mentions: list[list[str]], said: str) -> bool:
    """Whether mentions hold an entity the query (said: its words_of, spaced) names in full
    (a name of two words or more: "Ana Costa", not the "Ana" that Ana Ruiz's memories
    share)."""
    return any(
        " " in key and f" {key} " in said for key in (words_of(name) for name, _, _ in mentions)
    )


def time_signals(
    searcher: Searcher,
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
    searcher: Searcher, hits: dict[int, Any], times: dict[int, dict[str, Any]]
) -> dict[int, list[str]]:
    """docnum -> ids of the hits that say it again later, matching the query at least
    SAID_AGAIN_SHARE as well: a memory of the same type about the same entities, or one
    that states a new value for one of its facts (new_value, below). They are placed
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


def feedback_signals(judgements: list[tuple[str, int, str]], words: list[str]) -> dict[str, float]:
    """memory_id -> a signal in (-1, 1) from operators' feedback on queries like this one.

    A judgement counts by how similar its query is to this one (query_similarity), and not
    at all for a query sharing no word with it: a memory judged helpful for "who owns the
    billing service" says nothing about "which region does the search service run in", and
    lifting it there displaced the right answers (when each judgement counted 0.5 for any
    query, held-out nDCG@10 fell by 0.035 at 1k). The sum goes through tanh(x / 2), so no
    amount of feedback moves a memory by more than FEEDBACK_WEIGHT of the best text score.
    """
    if not judgements:
        return {}
    wanted = frozenset(words)
    net: dict[str, float] = {}
    for memory_id, sign, query in judgements:
        similarity = query_similarity(wanted, frozenset(analysed_words(query)))
        if similarity:
            net[memory_id] = net.get(memory_id, 0.0) + sign * similarity
    return {memory_id: math.tanh(value / 2) for memory_id, value in net.items() if value}


def query_similarity(ours: frozenset[str], theirs: frozenset[str]) -> float:
    """The squared Jaccard similarity of two queries' analysed words, in [0, 1].

    Squared, so a rewording of the judged query counts nearly fully and a question of the
    same kind about something else ("who owns the billing service" for "who owns the search
    service", half the words shared) a quarter. Judging the questions of one tuning seed
    and asking the other's: plain Jaccard cost nDCG@10 0.012 at 1k, squared 0.001, while
    judging a question still lifts its paraphrase (+0.075 at 10k).
    """
    union = ours | theirs
    return (len(ours & theirs) / len(union)) ** 2 if union else 0.0


def valid_time_match(facts: list[dict[str, Any]], dates: list[str], words: list[str]) -> float:
    """How well a memory's facts that hold on a date of the query match its other words.

    The share of the query's words (dates aside) in the best such fact, so "who owned the
    warranty pipeline on 2023-10-20" lifts the owner of the warranty pipeline then more
    than the owner of the pricing pipeline then. Only facts with an interval count: one
    without holds on every day, so says nothing about this one.
    """
    wanted = set(words) - set(analysed_words(" ".join(dates)))
    best = 0.0
    for fact in facts:
        if not (fact.get("valid_from") or fact.get("valid_until")):
            continue
        if not any(holds_in(fact, date) for date in dates):
            continue
        said = analysed_words(f"{fact['subject']} {fact['predicate']} {fact['object']}")
        best = max(best, len(wanted.intersection(said)) / len(wanted) if wanted else 0.0)
    return best


def made_on(times: dict[str, Any], dates: list[str]) -> bool:
    """Whether the memory was made on a day (or in a month) the query names."""
    day = times.get("created", "")
    return bool(day) and any(day.startswith(d) for d in dates)


def ended_for_now(facts: list[dict[str, Any]], today: str, words: list[str]) -> bool:
    """Whether the memory's fact that best matches the query no longer holds today (or
    does not yet): "the on-call lead" asked now should find the current lead first.
    A fact without valid_from / valid_until always holds."""
    best, ended = 0.0, False
    for fact in facts:
        share = _share(fact, words)
        holds = valid_on(fact, today)
        # (equal matches: a fact that holds wins, so one current fact keeps the memory)
        if share > best or (share == best and share and holds):
            best, ended = share, not holds
    return ended


def new_value(earlier: list[dict[str, Any]], later: list[dict[str, Any]]) -> bool:
    """Whether facts said later say again what earlier ones said, with a new value: the two
    share a fact and hold facts of one subject and predicate with other objects (Ben says
    of his setup that his editor is Zed, later that it is Neovim), or the later facts end
    an earlier one (a lead's term, with its last day). Not a new object alone: what a
    person says, or a service depends on, has many objects at once (a thing's setting
    changed by another speaker, counted too, cost the generated set's tuning seeds 0.007
    of nDCG@10 and the team's chat set's nothing)."""
    before, after = _triples(earlier), _triples(later)
    ended = {_triple(f) for f in later if f.get("valid_until")}
    if ended & {_triple(f) for f in earlier if not f.get("valid_until")}:
        return True
    if not before & after:
        return False
    changed = {(subject, predicate) for subject, predicate, _ in after - before}
    return any((subject, predicate) in changed for subject, predicate, _ in before - after)


def _triples(facts: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {_triple(fact) for fact in facts}


def _triple(fact: dict[str, Any]) -> tuple[str, str, str]:
    return name_key(fact["subject"]), fact["predicate"], name_key(fact["object"])


def said_on(times: dict[str, Any]) -> str:
    """The day a memory says what it says: its facts' latest valid_from, else the day it
    was made (an agent storing a chat gives each turn's facts the session's date)."""
    return max((f.get("valid_from") or "" for f in times["facts"]), default="") or times.get(
        "created", ""
    )


def _share(fact: dict[str, Any], words: list[str]) -> float:
    """The share of the query's words that the fact says."""
    said = analysed_words(f"{fact['subject']} {fact['predicate']} {fact['object']}")
    return len(set(words).intersection(said)) / len(set(words)) if words else 0.0


def about_someone_named(facts: list[dict[str, Any]], said: str) -> bool:
    """Whether a memory is about someone the query names: one of its facts' subjects (the
    person who said it, did it, owns it) is a name the query says in full, as words.

    said is the query's folded words with a space at each end (" when did ana go "); a
    subject's words are matched the same way, so "Ana" is not found inside "Anakin".
    Questions name the person they ask about, and most often mean what that person said or
    did, not what others said to them or about them.
    """
    return any(f" {words_of(fact['subject'])} " in said for fact in facts if fact.get("subject"))


@lru_cache(maxsize=16384)
def words_of(name: str) -> str:
    """A name or query as its folded words, one space apart: "Ana Costa's" -> "ana costa s"."""
    return " ".join(_WORD.findall(normalize_name(name)))


_WORD = re.compile(r"\w+")
