"""Ranking, stage one: what a query asks, and the memories that may answer it.

A query is read once (Asked): the words a memory is found by, the rarer of them, their
related forms, the words that ask for a kind of memory, and those that say what it is
about. The candidates are then
- the best by text: BM25 over every field (search/bm25.py), the very common words scored
  for the best only, related forms at FORM_WEIGHT, the words that ask for a kind only in
  memories of that kind;
- the memories written beside a match in its batch (context: "we go a few times a week"
  answers the turn that says "park"): the one after it, the one after that, the one
  before;
- the memories that mention an entity whose gloss the query matches, or link to a note
  whose title it names: each with its `entity` part.
A query none of whose best matches holds RELEVANT_SHARE of its words has nothing relevant.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from vault_tool.core.entities import compatible
from vault_tool.core.ids import is_ulid
from vault_tool.core.query import Query, parse_query
from vault_tool.core.spoken_dates import without_now, without_time
from vault_tool.core.text import gloss_words, name_key, query_words
from vault_tool.core.word_forms import related_forms
from vault_tool.search import links, postings, stored
from vault_tool.search.bm25 import (
    Scores,
    add_scores,
    added_within,
    holding,
    idf,
    text_scores,
    top_scored,
    with_forms,
)
from vault_tool.search.hits import Hit
from vault_tool.search.postings import doc_frequency, docnums_with, per_reader

if TYPE_CHECKING:
    from whoosh.searching import Searcher

# A word in more than this share of all memories is dropped when the query has rarer ones.
COMMON_SHARE = 0.2
# ... and only when it is in at least this many: below that, matching it is cheap anyway.
COMMON_MINIMUM = 1000
# The common words are scored for this many times the candidates a query needs.
RESCORED_SHARE = 4
# A related form of a query word (owner for own) scores this share of the word itself.
FORM_WEIGHT = 0.6
# A query is answered only when one of its best matches holds at least this share of its
# words, each weighed by its idf (a word no memory holds weighs most): "how do we rotate
# Nomad credentials for the payroll service", in a vault where only "service" is said, has
# nothing relevant. Set on the team's tuning questions, where the unanswerable ones share
# the vault's words by design: at 0.15 every abstention was right (0.3 abstained on 8 of
# 20 paraphrased questions) and LoCoMo's answerable questions lost none of their hits.
RELEVANT_SHARE = 0.15
# A memory lends this share of its text score to the item after it in its batch (the
# reply), this to the one after that, and this to the item before it (what it replies to).
# The second after: LoCoMo recall_any@5 0.690 -> 0.695 / 0.703 / 0.708 at 0.5 / 0.6 / 0.7;
# the team's chat set unchanged up to 0.6, its tuning nDCG@10 -0.002 at 0.7.
AFTER_SHARE = 0.8
SECOND_AFTER_SHARE = 0.6
BEFORE_SHARE = 0.4
# A batch larger than this is not an exchange (an import, a bulk load): no context.
LARGEST_BATCH = 50
# At most this many entities whose glosses match the query give a bonus...
MATCHED_ENTITIES = 3
# ... and memories the text did not match are added for an entity mentioned in at most
# this many.
EXPANSION_LIMIT = 100
# The entity bonus is at most this share of the best text score of the query.
ENTITY_WEIGHT = 0.1

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


@dataclass
class Asked:
    """What a query asks, read once."""

    query: Query  # its syntax: the words ranked, the rest narrows (core/query.py)
    every: list[str]  # the words a memory is found by
    words: list[str]  # ... the distinctive ones (distinctive_words)
    forms: dict[str, list[str]]  # word -> the related forms the vault holds
    kinds: frozenset[str]  # the kinds of memory it asks for (asked_types)
    asking: list[str]  # the words that ask for them: matched in those kinds only
    about: list[str]  # the words that say what it is about (for RELEVANT_SHARE)

    @classmethod
    def of(cls, searcher: Searcher, text: str) -> Asked:
        """The words a memory is found by are not those that say when it holds ("right
        now"), nor those that ask for a kind of memory, unless nothing else is left."""
        query = parse_query(text)
        said = query_words(without_now(query.text)) or query_words(query.text)
        every = query_words(without_asked(without_now(query.text))) or said
        return cls(
            query=query,
            every=every,
            words=distinctive_words(searcher, every),
            forms=_related_forms(searcher, every),
            kinds=asked_types(query.text),
            asking=[w for w in said if w not in every],
            about=query_words(without_asked(without_time(query.text))) or every,
        )


@dataclass
class Candidates:
    """The memories that may answer a query, each with its text (and context, entity) parts."""

    hits: dict[int, Hit] = field(default_factory=dict)
    total: int = 0  # how many memories matched
    best_text: float = 1.0  # the best text score: every other part is a share of it


def asked_types(text: str) -> frozenset[str]:
    """The memory types a question asks for by its words (none for most questions)."""
    return frozenset(kind for kind, pattern in _ASKED if pattern.search(text))


def without_asked(text: str) -> str:
    """text without the words that ask for a kind of memory: "decide" in "what did we
    decide about staging" says what kind of memory is wanted, "staging" what it is about."""
    for _, pattern in _ASKED:
        text = pattern.sub(" ", text)
    return text


def text_match(searcher: Searcher, asked: Asked, allow: set | None, hidden: set | None) -> Scores:
    """Every memory the query's words match (in allow, if given; not in hidden), by score."""
    scores = text_scores(searcher, "all", asked.words, allow, hidden)
    if asked.forms:
        scores = with_forms(searcher, "all", scores, asked.forms, FORM_WEIGHT, allow, hidden)
    if asked.asking:
        of_kinds = set().union(*(of_type(searcher, kind) for kind in asked.kinds))
        scores = added_within(searcher, "all", scores, asked.asking, of_kinds, allow, hidden)
    return scores


def gather(
    searcher: Searcher,
    asked: Asked,
    scores: Scores,
    allow: set | None,
    hidden: set | None,
    pool: int,
) -> Candidates | None:
    """The pool best by text, their batch neighbours, and the memories an entity or a link
    the query names reaches; None when nothing is relevant."""
    dropped = [w for w in asked.every if w not in asked.words]
    top = best_by_text(searcher, scores, dropped, pool)
    # Whether the vault holds anything the query is about, whatever the filters: a note the
    # filters leave may be found by its link to one they leave out.
    unfiltered = None if allow is None else _best_unfiltered(searcher, asked.words, hidden, pool)
    best = top if unfiltered is None else unfiltered.items()
    if not _relevant(searcher, asked.about, asked.forms, [docnum for docnum, _ in best]):
        return None
    found = Candidates(
        {d: Hit(stored.Stored.of(searcher, d), {"text": score}) for d, score in top}, len(scores)
    )
    found.best_text = max((h.parts["text"] for h in found.hits.values()), default=1.0) or 1.0
    lent = borrowed(searcher, top, lambda d: _allowed(d, allow, hidden))
    for docnum, score in lent.items():
        hit = _added(searcher, found, docnum)
        if score > hit.parts["text"]:  # (what it lacks of its neighbour's match, no more)
            hit.parts["context"] = round(score - hit.parts["text"], 6)
    bonuses = _entity_bonus(searcher, asked.words, allow, hidden, found.hits)
    # A link counts as a mention of the note it names, by that note's title (of a note
    # the filters may leave out, as an entity's gloss may be).
    linked = links.title_bonus(
        searcher,
        asked.words,
        lambda d: _allowed(d, allow, hidden),
        found.hits,
        lambda: found.hits if unfiltered is None else unfiltered,
    )
    for docnum, strength in linked.items():
        bonuses[docnum] = max(bonuses.get(docnum, 0.0), strength)
    for docnum, bonus in bonuses.items():
        hit = _added(searcher, found, docnum)
        hit.parts["entity"] = round(bonus * found.best_text * ENTITY_WEIGHT, 6)
    return found


def _added(searcher: Searcher, found: Candidates, docnum: int) -> Hit:
    """The candidate of docnum, added (and counted) if the text did not match it."""
    hit = found.hits.get(docnum)
    if hit is None:
        hit = found.hits[docnum] = Hit(stored.Stored.of(searcher, docnum), {"text": 0.0})
        found.total += 1
    return hit


def best_by_text(
    searcher: Searcher, scores: Any, dropped: list[str], n: int
) -> list[tuple[int, float]]:
    """The n best (docnum, text score), the dropped common words scored for the best only.

    The common words were left out of the match (too costly to score everywhere) but still
    tell the billing *service* from the billing *worker*, so they are added to the scores
    of the RESCORED_SHARE x n best candidates before the n are chosen.
    """
    common = [w for w in dropped if doc_frequency(searcher, "all", w)]
    if not common:
        return top_scored(searcher, scores, n)
    best = dict(top_scored(searcher, scores, n * RESCORED_SHARE))
    return top_scored(searcher, add_scores(searcher, "all", common, best), n)


def distinctive_words(searcher: Searcher, words: list[str]) -> list[str]:
    """The query words that occur in the vault, without the very common ones.

    A word found in more than COMMON_SHARE of all memories (and in at least COMMON_MINIMUM)
    adds little to BM25 but costs the most to match in a large vault; it is dropped when
    the query has a rarer word.
    """
    return _distinctive(searcher, "all", words)


def _distinctive(searcher: Searcher, field_name: str, words: list[str]) -> list[str]:
    present = {w: doc_frequency(searcher, field_name, w) for w in words}
    present = {w: df for w, df in present.items() if df}
    limit = max(COMMON_SHARE * searcher.doc_count(), COMMON_MINIMUM)
    rare = [w for w, df in present.items() if df <= limit]
    return rare or sorted(present, key=present.__getitem__)[:1]


def _related_forms(searcher: Searcher, every: list[str]) -> dict[str, list[str]]:
    """word -> the forms of it the vault holds (own -> owner), none of them common."""
    limit = max(COMMON_SHARE * searcher.doc_count(), COMMON_MINIMUM)
    found = {
        word: [
            f
            for f in related_forms(word)
            if f not in every and 0 < doc_frequency(searcher, "all", f) <= limit
        ]
        for word in every
    }
    return {word: held for word, held in found.items() if held}


def _relevant(
    searcher: Searcher, every: list[str], forms: dict[str, list[str]], docnums: list[int]
) -> bool:
    """Whether one of docnums holds RELEVANT_SHARE of the query's words (every), each
    weighed by its idf; a related form of a word counts as the word."""
    weights = [idf(searcher, "all", word) for word in every]
    found = [holding(searcher, "all", [word, *forms.get(word, [])]) for word in every]
    wanted = RELEVANT_SHARE * sum(weights)
    return any(
        sum(weight for weight, has in zip(weights, found, strict=True) if has[docnum]) >= wanted
        for docnum in docnums
    )


def of_type(searcher: Searcher, kind: str) -> set[int]:
    """The docnums of the memories of one type, kept per reader."""

    def of_kind() -> set[int]:
        return set(docnums_with(searcher, "memory_type", kind))

    return per_reader(searcher.reader(), f"of type {kind}", of_kind)


def _allowed(docnum: int, allow: set | None, hidden: set | None) -> bool:
    return (allow is None or docnum in allow) and not (hidden and docnum in hidden)


def _best_unfiltered(searcher: Searcher, words: list[str], hidden: set | None, n: int) -> dict:
    """The n best text matches whatever the filters (the notes a filtered hit may link to)."""
    return dict(top_scored(searcher, text_scores(searcher, "all", words, None, hidden), n))


# --- context: the memories written beside a match ------------------------------------------


def borrowed(
    searcher: Searcher, scored: Iterable[tuple[int, float]], allowed: Callable[[int], bool]
) -> dict[int, float]:
    """docnum -> the most it borrows from a scored neighbour in its batch, for the allowed
    neighbours of each (docnum, text score).

    The items of one `remember` batch are an ordered exchange (a conversation's turns, one
    session's notes). A batch is the memories of one commit in the order of their ids,
    which are minted in order (core/ids.py); only the tool's memories (ULIDs) count: a
    person's notes committed together (the links a rename rewrote) are no exchange.
    """
    lent: dict[int, float] = {}
    for docnum, score in scored:
        before, after = neighbours(searcher, docnum)
        for other, share in ((after, AFTER_SHARE), (before, BEFORE_SHARE)):
            if other is not None and allowed(other):
                lent[other] = max(lent.get(other, 0.0), share * score)
        later = neighbours(searcher, after)[1] if after is not None else None
        if later is not None and allowed(later):  # (the answer to a question's reply)
            lent[later] = max(lent.get(later, 0.0), SECOND_AFTER_SHARE * score)
    return lent


def neighbours(searcher: Searcher, docnum: int) -> tuple[int | None, int | None]:
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


def _batch(searcher: Searcher, commit: str) -> list[int]:
    """The docnums of a commit's memories with ULIDs, in id order; kept per reader."""
    kept = per_reader(searcher.reader(), "batches", dict)
    if commit not in kept:
        ids = postings.columns(searcher)["memory_id"]
        docnums = postings.docnums_with(searcher, "version_id", commit)
        members = sorted((d for d in docnums if is_ulid(ids[d])), key=ids.__getitem__)
        kept[commit] = members if 1 < len(members) <= LARGEST_BATCH else []
    return kept[commit]


# --- entities and links the query names ----------------------------------------------------


def _entity_bonus(
    searcher: Searcher,
    words: list[str],
    allow: set | None,
    hidden: set | None,
    hits: dict[int, Hit],
) -> dict[int, float]:
    """docnum -> share of the query words that a gloss of an entity it mentions matches."""
    if not words:  # (found only by related forms of its words: no word to share)
        return {}

    wanted = set(words)
    # Words in most glosses ("team", "service") barely tell entities apart but make this
    # search score most of the vault: they are left out when rarer ones are there.
    in_glosses = _distinctive(searcher, "glosses", words)
    glossed = text_scores(searcher, "glosses", in_glosses, None, hidden)
    gloss_hits = top_scored(searcher, glossed, 10)
    sources = [stored.mentions(searcher, docnum) for docnum, _ in gloss_hits] + [
        h.fields["mentions"] for h in hits.values()
    ]
    matched: dict[tuple[str, str], tuple[str, float]] = {}
    for mentions in sources:
        for name, kind, gloss in mentions:
            # Words of the name are scored by the text match already; the bonus is for
            # what the gloss adds (Ana *the designer*).
            extra = (gloss_words(gloss) - gloss_words(name)) & wanted
            strength = len(extra) / len(wanted)
            key = (name_key(name), kind)
            if strength > matched.get(key, ("", 0.0))[1]:
                matched[key] = (gloss, strength)
    strongest = sorted(matched.items(), key=lambda item: -item[1][1])[:MATCHED_ENTITIES]
    bonus: dict[int, float] = {}
    for (name, kind), (gloss, strength) in strongest:
        for docnum, hit in hits.items():
            if _mentions_as(hit.fields["mentions"], name, kind, gloss):
                bonus[docnum] = max(bonus.get(docnum, 0.0), strength)
        # Memories the text did not reach are looked up only for entities mentioned in few
        # memories: a person, a project. For one in hundreds, the text match decides.
        if doc_frequency(searcher, "entity_keys", f"{name}|{kind}") <= EXPANSION_LIMIT:
            for docnum in _mentioning_as(searcher, name, kind, gloss):
                if docnum not in hits and _allowed(docnum, allow, hidden):
                    bonus[docnum] = max(bonus.get(docnum, 0.0), strength)
    return bonus


def _mentions_as(mentions: list[list[str]], name: str, kind: str, gloss: str) -> bool:
    """Whether mentions name the entity (by its name key and kind) with a compatible gloss."""
    return any(name_key(n) == name and k == kind and compatible(g, gloss) for n, k, g in mentions)


def _mentioning_as(searcher: Searcher, name: str, kind: str, gloss: str) -> list[int]:
    """Docnums (in order) of the memories that mention the entity as _mentions_as says,
    from plain postings and each one's mentions, kept per index generation: the same
    entities come back query after query."""
    kept = per_reader(searcher.reader(), "mentioning as", dict)
    if (name, kind, gloss) not in kept:
        kept[name, kind, gloss] = [
            docnum
            for docnum in stored.mentioning(searcher, f"{name}|{kind}")
            if _mentions_as(stored.mentions(searcher, docnum), name, kind, gloss)
        ]
    return kept[name, kind, gloss]
