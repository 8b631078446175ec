"""Turning a query and filters into ranked, budgeted hits.

Score of a hit = (text + entity + feedback + valid_time) x factor, where
- text is BM25 over every field (title, body, entity names, glosses, facts, tags, weighted
  by repetition in one field); words in most memories are scored for the best candidates
  only;
- entity is a bonus when the query matches the gloss of an entity the memory mentions,
  even when this memory glosses it more briefly;
- feedback is a bounded boost (or penalty) from operators' judgements of similar queries;
- valid_time is a boost when the query names a date and a fact of the memory holds then;
- factor is x 1.15 when pinned and x 0.5 when superseded by a live memory (which, and the
  memory replacing that one in turn, is placed above it).
Each part is kept so `search --explain` can show the whole score.
"""

from __future__ import annotations

import heapq
import json
import math
import re
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from vault_tool.core.memory import parse_time
from vault_tool.search.entities import compatible, gloss_words, normalize_name

# A word in more than this share of all memories is dropped when the query has rarer ones.
COMMON_SHARE = 0.2
# ... and only when it is in at least this many: below that, matching it is cheap anyway.
COMMON_MINIMUM = 1000
# The common words are scored for this many times the candidates a query needs.
RESCORED_SHARE = 4
# At most this many entities whose glosses match the query give a bonus.
MATCHED_ENTITIES = 3
# Memories the text did not match are added for an entity mentioned in at most this many.
EXPANSION_LIMIT = 100
PINNED_FACTOR = 1.15
SUPERSEDED_FACTOR = 0.5
# Chains of replacements are followed this many steps beyond the hits the text found.
CHAIN_STEPS = 16
# The entity bonus is at most this share of the best text score of the query.
ENTITY_WEIGHT = 0.1
# A hit whose share of the budget would be smaller than this gets no content at all:
# a few stray bytes help nobody.
MIN_CONTENT_BYTES = 48
# Feedback moves a hit by at most this share of the best text score of the query.
FEEDBACK_WEIGHT = 0.25
# A hit with a fact valid on a date the query names gets this share of the best text score.
VALID_TIME_WEIGHT = 0.6
# A day (2024-03-15) or a month (2024-03) in a query.
_DATE = re.compile(r"\b(\d{4}-(?:0[1-9]|1[0-2])(?:-(?:0[1-9]|[12]\d|3[01]))?)\b")


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
        added = p.get("text", 0.0) + p.get("entity", 0.0) + p.get("feedback", 0.0)
        return (added + p.get("valid_time", 0.0)) * p.get("factor", 1.0)


def query_words(text: str) -> list[str]:
    """The analysed words of a query (stemmed, accent-folded, stop words dropped)."""
    return list(_query_words(text))


@lru_cache(maxsize=4096)
def _query_words(text: str) -> tuple[str, ...]:
    # Cached: feedback compares every search with the queries operators judged.
    from vault_tool.search.index import text_analyzer

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

    every = query_words(text)
    words = distinctive_words(searcher, every)
    if not words:
        return [], 0
    allow, hidden = _filters(searcher, controls, now)
    if allow is not None and not allow:
        return [], 0  # (Whoosh reads an empty filter as no filter at all)
    pool = max(controls.top_k * 3, 15)
    scores = bm25_scores(searcher, "all", words, allow, hidden)
    total = len(scores)
    top = _best_by_text(searcher, scores, [w for w in every if w not in words], pool)
    hits: dict[int, Hit] = {
        docnum: _hit(_Stored.of(searcher, docnum), {"text": score}) for docnum, score in top
    }
    best_text = max((h.parts["text"] for h in hits.values()), default=1.0) or 1.0
    for docnum, bonus in _entity_bonus(searcher, words, allow, hidden, hits).items():
        hit = hits.get(docnum)
        if hit is None:
            hit = hits[docnum] = _hit(_Stored.of(searcher, docnum), {"text": 0.0})
            total += 1
        hit.parts["entity"] = round(bonus * best_text * ENTITY_WEIGHT, 6)
    # All the query's words, not only the distinctive ones: the judged queries are compared
    # the same way, whatever the size of the vault.
    for memory_id, signal in feedback_signals(judgements, every).items():
        for hit in hits.values():
            if hit.memory_id == memory_id:
                hit.parts["feedback"] = round(FEEDBACK_WEIGHT * signal * best_text, 6)
    dates = query_dates(text)
    if dates:  # only then: the facts of a candidate are read from its whole stored record
        for hit in hits.values():
            # All the query's words: "service" is too common to search by, not to tell the
            # billing service's facts from the billing worker's.
            match = valid_time_match(hit.record["semantic_delta"]["facts"], dates, every)
            if match:
                hit.parts["valid_time"] = round(VALID_TIME_WEIGHT * match * best_text, 6)
    for hit in hits.values():
        if hit.fields.get("pinned"):
            hit.parts["factor"] = hit.parts.get("factor", 1.0) * PINNED_FACTOR
    ordered = sorted(hits.values(), key=lambda h: (-h.score, h.fields["path"]))
    chosen = _place_superseded(searcher, ordered, hidden)[: controls.top_k]
    for hit in chosen:  # read while the searcher is open: callers use them after
        if isinstance(hit.fields, _Stored):
            hit.fields._load()
    return chosen, total


