"""Turning a query and filters into ranked, budgeted hits.

Score of a hit = (text + entity + feedback) x factor, where
- text is BM25 over every field (title, body, entity names, glosses, facts, tags, weighted
  by repetition in one field);
- entity is a bonus when the query matches the gloss of an entity the memory mentions,
  even when this memory glosses it more briefly;
- feedback is a bounded boost (or penalty) from operators' judgements in the ledger;
- factor is x 1.15 when pinned and x 0.5 when superseded by a live memory.
Each part is kept so `search --explain` can show the whole score.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from vault_tool.entities import compatible, gloss_words, normalize_name
from vault_tool.memory import parse_time

# A word in more than this share of all memories is dropped when the query has rarer ones.
COMMON_SHARE = 0.2
# ... and only when it is in at least this many: below that, matching it is cheap anyway.
COMMON_MINIMUM = 1000
# At most this many entities whose glosses match the query give a bonus.
MATCHED_ENTITIES = 3
# Memories the text did not match are added for an entity mentioned in at most this many.
EXPANSION_LIMIT = 100
PINNED_FACTOR = 1.15
SUPERSEDED_FACTOR = 0.5
# The entity bonus is at most this share of the best text score of the query.
ENTITY_WEIGHT = 0.3
# A hit whose share of the budget would be smaller than this gets no content at all:
# a few stray bytes help nobody.
MIN_CONTENT_BYTES = 48
# Feedback moves a hit by at most this share of the best text score of the query.
FEEDBACK_WEIGHT = 0.25


@dataclass
class Controls:
    """Ranking controls and filters of one query."""

    top_k: int = 5
    maximum_context_bytes: int = 12000
    memory_types: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    since: str | None = None
    until: str | None = None


@dataclass(eq=False)
class Hit:
    """One ranked memory with the parts of its score."""

    fields: dict[str, Any]
    parts: dict[str, float]
    superseded_by: list[str] = field(default_factory=list)

    @property
    def record(self) -> dict[str, Any]:
        """Content and semantic delta, decoded only for the hits that are returned."""
        if "_record" not in self.__dict__:
            self.__dict__["_record"] = json.loads(self.fields["record"])
        return self.__dict__["_record"]

    @property
    def memory_id(self) -> str:
        return self.fields["memory_id"]

    @property
    def score(self) -> float:
        p = self.parts
        return (p.get("text", 0.0) + p.get("entity", 0.0) + p.get("feedback", 0.0)) * p.get(
            "factor", 1.0
        )


def query_words(text: str) -> list[str]:
    """The analysed words of a query (stemmed, accent-folded, stop words dropped)."""
    return list(_query_words(text))


@lru_cache(maxsize=4096)
def _query_words(text: str) -> tuple[str, ...]:
    # Cached: feedback compares every search with the queries operators judged.
    from vault_tool.index import text_analyzer

    return tuple(dict.fromkeys(token.text for token in text_analyzer()(text)))


def rank(
    searcher: Any,
    text: str,
    controls: Controls,
    now: datetime,
    judgements: list[tuple[str, int, str]] = (),  # type: ignore[assignment]
) -> tuple[list[Hit], int]:
    """The top hits for a query and how many memories matched it.

    judgements are operators' (memory_id, +1/-1, query) from the ledger's feedback.
    """
    from whoosh import query as q

    words = distinctive_words(searcher, query_words(text))
    if not words:
        return [], 0
    allow, hidden = _filters(searcher, controls, now)
    if allow is not None and not allow:
        return [], 0  # (Whoosh reads an empty filter as no filter at all)
    pool = max(controls.top_k * 3, 15)
    # optimize=False: block-quality skipping costs more than it saves at this pool size,
    # and without it the collector counts every match, so total_matches is exact and free.
    results = searcher.search(
        q.Or([q.Term("all", w) for w in words]),
        limit=pool,
        filter=allow,
        mask=hidden,
        optimize=False,
    )
    total = len(results)
    hits: dict[int, Hit] = {f.docnum: _hit(f.fields(), {"text": float(f.score)}) for f in results}
    best_text = max((h.parts["text"] for h in hits.values()), default=1.0) or 1.0
    for docnum, bonus in _entity_bonus(searcher, words, allow, hidden, hits).items():
        hit = hits.get(docnum)
        if hit is None:
            hit = hits[docnum] = _hit(searcher.stored_fields(docnum), {"text": 0.0})
            total += 1
        hit.parts["entity"] = round(bonus * best_text * ENTITY_WEIGHT, 6)
    for memory_id, signal in feedback_signals(judgements, words).items():
        for hit in hits.values():
            if hit.memory_id == memory_id:
                hit.parts["feedback"] = round(FEEDBACK_WEIGHT * signal * best_text, 6)
    for hit in hits.values():
        if hit.fields.get("pinned"):
            hit.parts["factor"] = hit.parts.get("factor", 1.0) * PINNED_FACTOR
    ordered = sorted(hits.values(), key=lambda h: (-h.score, h.fields["path"]))
    ordered = _place_superseded(searcher, ordered, hidden)
    return ordered[: controls.top_k], total


def feedback_signals(judgements: list[tuple[str, int, str]], words: list[str]) -> dict[str, float]:
    """memory_id -> a signal in (-1, 1) from operators' feedback, strongest for similar queries.

    Each judgement counts 0.5, plus up to 0.5 more by how much its query shares words with
    this one (Jaccard); the sum goes through tanh(x / 2), so no amount of feedback moves a
    memory by more than FEEDBACK_WEIGHT of the best text score.
    """
    if not judgements:
        return {}
    wanted = set(words)
    net: dict[str, float] = {}
    for memory_id, sign, query in judgements:
        theirs = set(query_words(query))
        similarity = len(wanted & theirs) / len(wanted | theirs) if wanted | theirs else 0.0
        net[memory_id] = net.get(memory_id, 0.0) + sign * (0.5 + 0.5 * similarity)
    return {memory_id: math.tanh(value / 2) for memory_id, value in net.items() if value}


def distinctive_words(searcher: Any, words: list[str]) -> list[str]:
    """The query words that occur in the vault, without the very common ones.

    A word found in more than COMMON_SHARE of all memories (and in at least COMMON_MINIMUM)
    adds little to BM25 but costs the most to match in a large vault; it is dropped when
    the query has a rarer word.
    """
    present = {w: searcher.doc_frequency("all", w) for w in words}
    present = {w: df for w, df in present.items() if df}
    limit = max(COMMON_SHARE * searcher.doc_count(), COMMON_MINIMUM)
    rare = [w for w, df in present.items() if df <= limit]
    return rare or sorted(present, key=present.__getitem__)[:1]


def _hit(fields: dict[str, Any], parts: dict[str, float]) -> Hit:
    return Hit(fields=fields, parts=parts)


def _filters(searcher: Any, controls: Controls, now: datetime) -> tuple[set | None, set | None]:
    """(allowed docnums or None for all, hidden docnums or None for none)."""
    from whoosh import query as q

    required = []
    if controls.memory_types:
        required.append(q.Or([q.Term("memory_type", t) for t in controls.memory_types]))
    required.extend(q.Term("tags", t.lower()) for t in controls.tags)
    if controls.since or controls.until:
        start = int(parse_time(controls.since).timestamp()) if controls.since else None
        end = _end_of(controls.until) if controls.until else None
        required.append(q.NumericRange("updated_ts", start, end))
    allow = set(searcher.docs_for_query(q.And(required))) if required else None
    dismissed, expiring = _hidden_parts(searcher)
    moment = now.timestamp()
    hidden = dismissed | {docnum for docnum, at in expiring if at <= moment}
    # Plain sets: Whoosh tests a filter's truth once per document, and a BitSet's truth
    # test scans every byte of it.
    return allow, hidden or None


def _hidden_parts(searcher: Any) -> tuple[set[int], list[tuple[int, int]]]:
    """Dismissed docnums, and (docnum, expiry) of memories that expire: cached per reader."""
    from whoosh import query as q

    reader = searcher.reader()
    cached = getattr(reader, "_vault_hidden", None)
    if cached is None:
        dismissed = set(searcher.docs_for_query(q.Term("status", "dismissed")))
        expiring = [
            (docnum, searcher.stored_fields(docnum)["expires_ts"])
            for docnum in searcher.docs_for_query(q.NumericRange("expires_ts", 1, None))
        ]
        cached = reader._vault_hidden = (dismissed, expiring)
    return cached


def _end_of(value: str) -> int:
    moment = parse_time(value)
    if len(value.strip()) == 10:  # a date means the whole day
        moment += timedelta(days=1, seconds=-1)
    return int(moment.timestamp())


def _entity_bonus(
    searcher: Any, words: list[str], allow: set | None, hidden: set | None, hits: dict[int, Hit]
) -> dict[int, float]:
    """docnum -> share of the query words that a gloss of an entity it mentions matches."""
    from whoosh import query as q

    wanted = set(words)
    gloss_hits = searcher.search(q.Or([q.Term("glosses", w) for w in words]), limit=10, mask=hidden)
    sources = [f.fields()["mentions"] for f in gloss_hits] + [
        h.fields["mentions"] for h in hits.values()
    ]
    matched: dict[tuple[str, str], tuple[str, float]] = {}
    for mentions in sources:
        for name, kind, gloss in mentions:
            # Words of the name are scored by the text match already; the bonus is for
            # what the gloss adds (Ana *the designer*).
            extra = (gloss_words(gloss) - gloss_words(name)) & wanted
            strength = len(extra) / len(wanted)
            key = (normalize_name(name), kind)
            if strength > matched.get(key, ("", 0.0))[1]:
                matched[key] = (gloss, strength)
    strongest = sorted(matched.items(), key=lambda item: -item[1][1])[:MATCHED_ENTITIES]
    bonus: dict[int, float] = {}
    for (name, kind), (gloss, strength) in strongest:
        key = f"{name}|{kind}"
        candidates = [(docnum, hit.fields) for docnum, hit in hits.items()]
        # Memories the text did not reach are looked up only for entities mentioned in few
        # memories: a person, a project. For one in hundreds, the text match decides.
        if searcher.doc_frequency("entity_keys", key) <= EXPANSION_LIMIT:
            found = searcher.search(
                q.Term("entity_keys", key), limit=None, filter=allow, mask=hidden
            )
            candidates += [(f.docnum, f.fields()) for f in found if f.docnum not in hits]
        for docnum, fields in candidates:
            if any(
                normalize_name(n) == name and k == kind and compatible(g, gloss)
                for n, k, g in fields["mentions"]
            ):
                bonus[docnum] = max(bonus.get(docnum, 0.0), strength)
    return bonus


def _place_superseded(searcher: Any, ordered: list[Hit], hidden: set | None) -> list[Hit]:
    """Demote superseded hits and put each right below what replaced it (adding it if absent)."""
    from whoosh import query as q

    by_id = {h.memory_id: h for h in ordered}
    superseded = _superseded_ids(searcher)
    for hit in list(ordered):
        if hit.memory_id not in superseded:
            continue
        replacements = searcher.search(q.Term("supersedes", hit.memory_id), limit=5, mask=hidden)
        hit.superseded_by = [r["memory_id"] for r in replacements]
        if not hit.superseded_by:
            continue
        hit.parts["factor"] = hit.parts.get("factor", 1.0) * SUPERSEDED_FACTOR
        for found in replacements:
            if found["memory_id"] not in by_id:
                replacement = _hit(found.fields(), {"text": hit.parts.get("text", 0.0)})
                replacement.parts["entity"] = hit.parts.get("entity", 0.0)
                by_id[replacement.memory_id] = replacement
                ordered.append(replacement)
    ordered.sort(key=lambda h: (-h.score, h.fields["path"]))
    result: list[Hit] = []
    for hit in ordered:
        if hit in result:
            continue
        pending = [by_id[r] for r in hit.superseded_by if r in by_id and by_id[r] not in result]
        result.extend(pending)
        result.append(hit)
    return result


def _superseded_ids(searcher: Any) -> frozenset[str]:
    """Ids that some memory lists in supersedes (cached per index generation)."""
    reader = searcher.reader()
    cached = getattr(reader, "_vault_superseded", None)
    if cached is None:
        cached = frozenset(
            t.decode() if isinstance(t, bytes) else t for t in reader.lexicon("supersedes")
        )
        reader._vault_superseded = cached
    return cached


def hit_entries(
    hits: list[Hit],
    budget: int,
    pick_facts: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
    *,
    explain: bool = False,
) -> list[dict[str, Any]]:
    """Hits in the result shape of the search tool, their content fitted to the byte budget."""
    fitted = fit_budget([h.record["content_md"] for h in hits], budget)
    entries = []
    for hit, (content, truncated) in zip(hits, fitted, strict=True):
        delta = hit.record["semantic_delta"]
        entry = {
            "memory_id": hit.memory_id,
            "version_id": hit.fields["version_id"],
            "title": hit.fields["title"],
            "memory_type": hit.fields["memory_type"],
            "score": round(hit.score, 4),
            "content_md": content,
            "truncated": truncated,
            "facts": pick_facts(delta["facts"]),
            "tags": delta["tags"],
            "updated": hit.record["updated"],
            "path": hit.fields["path"],
        }
        if hit.superseded_by:
            entry["superseded_by"] = hit.superseded_by
        if explain:
            entry["score_parts"] = hit.parts
        entries.append(entry)
    return entries


# --- the byte budget -------------------------------------------------------------------------


def fit_budget(texts: list[str], budget: int) -> list[tuple[str, bool]]:
    """Cut texts, in rank order, so their UTF-8 sizes sum to at most budget; flag cut ones."""
    out = []
    left = budget
    for text in texts:
        size = len(text.encode("utf-8"))
        if size <= left:
            out.append((text, False))
            left -= size
            continue
        cut = clean_cut(text, left) if left >= MIN_CONTENT_BYTES else ""
        left -= len(cut.encode("utf-8"))
        out.append((cut, True))
    return out


def clean_cut(text: str, limit: int) -> str:
    """The longest prefix of text within limit UTF-8 bytes that ends on a clean boundary.

    Prefers the end of a paragraph, then of a line, then of a sentence, then a space;
    never splits a character.
    """
    if limit <= 0:
        return ""
    prefix = text.encode("utf-8")[:limit].decode("utf-8", "ignore")
    for boundary in ("\n\n", "\n", ". ", " "):
        at = prefix.rfind(boundary)
        if at >= len(prefix) // 3 and at > 0:
            return prefix[: at + (1 if boundary == ". " else 0)].rstrip()
    return prefix


def matching_facts(facts: list[dict[str, Any]], words: list[str]) -> list[dict[str, Any]]:
    """The facts that share a word with the query; all facts when none does."""
    from vault_tool.index import text_analyzer

    analyzer = text_analyzer()
    wanted = set(words)
    chosen = [
        f
        for f in facts
        if wanted & {t.text for t in analyzer(f"{f['subject']} {f['predicate']} {f['object']}")}
    ]
    return chosen or facts
