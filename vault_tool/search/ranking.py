"""Turning a query and filters into ranked, budgeted hits.

Score of a hit = (text + context + entity + about + feedback + valid_time + meaning) x
factor, where
- text is BM25 over every field (title, body, entity names, glosses, facts, tags, weighted
  by repetition in one field); words in most memories are scored for the best candidates
  only;
- entity is a bonus when the query matches the gloss of an entity the memory mentions,
  even when this memory glosses it more briefly, or the title of a note it links to, or
  names in full an entity it mentions ("Ana Costa", not her namesake Ana Ruiz);
- about is a bonus when a fact's subject is someone the query names (what Ana said, for
  "what did Ana make");
- context is what a memory borrows from the match of the one before or after it in its
  batch (search/context.py: the reply to a question holding the query's words);
- feedback is a bounded boost (or penalty) from operators' judgements of similar queries;
- text also counts related forms of the query's words (owner for owns) at FORM_WEIGHT;
- valid_time is a boost when the query names a time (a date, "last week", "in May") and a
  fact of the memory holds then, or the memory was made then;
- type is a bonus for the kind of memory the question asks for ("what did we decide"
  asks for decisions: signals.asked_types);
- factor is x 1.15 when pinned, x 0.6 when the fact it is best found by has ended and the
  query asks about now (names no time, is not in the past tense), and x 0.5 when superseded
  by a live memory (which, and the memory replacing that one in turn, is placed above it);
  in a query about now, a later memory of its type about the same entities that matches
  about as well is placed above it too, without lowering it;
- meaning (only with `[search] semantic = true` and the extra) moves each candidate to
  where the fusion of its rank by words and its rank by meaning puts it (search/fusion.py).
Each part is kept so `search --explain` can show the whole score. A query none of whose
candidates holds RELEVANT_SHARE of the words that say what it is about (each weighed by
its idf; the words that say when left out) has nothing relevant: no hits, a count of 0.
The query's syntax (core/query.py) is read first: its filters, phrases and exclusions
narrow the candidates (search/listing.py), and a query of filters alone lists what they
leave, newest first.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from vault_tool.core.entities import compatible
from vault_tool.core.projects import Scope
from vault_tool.core.query import parse_query
from vault_tool.core.search_call import Controls
from vault_tool.core.spoken_dates import named_time, without_now, without_time
from vault_tool.core.text import gloss_words, name_key, query_words
from vault_tool.core.word_forms import related_forms
from vault_tool.search import context, links, stored
from vault_tool.search.bm25 import (
    add_scores,
    added_within,
    holding,
    idf,
    text_scores,
    top_scored,
    with_forms,
)
from vault_tool.search.fusion import fuse_meaning
from vault_tool.search.hits import Hit
from vault_tool.search.listing import narrowed, newest
from vault_tool.search.postings import doc_frequency, docnums_with, per_reader
from vault_tool.search.signals import (
    about_someone_named,
    asked_types,
    feedback_signals,
    without_asked,
    words_of,
)
from vault_tool.search.superseded import place_superseded
from vault_tool.search.time_ranking import time_signals

# A word in more than this share of all memories is dropped when the query has rarer ones.
COMMON_SHARE = 0.2
# ... and only when it is in at least this many: below that, matching it is cheap anyway.
COMMON_MINIMUM = 1000
# The common words are scored for this many times the candidates a query needs.
RESCORED_SHARE = 4
# A related form of a query word (owner for own) scores this share of the word itself.
FORM_WEIGHT = 0.6
# A hit mentioning an entity the query names in full gets this share of the best text score.
NAME_WEIGHT = 0.15
# At most this many entities whose glosses match the query give a bonus.
MATCHED_ENTITIES = 3
# Memories the text did not match are added for an entity mentioned in at most this many.
EXPANSION_LIMIT = 100
PINNED_FACTOR = 1.15
# The entity bonus is at most this share of the best text score of the query.
ENTITY_WEIGHT = 0.1
# A hit about someone the query names (a fact's subject: who said or did it) gets this share
# of the best text score: "what did Ana say about the park" means Ana's words first.
ABOUT_WEIGHT = 0.2
# Feedback moves a hit by at most this share of the best text score of the query.
FEEDBACK_WEIGHT = 0.25
# A hit of the type the question asks for gets this share of the best text score.
TYPE_WEIGHT = 0.2
# A query is answered only when one of its best candidates holds at least this share of
# its words, each weighed by its idf (a word no memory holds weighs most): "how do we rotate
# Nomad credentials for the payroll service", in a vault where only "service" is said, has
# nothing relevant. Set on the team's tuning questions, where the unanswerable ones share
# the vault's words by design: at 0.15 every abstention was right (0.3 abstained on 8 of
# 20 paraphrased questions) and LoCoMo's answerable questions lost none of their hits.
RELEVANT_SHARE = 0.15


def rank(
    searcher: Any,
    text: str,
    controls: Controls,
    now: datetime,
    judgements: list[tuple[str, int, str]] = (),  # type: ignore[assignment]
    dense: Any = None,
) -> tuple[list[Hit], int]:
    """The hits of a query's page (its top_k from its offset, and one more if there is
    one), in its order, and how many memories matched it.

    judgements are operators' (memory_id, +1/-1, query) from the ledger's feedback; dense
    the vault's DenseIndex when meaning is on (search/fusion.py).
    """

    query = parse_query(text)  # its syntax: the words ranked, the rest narrows (core/query.py)
    # The words a memory is found by: not those that say when it holds ("right now"); those
    # that ask for a kind of memory ("decide", "prefer") only in memories of that kind (a
    # note saying "nothing decided yet" is no answer to "what did we decide"), unless
    # nothing else is left.
    said = query_words(without_now(query.text)) or query_words(query.text)
    kinds = asked_types(query.text)
    every = query_words(without_asked(without_now(query.text))) or said
    asking = [w for w in said if w not in every]
    words = distinctive_words(searcher, every)
    forms = _related_forms(searcher, every)
    if not (words or forms or query.lists):
        return [], 0
    allow, hidden = narrowed(searcher, controls, query, now)
    if allow is not None and not allow:
        return [], 0  # (Whoosh reads an empty filter as no filter at all)
    # One hit more than the page asks for: whether there are more (search_call.Controls).
    start, end = controls.offset, controls.offset + controls.top_k + 1
    oldest = controls.order == "oldest"
    if query.lists:  # nothing to rank by: what the filters leave, newest first
        docnums, total = newest(searcher, allow, hidden, start, end - start, oldest=oldest)
        listed = [Hit(stored.Stored.of(searcher, d), {"text": 0.0}) for d in docnums]
        return _loaded(listed), total
    pool = max((controls.offset + controls.top_k) * 3, 15)
    scores = text_scores(searcher, "all", words, allow, hidden)
    if forms:
        scores = with_forms(searcher, "all", scores, forms, FORM_WEIGHT, allow, hidden)
    if asking:
        of_kinds = set().union(*(_of_type(searcher, kind) for kind in kinds))
        scores = added_within(searcher, "all", scores, asking, of_kinds, allow, hidden)
    total = len(scores)
    if controls.order != "relevance":  # the memories the words match, by when they changed
        matched = scores.matches()
        docnums, _ = newest(searcher, set(matched), hidden, start, end - start, oldest=oldest)
        dated = [Hit(stored.Stored.of(searcher, d), {"text": matched[d]}) for d in docnums]
        return _loaded(dated), total
    top = _best_by_text(searcher, scores, [w for w in every if w not in words], pool)
    # Whether the vault holds anything the query is about, whatever the filters: a note the
    # filters leave may be found by its link to one they leave out.
    about = query_words(without_asked(without_time(query.text))) or every
    best = top if allow is None else _best_unfiltered(searcher, words, hidden, pool).items()
    if not _relevant(searcher, about, forms, [docnum for docnum, _ in best]):
        return [], 0
    hits: dict[int, Hit] = {
        docnum: Hit(stored.Stored.of(searcher, docnum), {"text": score}) for docnum, score in top
    }
    best_text = max((h.parts["text"] for h in hits.values()), default=1.0) or 1.0
    lent = context.borrowed(searcher, top, lambda d: _allowed(d, allow, hidden))
    for docnum, score in lent.items():
        hit = hits.get(docnum)
        if hit is None:
            hit = hits[docnum] = Hit(stored.Stored.of(searcher, docnum), {"text": 0.0})
            total += 1
        if score > hit.parts["text"]:  # (what it lacks of its neighbour's match, no more)
            hit.parts["context"] = round(score - hit.parts["text"], 6)
    bonuses = _entity_bonus(searcher, words, allow, hidden, hits)
    # A link counts as a mention of the note it names, by that note's title (of a note
    # the filters may leave out, as an entity's gloss may be).
    linked = links.title_bonus(
        searcher,
        words,
        lambda d: _allowed(d, allow, hidden),
        hits,
        lambda: hits if allow is None else _best_unfiltered(searcher, words, hidden, pool),
    )
    for docnum, strength in linked.items():
        bonuses[docnum] = max(bonuses.get(docnum, 0.0), strength)
    for docnum, bonus in bonuses.items():
        hit = hits.get(docnum)
        if hit is None:
            hit = hits[docnum] = Hit(stored.Stored.of(searcher, docnum), {"text": 0.0})
            total += 1
        hit.parts["entity"] = round(bonus * best_text * ENTITY_WEIGHT, 6)
    said = f" {words_of(query.text)} "
    for hit in _named(said, hits):
        hit.parts["entity"] = max(hit.parts.get("entity", 0.0), round(NAME_WEIGHT * best_text, 6))
    for docnum, hit in hits.items():
        if about_someone_named(stored.times(searcher, docnum)["facts"], said):
            hit.parts["about"] = round(ABOUT_WEIGHT * best_text, 6)
    for kind in kinds:
        of_kind = _of_type(searcher, kind)
        for docnum, hit in hits.items():
            if docnum in of_kind:
                hit.parts["type"] = round(TYPE_WEIGHT * best_text, 6)
    # All the query's words, not only the distinctive ones: the judged queries are compared
    # the same way, whatever the size of the vault.
    for memory_id, signal in feedback_signals(judgements, every).items():
        for hit in hits.values():
            if hit.memory_id == memory_id:
                hit.parts["feedback"] = round(FEEDBACK_WEIGHT * signal * best_text, 6)
    if dense is not None:
        fuse_meaning(dense, query.text, hits, best_text)
    time_signals(searcher, hits, named_time(query.text, now.date()), every, now, best_text)
    for hit in hits.values():
        if hit.fields.get("pinned"):
            hit.parts["factor"] = hit.parts.get("factor", 1.0) * PINNED_FACTOR
    ordered = sorted(hits.values(), key=lambda h: (-h.score, h.fields["path"]))
    return _loaded(place_superseded(searcher, ordered, hidden, allow)[start:end]), total


def with_key(searcher: Any, key: str, now: datetime) -> list[Hit]:
    """The memories whose key is this one, by path; dismissed and expired ones left out."""
    from whoosh import query as q

    dismissed, expiring = stored.hidden_parts(searcher)
    hidden = dismissed | {docnum for docnum, at in expiring if at <= now.timestamp()}
    docnums = [d for d in searcher.docs_for_query(q.Term("key", key)) if d not in hidden]
    found = [Hit(stored.Stored.of(searcher, d), {"text": 1.0}) for d in docnums]
    return _loaded(sorted(found, key=lambda hit: hit.fields["path"]))


def by_words(
    searcher: Any, text: str, n: int, now: datetime, project: Scope | None = None
) -> list[Hit]:
    """The n best memories (of one project, if given) by their words alone, without the
    entity, link, time, feedback and meaning signals: what a check for a memory a new one
    repeats needs (engine/similar.py), at a fraction of a search's cost."""
    every = query_words(text)
    words = distinctive_words(searcher, every)
    if not words:
        return []
    allow, hidden = narrowed(searcher, Controls(top_k=n, project=project), parse_query(""), now)
    scores = text_scores(searcher, "all", words, allow, hidden)
    top = _best_by_text(searcher, scores, [w for w in every if w not in words], n)
    return _loaded([Hit(stored.Stored.of(searcher, d), {"text": s}) for d, s in top])