def _best_by_text(
    searcher: Any, scores: dict[int, float], dropped: list[str], n: int
) -> list[tuple[int, float]]:
    """The n best (docnum, text score), the dropped common words scored for the best only.

    The common words were left out of the match (too costly to score everywhere) but still
    tell the billing *service* from the billing *worker*, so they are added to the scores
    of the RESCORED_SHARE x n best candidates before the n are chosen.
    """
    common = [w for w in dropped if searcher.doc_frequency("all", w)]
    if not common:
        return top_scored(searcher, scores, n)
    best = dict(top_scored(searcher, scores, n * RESCORED_SHARE))
    return top_scored(searcher, add_bm25(searcher, "all", common, best), n)


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
        similarity = query_similarity(wanted, frozenset(_query_words(query)))
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


def query_dates(text: str) -> list[str]:
    """The days (YYYY-MM-DD) and months (YYYY-MM) a query names."""
    return _DATE.findall(text)


def valid_time_match(facts: list[dict[str, Any]], dates: list[str], words: list[str]) -> float:
    """How well a memory's facts that hold on a date of the query match its other words.

    The share of the query's words (dates aside) in the best such fact, so "who owned the
    warranty pipeline on 2023-10-20" lifts the owner of the warranty pipeline then more
    than the owner of the pricing pipeline then. Only facts with an interval count: one
    without holds on every day, so says nothing about this one.
    """
    wanted = set(words) - set(_query_words(" ".join(dates)))
    best = 0.0
    for fact in facts:
        if not (fact.get("valid_from") or fact.get("valid_until")):
            continue
        if not any(_holds_in(fact, date) for date in dates):
            continue
        said = _query_words(f"{fact['subject']} {fact['predicate']} {fact['object']}")
        best = max(best, len(wanted.intersection(said)) / len(wanted) if wanted else 0.0)
    return best


def _holds_in(fact: dict[str, Any], date: str) -> bool:
    """Whether a fact holds on a day, or on some day of a month."""
    from vault_tool.engine.history import valid_on  # (review imports this module)

    if len(date) == 10:
        return valid_on(fact, date)
    # A month: the fact holds on some day of it if it holds on the later of the month's
    # first day and the fact's own first day, and that day is still in the month.
    day = max(fact.get("valid_from") or "", f"{date}-01")
    return day <= f"{date}-31" and valid_on(fact, day)


def distinctive_words(searcher: Any, words: list[str]) -> list[str]:
    """The query words that occur in the vault, without the very common ones.

    A word found in more than COMMON_SHARE of all memories (and in at least COMMON_MINIMUM)
    adds little to BM25 but costs the most to match in a large vault; it is dropped when
    the query has a rarer word.
    """
    return _distinctive(searcher, "all", words)


def _distinctive(searcher: Any, field_name: str, words: list[str]) -> list[str]:
    present = {w: searcher.doc_frequency(field_name, w) for w in words}
    present = {w: df for w, df in present.items() if df}
    limit = max(COMMON_SHARE * searcher.doc_count(), COMMON_MINIMUM)
    rare = [w for w, df in present.items() if df <= limit]
    return rare or sorted(present, key=present.__getitem__)[:1]


