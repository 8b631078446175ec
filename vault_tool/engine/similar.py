"""Memories a new one may repeat: a live memory with the same title, with nearly the same
content, or stating one of its facts. A create still goes through (two memories may share a
title), but it names them, so an agent can update the one it meant instead of piling up
copies.

Cheap by design: one bounded search of what the index already holds, by words alone (its
ranked words and stored content), and for each fact one lookup of the memories naming both
its entities, never a file read. A fact is the same when its predicate is and both its
entities are, matched as entities are (core/entities.py: name in any case, kind, and
glosses that can describe one thing), whatever words the two memories use around it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from vault_tool.core import stages
from vault_tool.core.entities import compatible
from vault_tool.core.projects import Scope
from vault_tool.core.query import Query
from vault_tool.core.search_call import Controls
from vault_tool.core.text import normalize_name
from vault_tool.search import ranking, stored
from vault_tool.search.hits import Hit
from vault_tool.search.index import Index
from vault_tool.search.listing import narrowed
from vault_tool.search.postings import doc_frequency, docnums_with

if TYPE_CHECKING:
    from vault_tool.search.index import Searcher

# The search: this many best hits, for a query of the first distinct words of the title and
# the content (a search costs about its number of words; nearly the same content opens alike).
SEARCHED = 5
QUERY_WORDS = 8
# Content is nearly the same when this share of the two texts' distinct words is common.
NEAR = 0.8
# The index field of a memory's entities (name|kind each).
KEYS = "entity_keys"
# The memories naming a fact's rarer entity compared with it, at most (~1 us each, ~5 us
# when it states the same predicate; a fact between two names this many memories share is
# a common one, not a repeat to warn of).
SCANNED = 500
# The facts of a new memory looked up, at most (a lookup each); the first stand for the rest.
LOOKED_UP_FACTS = 10
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Stated:
    """One fact as the comparison sees it: its entities by index key (name|kind), with the
    glosses that tell them apart."""

    subject: str
    predicate: str
    object: str
    subject_gloss: str
    object_gloss: str

    def same(self, other: Stated) -> bool:
        return (
            (self.subject, self.predicate, self.object)
            == (other.subject, other.predicate, other.object)
            and compatible(self.subject_gloss, other.subject_gloss)
            and compatible(self.object_gloss, other.object_gloss)
        )


@dataclass(frozen=True)
class Candidate:
    """A memory a new one is compared with: stored, or an earlier item of the same batch."""

    memory_id: str
    title: str
    version_id: str | None  # None: an item of this batch, whose commit is not made yet
    words: frozenset[str]
    stated: tuple[Stated, ...] = ()


def candidate(
    memory_id: str,
    title: str,
    content: str,
    version_id: str | None,
    delta: dict[str, Any] | None = None,
) -> Candidate:
    """A memory as the comparison sees it (delta: its semantic delta, for its facts)."""
    return Candidate(memory_id, title, version_id, _words(content), stated_in(delta or {}))


def stated_in(delta: dict[str, Any]) -> tuple[Stated, ...]:
    """The facts of a semantic delta between entities it declares."""
    mentions = [(e["n"], e["kind"], e["is"]) for e in delta.get("entities") or ()]
    return _stated(mentions, delta.get("facts") or ())


def _stated(mentions: Any, facts: Any) -> tuple[Stated, ...]:
    declared = {n.strip(): (kind, gloss) for n, kind, gloss in mentions}
    found = []
    for fact in facts:
        subject, object_ = fact["subject"].strip(), fact["object"].strip()
        if subject in declared and object_ in declared:
            (s_kind, s_gloss), (o_kind, o_gloss) = declared[subject], declared[object_]
            found.append(
                Stated(
                    f"{normalize_name(subject)}|{s_kind}",
                    fact["predicate"],
                    f"{normalize_name(object_)}|{o_kind}",
                    s_gloss,
                    o_gloss,
                )
            )
    return tuple(found)


@stages.timed("similar")
def similar(
    index: Index,
    title: str,
    content: str,
    earlier: list[Candidate] | None = None,
    project: Scope | None = None,
    delta: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The live memories (and earlier items of the batch) this create may repeat:
    [{memory_id, title, version_id}], best match first; of one project, if given.
    delta: the create's semantic delta, whose facts are looked for too."""
    words = _words(content)
    stated = stated_in(delta or {})
    others = [
        candidate(
            h.memory_id,
            h.fields["title"],
            h.record["content_md"],
            h.fields["version_id"],
            h.record["semantic_delta"],
        )
        for h in _searched(index, title, content, project)
    ]
    others += _stating(index, stated[:LOOKED_UP_FACTS], project)
    found: dict[str, dict[str, Any]] = {}
    for other in [*others, *(earlier or [])]:
        if (
            _same_title(other.title, title)
            or _near(other.words, words)
            or any(mine.same(theirs) for mine in stated for theirs in other.stated)
        ):
            found.setdefault(
                other.memory_id,
                {
                    "memory_id": other.memory_id,
                    "title": other.title,
                    "version_id": other.version_id,
                },
            )
    return list(found.values())


def _searched(index: Index, title: str, content: str, project: Scope | None) -> list[Hit]:
    query = " ".join(list(dict.fromkeys(_WORD.findall(f"{title} {content}")))[:QUERY_WORDS])
    now = datetime.now(UTC)
    return index.read(lambda searcher: ranking.by_words(searcher, query, SEARCHED, now, project))


def _stating(index: Index, stated: tuple[Stated, ...], project: Scope | None) -> list[Candidate]:
    """The live memories (of one project, if given) that state one of these facts, at most
    SEARCHED a fact."""
    if not stated:
        return []
    now = datetime.now(UTC)

    def look(searcher: Searcher) -> list[Candidate]:
        allow, hidden = narrowed(searcher, Controls(project=project), Query(), now)
        found: dict[int, Candidate] = {}
        for fact in stated:
            # The memories naming the rarer of its two entities, each compared by the facts
            # it states (read once per index generation): a name in a thousand memories (a
            # team's lead) is never read through.
            rarer = min(fact.subject, fact.object, key=lambda k: doc_frequency(searcher, KEYS, k))
            matched = 0
            for docnum in docnums_with(searcher, KEYS, rarer)[:SCANNED]:
                if matched == SEARCHED:
                    break
                if (allow is not None and docnum not in allow) or (hidden and docnum in hidden):
                    continue
                facts = stored.times(searcher, docnum)["facts"]
                if not any(f["predicate"] == fact.predicate for f in facts):
                    continue
                theirs = _stated(stored.mentions(searcher, docnum), facts)
                if any(fact.same(other) for other in theirs):
                    matched += 1
                    if docnum not in found:
                        fields = searcher.stored_fields(docnum)
                        memory_id, title = fields["memory_id"], fields["title"]
                        found[docnum] = Candidate(
                            memory_id, title, fields["version_id"], frozenset(), theirs
                        )
        return list(found.values())

    return index.read(look)


def _same_title(one: str, other: str) -> bool:
    return " ".join(one.casefold().split()) == " ".join(other.casefold().split())


def _near(one: frozenset[str], other: frozenset[str]) -> bool:
    union = len(one | other)
    return bool(union) and len(one & other) / union >= NEAR


def _words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.casefold()))
