"""Resolving entity mentions by name, kind and gloss.

Two mentions are the same entity when their names normalise alike, their kinds are equal,
and their glosses are compatible (they share enough words after stemming). Ana the
backend engineer and Ana the designer share a name but no gloss words: two entities.
Resolution is exact and explainable: no model, only names, kinds and word overlap.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from vault_tool.core.text import gloss_words, normalize_name

# Share at least this fraction of the shorter gloss's words to be the same entity.
GLOSS_OVERLAP = 0.34


@dataclass(frozen=True)
class Mention:
    """One entity as one memory declares it."""

    memory_id: str
    n: str
    kind: str
    gloss: str

    @property
    def name_key(self) -> str:
        """Normalised name and kind: the index's entity_keys term."""
        return f"{normalize_name(self.n)}|{self.kind}"


@dataclass
class Entity:
    """Mentions resolved to one thing: the names, kind and glosses it goes by."""

    name: str
    kind: str
    glosses: dict[str, int]
    memory_ids: set[str]

    @property
    def mentions(self) -> int:
        """How many mentions the entity was resolved from."""
        return sum(self.glosses.values())


def compatible(gloss_a: str, gloss_b: str) -> bool:
    """Whether two glosses can describe the same thing (enough shared words)."""
    a, b = gloss_words(gloss_a), gloss_words(gloss_b)
    if not a or not b:
        return True  # an empty gloss says nothing against sameness
    shared = len(a & b)
    return shared > 0 and shared / min(len(a), len(b)) >= GLOSS_OVERLAP


def resolve(mentions: Iterable[Mention]) -> list[Entity]:
    """Group mentions into entities: same name key, and glosses linked by compatibility."""
    by_key: dict[str, list[Mention]] = {}
    for mention in mentions:
        by_key.setdefault(mention.name_key, []).append(mention)
    entities: list[Entity] = []
    for group in by_key.values():
        cluster_of = _cluster_glosses(list(dict.fromkeys(m.gloss for m in group)))
        clusters: dict[int, Entity] = {}
        for mention in group:
            entity = clusters.setdefault(
                cluster_of[mention.gloss], Entity(mention.n, mention.kind, {}, set())
            )
            entity.glosses[mention.gloss] = entity.glosses.get(mention.gloss, 0) + 1
            entity.memory_ids.add(mention.memory_id)
        entities.extend(clusters.values())
    return sorted(entities, key=lambda e: (-e.mentions, normalize_name(e.name), e.kind))


def mentions_of(memory_id: str, delta: dict[str, Any]) -> list[Mention]:
    """The mentions a memory's semantic delta declares."""
    return [Mention(memory_id, e["n"], e["kind"], e["is"]) for e in delta.get("entities", ())]


def _cluster_glosses(glosses: list[str]) -> dict[str, int]:
    """gloss -> cluster number, linking every compatible pair (union-find)."""
    parent = list(range(len(glosses)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, gloss_i in enumerate(glosses):
        for j in range(i + 1, len(glosses)):
            if compatible(gloss_i, glosses[j]):
                parent[root(j)] = root(i)
    return {gloss: root(i) for i, gloss in enumerate(glosses)}