def bm25_scores(
    searcher: Any, field_name: str, words: list[str], allow: set | None, hidden: set | None
) -> dict[int, float]:
    """docnum -> BM25F score of the words in one field, for every live document that has
    one of them (in allow, if given; not in hidden).

    The same figures as Whoosh's scored search with its BM25F weighting (same idf, field
    lengths and formula), read block by block straight from the postings: Whoosh's matcher
    and collector machinery cost several times as much per posting, and every query here
    wants every match scored anyway (total_matches is exact).
    """
    weighting = searcher.weighting
    b = weighting._field_B.get(field_name, weighting.B)
    k1 = weighting.K1
    k1_plus_1, one_minus_b = k1 + 1, 1 - b
    avgfl = searcher.avg_field_length(field_name) or 1
    scores: dict[int, float] = {}
    get = scores.get
    for word in words:
        idf = searcher.idf(field_name, word)
        for reader, offset in searcher.reader().leaf_readers():
            if (field_name, word) not in reader:
                continue
            lengths = _field_lengths(reader, field_name)
            for docnums, weights, deleted in _posting_blocks(reader.postings(field_name, word)):
                for docnum, tf in zip(docnums, weights, strict=True):
                    total = docnum + offset
                    if (
                        (deleted is None or docnum not in deleted)
                        and (allow is None or total in allow)
                        and not (hidden and total in hidden)
                    ):
                        fl = lengths[docnum]
                        # whoosh.scoring.bm25, term for term, so the floats are the same
                        score = idf * (
                            (tf * k1_plus_1) / (tf + k1 * (one_minus_b + b * fl / avgfl))
                        )
                        scores[total] = get(total, 0.0) + score
    return scores


def add_bm25(
    searcher: Any, field_name: str, words: list[str], scores: dict[int, float]
) -> dict[int, float]:
    """scores with the BM25F score of more words added, for those documents only.

    Reads only the posting blocks that can hold one of the documents, so a word in most of
    the vault costs a few blocks, not its whole postings list (as bm25_scores would).
    """
    weighting = searcher.weighting
    b = weighting._field_B.get(field_name, weighting.B)
    k1 = weighting.K1
    avgfl = searcher.avg_field_length(field_name) or 1
    out = dict(scores)
    for word in words:
        idf = searcher.idf(field_name, word)
        for reader, offset in searcher.reader().leaf_readers():
            if (field_name, word) not in reader:
                continue
            end = offset + reader.doc_count_all()
            local = sorted(d - offset for d in scores if offset <= d < end)
            if not local:
                continue
            lengths = _field_lengths(reader, field_name)
            for docnum, tf in _postings_of(reader.postings(field_name, word), local):
                fl = lengths[docnum]
                score = idf * ((tf * (k1 + 1)) / (tf + k1 * (1 - b + b * fl / avgfl)))
                out[docnum + offset] += score
    return out


def _postings_of(matcher: Any, docnums: list[int]) -> Iterator[tuple[int, float]]:
    """(docnum, weight) of the postings of the given (sorted, live) docnums.

    Whoosh's W3 blocks are skipped by their last id without being decoded; any other
    matcher is moved with skip_to.
    """
    from whoosh.codec.whoosh3 import W3LeafMatcher
    from whoosh.matching.wrappers import FilterMatcher

    if isinstance(matcher, FilterMatcher) and matcher._exclude:
        matcher = matcher.child  # (it only hides deleted documents, and these are live)
    if not isinstance(matcher, W3LeafMatcher) or not hasattr(matcher, "_read_weights"):
        for docnum in docnums:
            if not matcher.is_active():
                return
            matcher.skip_to(docnum)
            if matcher.is_active() and matcher.id() == docnum:
                yield docnum, matcher.weight()
        return
    i = 0
    while i < len(docnums) and matcher.is_active():
        if matcher.block_max_id() >= docnums[i]:
            if matcher._ids is None:
                matcher._read_ids()
            ids = matcher._ids
            while i < len(docnums) and docnums[i] <= ids[-1]:
                at = bisect_left(ids, docnums[i])
                if at < len(ids) and ids[at] == docnums[i]:
                    if matcher._weights is None:
                        matcher._read_weights()
                    yield docnums[i], matcher._weights[at]
                i += 1
        matcher._next_block()


def top_scored(searcher: Any, scores: dict[int, float], n: int) -> list[tuple[int, float]]:
    """The n best (docnum, score), best first, equal scores by path.

    By path, not by docnum (as Whoosh's collector did): docnums depend on which indexing
    process took a file during a reindex, and the same vault must rank the same way after
    every reindex.
    """
    if len(scores) > n:
        threshold = heapq.nlargest(n, scores.values())[-1]
        chosen = [item for item in scores.items() if item[1] >= threshold]
    else:
        chosen = list(scores.items())
    path = _columns(searcher)["path"]
    chosen.sort(key=lambda item: (-item[1], path[item[0]]))
    return chosen[:n]