def _loaded(chosen: list[Hit]) -> list[Hit]:
    """chosen, their stored fields read while the searcher is open: callers use them after."""
    for hit in chosen:
        if isinstance(hit.fields, stored.Stored):
            hit.fields._load()
    return chosen


def _best_by_text(
    searcher: Any, scores: Any, dropped: list[str], n: int
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


def distinctive_words(searcher: Any, words: list[str]) -> list[str]:
    """The query words that occur in the vault, without the very common ones.

    A word found in more than COMMON_SHARE of all memories (and in at least COMMON_MINIMUM)
    adds little to BM25 but costs the most to match in a large vault; it is dropped when
    the query has a rarer word.
    """
    return _distinctive(searcher, "all", words)


def _distinctive(searcher: Any, field_name: str, words: list[str]) -> list[str]:
    present = {w: doc_frequency(searcher, field_name, w) for w in words}
    present = {w: df for w, df in present.items() if df}
    limit = max(COMMON_SHARE * searcher.doc_count(), COMMON_MINIMUM)
    rare = [w for w, df in present.items() if df <= limit]
    return rare or sorted(present, key=present.__getitem__)[:1]


def _relevant(
    searcher: Any, every: list[str], forms: dict[str, list[str]], docnums: list[int]
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


def _of_type(searcher: Any, kind: str) -> set[int]:
    """The docnums of the memories of one type, kept per reader."""

    def of_kind() -> set[int]:
        return set(docnums_with(searcher, "memory_type", kind))

    return per_reader(searcher.reader(), f"of type {kind}", of_kind)


def _named(said: str, hits: dict[int, Hit]) -> list[Hit]:
    """The hits that mention an entity the query (said: its words_of, spaced) names in full
    (a name of two words or more: "Ana Costa", not the "Ana" that Ana Ruiz's memories
    share)."""
    return [
        hit
        for hit in hits.values()
        if any(
            " " in key and f" {key} " in said
            for key in (words_of(name) for name, _, _ in hit.fields["mentions"])
        )
    ]


def _related_forms(searcher: Any, every: list[str]) -> dict[str, list[str]]:
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


def _allowed(docnum: int, allow: set | None, hidden: set | None) -> bool:
    return (allow is None or docnum in allow) and not (hidden and docnum in hidden)


def _best_unfiltered(searcher: Any, words: list[str], hidden: set | None, n: int) -> dict:
    """The n best text matches whatever the filters (the notes a filtered hit may link to)."""
    return dict(top_scored(searcher, text_scores(searcher, "all", words, None, hidden), n))


def _entity_bonus(
    searcher: Any, words: list[str], allow: set | None, hidden: set | None, hits: dict[int, Hit]
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


def _mentioning_as(searcher: Any, name: str, kind: str, gloss: str) -> list[int]:
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
