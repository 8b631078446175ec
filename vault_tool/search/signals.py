"""The ranking signals computed without the index: operators' feedback, valid time, who
a memory is about, and the kind of memory a question asks for.

Pure: each takes analysed words (core.text) and returns a number that ranking.py weighs
against the best text score of the query.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Any

from vault_tool.core.text import analysed_words, name_key, normalize_name
from vault_tool.core.times import holds_in, valid_on


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


# The kind of memory a question asks for, by its words: "what did we decide about staging"
# asks for a decision, not a note that says "nothing decided yet".
_ASKS_FOR = (
    ("decision", r"decid(?:e|es|ed|ing)|decisions?|agreed|chose|chosen|settled on|went with"),
    ("preference", r"prefer\w*|favou?rites?"),
    ("procedure", r"how (?:do|does|can|should) (?:we|i|you|one)|how to|steps|procedure|runbook"),
    ("gotcha", r"gotchas?|pitfalls?|caveats?|watch out|traps?"),
    ("rule", r"rules?|polic(?:y|ies)|allowed to|must we"),
)
_ASKED = [(kind, re.compile(rf"\b(?:{words})\b", re.IGNORECASE)) for kind, words in _ASKS_FOR]


def asked_types(text: str) -> frozenset[str]:
    """The memory types a question asks for by its words (none for most questions)."""
    return frozenset(kind for kind, pattern in _ASKED if pattern.search(text))


def without_asked(text: str) -> str:
    """text without the words that ask for a kind of memory: "decide" in "what did we
    decide about staging" says what kind of memory is wanted, "staging" what it is about
    (a note saying "nothing decided yet" holds the one, the decision only the other)."""
    for _, pattern in _ASKED:
        text = pattern.sub(" ", text)
    return text