def _posting_blocks(matcher: Any) -> Iterator[tuple[Any, Any, set | None]]:
    """(docnums, weights, deleted docnums or None) of each stored block of a term's postings.

    Reads Whoosh's W3 posting blocks whole (one Python call per block rather than four
    per posting); any other matcher is walked one posting at a time.
    """
    from whoosh.codec.whoosh3 import W3LeafMatcher
    from whoosh.matching.wrappers import FilterMatcher

    deleted = None
    if isinstance(matcher, FilterMatcher) and matcher._exclude:
        deleted, matcher = matcher._ids, matcher.child
    if not isinstance(matcher, W3LeafMatcher) or not hasattr(matcher, "_read_weights"):
        while matcher.is_active():
            yield (matcher.id(),), (matcher.weight(),), deleted
            matcher.next()
        return
    while matcher.is_active():
        if matcher._ids is None:
            matcher._read_ids()
        if matcher._weights is None:
            matcher._read_weights()
        yield matcher._ids, matcher._weights, deleted
        matcher._next_block()


# Field lengths of recently used segments: a segment's lengths never change, and a new
# searcher (after every write) opens new readers of the same big segments.
_LENGTHS: OrderedDict[tuple[str, str], Any] = OrderedDict()
_LENGTHS_KEPT = 32


def _field_lengths(reader: Any, field_name: str) -> Any:
    """docnum -> length of the field in one segment, read in one go and kept per segment.

    Whoosh stores a field's lengths as one byte per document; reading them at once spares
    four Python calls per posting. Falls back to Whoosh's own per-document lookup if the
    codec is not the one this was written for.
    """
    try:
        key = (reader.segment().segid, field_name)
    except AttributeError:
        return _PerDocLengths(reader, field_name)
    table = _LENGTHS.get(key)
    if table is not None:
        _LENGTHS.move_to_end(key)
        return table
    try:
        from whoosh.codec.whoosh3 import LENGTHS_COLUMN, _lenfield
        from whoosh.util.numeric import byte_to_length

        column = reader._perdoc._cached_reader(_lenfield(field_name), LENGTHS_COLUMN)
        raw = column._dbfile.get(column._basepos, column._count * column._fixedlen)
        table = [byte_to_length(b) if b else None for b in raw]
        table += [None] * (reader.doc_count_all() - len(table))
    except (AttributeError, ImportError, TypeError):
        return _PerDocLengths(reader, field_name)
    _LENGTHS[key] = table
    while len(_LENGTHS) > _LENGTHS_KEPT:
        _LENGTHS.popitem(last=False)
    return table


class _PerDocLengths:
    """Whoosh's own per-document length lookup, indexable like a list."""

    def __init__(self, reader: Any, field_name: str) -> None:
        self.reader, self.field_name = reader, field_name

    def __getitem__(self, docnum: int) -> Any:
        return self.reader.doc_field_length(docnum, self.field_name, 1)


def _postings(searcher: Any, field_name: str, text: str) -> list[int]:
    """Docnums (live documents only) that have text in the field, in docnum order."""
    reader = searcher.reader()
    if (field_name, text) not in reader:
        return []
    return list(reader.postings(field_name, text).all_ids())


def _mentions(searcher: Any, docnum: int) -> list[list[str]]:
    """A document's entity mentions, read once per reader (an index generation)."""
    reader = searcher.reader()
    cache = getattr(reader, "_vault_mentions", None)
    if cache is None:
        cache = reader._vault_mentions = {}
    if docnum not in cache:
        cache[docnum] = searcher.stored_fields(docnum)["mentions"]
    return cache[docnum]


