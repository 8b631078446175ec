"""Ranking: a query and its filters -> ranked, budgeted hits, in three stages.

1. Candidates (search/candidates.py): what the query asks, and the memories that may
   answer it, each with its text score (BM25 over every field, search/bm25.py) and the
   context and entity parts of how it was reached; none when nothing is relevant.
2. Features (search/features.py): the signals, each a share of the best text score:
   who the question names, what kind of memory it asks for, operators' feedback, time,
   meaning (search/fusion.py, with `[search] semantic = true`).
3. Score (here): (text + context + entity + about + type + feedback + valid_time +
   meaning) x factor (pinned x 1.15, ended x 0.6, superseded x 0.5), in that order, each
   superseded memory below what replaced it, and a later memory that says a hit again
   above it (Hit.score; `search --explain` shows every part).
The query's syntax (core/query.py) is read first: its filters, phrases and exclusions
narrow the candidates (search/listing.py), and a query of filters alone lists what they
leave, newest first.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from vault_tool.core.projects import Scope
from vault_tool.core.query import parse_query
from vault_tool.core.search_call import Controls
from vault_tool.core.spoken_dates import named_time
from vault_tool.core.text import query_words
from vault_tool.search import candidates, features, stored
from vault_tool.search.bm25 import text_scores
from vault_tool.search.fusion import fuse_meaning
from vault_tool.search.hits import Hit
from vault_tool.search.listing import narrowed, newest

if TYPE_CHECKING:
    from whoosh.searching import Searcher

SUPERSEDED_FACTOR = 0.5
# Chains of replacements are followed this many steps beyond the hits the text found.
CHAIN_STEPS = 16


def rank(
    searcher: Searcher,
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
    asked = candidates.Asked.of(searcher, text)
    query = asked.query
    if not (asked.words or asked.forms or query.lists):
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
    scores = candidates.text_match(searcher, asked, allow, hidden)
    if controls.order != "relevance":  # the memories the words match, by when they changed
        matched = scores.matches()
        docnums, _ = newest(searcher, set(matched), hidden, start, end - start, oldest=oldest)
        dated = [Hit(stored.Stored.of(searcher, d), {"text": matched[d]}) for d in docnums]
        return _loaded(dated), len(scores)
    pool = max((controls.offset + controls.top_k) * 3, 15)
    found = candidates.gather(searcher, asked, scores, allow, hidden, pool)
    if found is None:
        return [], 0
    features.who_and_what(searcher, found, query.text, asked.kinds, judgements, asked.every)
    if dense is not None:
        fuse_meaning(dense, query.text, found.hits, found.best_text)
    named = named_time(query.text, now.date())
    features.time_signals(searcher, found.hits, named, asked.every, now, found.best_text)
    ordered = sorted(found.hits.values(), key=lambda h: (-h.score, h.fields["path"]))
    return _loaded(place_superseded(searcher, ordered, hidden, allow)[start:end]), found.total


def with_key(searcher: Searcher, key: str, now: datetime) -> list[Hit]:
    """The memories whose key is this one, by path; dismissed and expired ones left out."""
    from whoosh import query as q

    dismissed, expiring = stored.hidden_parts(searcher)
    hidden = dismissed | {docnum for docnum, at in expiring if at <= now.timestamp()}
    docnums = [d for d in searcher.docs_for_query(q.Term("key", key)) if d not in hidden]
    found = [Hit(stored.Stored.of(searcher, d), {"text": 1.0}) for d in docnums]
    return _loaded(sorted(found, key=lambda hit: hit.fields["path"]))


def by_words(
    searcher: Searcher, text: str, n: int, now: datetime, project: Scope | None = None
) -> list[Hit]:
    """The n best memories (of one project, if given) by their words alone, without the
    entity, link, time, feedback and meaning signals: what a check for a memory a new one
    repeats needs (engine/similar.py), at a fraction of a search's cost."""
    every = query_words(text)
    words = candidates.distinctive_words(searcher, every)
    if not words:
        return []
    allow, hidden = narrowed(searcher, Controls(top_k=n, project=project), parse_query(""), now)
    scores = text_scores(searcher, "all", words, allow, hidden)
    top = candidates.best_by_text(searcher, scores, [w for w in every if w not in words], n)
    return _loaded([Hit(stored.Stored.of(searcher, d), {"text": s}) for d, s in top])


def _loaded(chosen: list[Hit]) -> list[Hit]:
    """chosen, their stored fields read while the searcher is open: callers use them after."""
    for hit in chosen:
        if isinstance(hit.fields, stored.Stored):
            hit.fields._load()
    return chosen


def place_superseded(
    searcher: Searcher, ordered: list[Hit], hidden: set | None, allow: set | None = None
) -> list[Hit]:
    """Demote superseded hits and put each below its replacement, following whole chains.
    Only replacements the search's filters allow count (allow: those docnums; None: all):
    a search limited to one project never shows another's memory as a replacement.

    supersedes is followed transitively: when C replaced B which replaced A, C comes above
    B and B above A wherever A ranked, and C is added if only A or B matched. One step
    only (B above A) left B, itself stale, above A with the current C nowhere.
    """
    by_id = {h.memory_id: h for h in ordered}
    superseded = stored.superseded_ids(searcher)
    steps = {h.memory_id: 0 for h in ordered}
    # ordered grows while it is walked: a replacement added here is checked in turn.
    for hit in ordered:
        if hit.memory_id not in superseded or steps[hit.memory_id] >= CHAIN_STEPS:
            continue
        replacements = [
            stored.Stored.of(searcher, docnum)
            for docnum in stored.replacing(searcher, hit.memory_id)
            if not (hidden and docnum in hidden) and (allow is None or docnum in allow)
        ][:5]
        hit.superseded_by = [r["memory_id"] for r in replacements]
        if not hit.superseded_by:
            continue
        hit.parts["factor"] = hit.parts.get("factor", 1.0) * SUPERSEDED_FACTOR
        for found in replacements:
            if found["memory_id"] not in by_id:
                replacement = Hit(found, {"text": hit.parts.get("text", 0.0)})
                replacement.parts["entity"] = hit.parts.get("entity", 0.0)
                by_id[replacement.memory_id] = replacement
                steps[replacement.memory_id] = steps[hit.memory_id] + 1
                ordered.append(replacement)
    ordered.sort(key=lambda h: (-h.score, h.fields["path"]))
    return _newest_first(ordered, by_id)


def _newest_first(ordered: list[Hit], by_id: dict[str, Hit]) -> list[Hit]:
    """ordered, with each hit's replacements (and theirs, all the way) put right above it."""
    result: list[Hit] = []
    placed: set[int] = set()  # ids of Hit objects: two files may share a memory_id

    def place(hit: Hit) -> None:
        if id(hit) in placed:
            return
        placed.add(id(hit))  # before its replacements: a cycle stops here
        for newer in hit.superseded_by + hit.said_again_by:
            if newer in by_id:
                place(by_id[newer])
        result.append(hit)

    for hit in ordered:
        place(hit)
    return result
