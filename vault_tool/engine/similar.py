"""Memories a new one may repeat: a live memory with the same title, or with nearly the same
content. A create still goes through (two memories may share a title), but it names them,
so an agent can update the one it meant instead of piling up copies.

Cheap by design: one bounded search of what the index already holds, by words alone (its
ranked words and stored content), never a file read. A memory that shares neither words of
the title nor of the opening with the new one is not looked for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from vault_tool.core import stages
from vault_tool.core.projects import Scope
from vault_tool.search import ranking
from vault_tool.search.hits import Hit
from vault_tool.search.index import Index

# The search: this many best hits, for a query of the first distinct words of the title and
# the content (a search costs about its number of words; nearly the same content opens alike).
SEARCHED = 5
QUERY_WORDS = 8
# Content is nearly the same when this share of the two texts' distinct words is common.
NEAR = 0.8
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Candidate:
    """A memory a new one is compared with: stored, or an earlier item of the same batch."""

    memory_id: str
    title: str
    version_id: str | None  # None: an item of this batch, whose commit is not made yet
    words: frozenset[str]


def candidate(memory_id: str, title: str, content: str, version_id: str | None) -> Candidate:
    """A memory as the comparison sees it."""
    return Candidate(memory_id, title, version_id, _words(content))


@stages.timed("similar")
def similar(
    index: Index,
    title: str,
    content: str,
    earlier: list[Candidate] | None = None,
    project: Scope | None = None,
) -> list[dict[str, Any]]:
    """The live memories (and earlier items of the batch) this create may repeat:
    [{memory_id, title, version_id}], best match first; of one project, if given."""
    words = _words(content)
    stored = [
        candidate(h.memory_id, h.fields["title"], h.record["content_md"], h.fields["version_id"])
        for h in _searched(index, title, content, project)
    ]
    found: dict[str, dict[str, Any]] = {}
    for other in [*stored, *(earlier or [])]:
        if _same_title(other.title, title) or _near(other.words, words):
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


def _same_title(one: str, other: str) -> bool:
    return " ".join(one.casefold().split()) == " ".join(other.casefold().split())


def _near(one: frozenset[str], other: frozenset[str]) -> bool:
    union = len(one | other)
    return bool(union) and len(one & other) / union >= NEAR


def _words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.casefold()))