class _Stored(dict):
    """A document's stored fields, unpickled only when a field beyond the few that ranking
    needs for every candidate (id, path, pinned, mentions) is asked for.

    A candidate's stored fields cost ~100 us to read (the whole record is unpickled); a
    query considers up to a few hundred candidates and returns five.
    """

    @classmethod
    def of(cls, searcher: Any, docnum: int) -> _Stored:
        columns = _columns(searcher)
        stored = cls(
            memory_id=columns["memory_id"][docnum],
            path=columns["path"][docnum],
            pinned=docnum in _pinned(searcher),
            mentions=_mentions(searcher, docnum),
        )
        stored._source = (searcher, docnum)
        return stored

    def _load(self) -> None:
        source = self.__dict__.pop("_source", None)
        if source is not None:
            searcher, docnum = source
            self.update(searcher.stored_fields(docnum))

    def __missing__(self, key: str) -> Any:
        if "_source" not in self.__dict__:
            raise KeyError(key)
        self._load()
        return self[key]

    def get(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self._load()
        return super().get(key, default)


def _columns(searcher: Any) -> dict[str, Any]:
    """Column readers of memory_id and path, per reader (an index generation)."""
    reader = searcher.reader()
    cached = getattr(reader, "_vault_columns", None)
    if cached is None:
        cached = reader._vault_columns = {
            name: reader.column_reader(name) for name in ("memory_id", "path")
        }
    return cached


def _pinned(searcher: Any) -> frozenset[int]:
    """Docnums of pinned memories, per reader."""
    from whoosh import query as q

    reader = searcher.reader()
    cached = getattr(reader, "_vault_pinned", None)
    if cached is None:
        cached = reader._vault_pinned = frozenset(searcher.docs_for_query(q.Term("pinned", True)))
    return cached


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


# normalize_name, cached: the entity bonus compares every mention of every candidate.
_name_key = lru_cache(maxsize=16384)(normalize_name)


def _entity_bonus(
    searcher: Any, words: list[str], allow: set | None, hidden: set | None, hits: dict[int, Hit]
) -> dict[int, float]:
    """docnum -> share of the query words that a gloss of an entity it mentions matches."""

    wanted = set(words)
    # Words in most glosses ("team", "service") barely tell entities apart but make this
    # search score most of the vault: they are left out when rarer ones are there.
    in_glosses = _distinctive(searcher, "glosses", words)
    glossed = bm25_scores(searcher, "glosses", in_glosses, None, hidden)
    gloss_hits = top_scored(searcher, glossed, 10)
    sources = [_mentions(searcher, docnum) for docnum, _ in gloss_hits] + [
        h.fields["mentions"] for h in hits.values()
    ]
    matched: dict[tuple[str, str], tuple[str, float]] = {}
    for mentions in sources:
        for name, kind, gloss in mentions:
            # Words of the name are scored by the text match already; the bonus is for
            # what the gloss adds (Ana *the designer*).
            extra = (gloss_words(gloss) - gloss_words(name)) & wanted
            strength = len(extra) / len(wanted)
            key = (_name_key(name), kind)
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
            # Plain postings, not a scored search: only the docnums are needed, and the
            # mentions of a document are read once per index generation (_mentions).
            candidates += [
                (docnum, {"mentions": _mentions(searcher, docnum)})
                for docnum in _postings(searcher, "entity_keys", key)
                if docnum not in hits
                and (allow is None or docnum in allow)
                and not (hidden and docnum in hidden)
            ]
        for docnum, fields in candidates:
            if any(
                _name_key(n) == name and k == kind and compatible(g, gloss)
                for n, k, g in fields["mentions"]
            ):
                bonus[docnum] = max(bonus.get(docnum, 0.0), strength)
    return bonus


def _place_superseded(searcher: Any, ordered: list[Hit], hidden: set | None) -> list[Hit]:
    """Demote superseded hits and put each below its replacement, following whole chains.

    supersedes is followed transitively: when C replaced B which replaced A, C comes above
    B and B above A wherever A ranked, and C is added if only A or B matched. One step
    only (B above A) left B, itself stale, above A with the current C nowhere.
    """
    by_id = {h.memory_id: h for h in ordered}
    superseded = _superseded_ids(searcher)
    steps = {h.memory_id: 0 for h in ordered}
    # ordered grows while it is walked: a replacement added here is checked in turn.
    for hit in ordered:
        if hit.memory_id not in superseded or steps[hit.memory_id] >= CHAIN_STEPS:
            continue
        replacements = [
            _Stored.of(searcher, docnum)
            for docnum in _replacing(searcher, hit.memory_id)
            if not (hidden and docnum in hidden)
        ][:5]
        hit.superseded_by = [r["memory_id"] for r in replacements]
        if not hit.superseded_by:
            continue
        hit.parts["factor"] = hit.parts.get("factor", 1.0) * SUPERSEDED_FACTOR
        for found in replacements:
            if found["memory_id"] not in by_id:
                replacement = _hit(found, {"text": hit.parts.get("text", 0.0)})
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
        for newer in hit.superseded_by:
            if newer in by_id:
                place(by_id[newer])
        result.append(hit)

    for hit in ordered:
        place(hit)
    return result


def _replacing(searcher: Any, memory_id: str) -> list[int]:
    """Docnums of the memories that list memory_id in supersedes, kept per reader.

    Plain postings (a scored search costs ~0.7 ms each), remembered: following whole chains
    looks up several per hit, and the same chains come back query after query.
    """
    reader = searcher.reader()
    cache = getattr(reader, "_vault_replacing", None)
    if cache is None:
        cache = reader._vault_replacing = {}
    if memory_id not in cache:
        cache[memory_id] = _postings(searcher, "supersedes", memory_id)
    return cache[memory_id]


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
    wanted = set(words)
    chosen = [
        f
        for f in facts
        # (the analyser with its stemming cache, through the cached query analysis)
        if wanted.intersection(_query_words(f"{f['subject']} {f['predicate']} {f['object']}"))
    ]
    return chosen or facts
