"""Where a superseded memory goes in a ranking: below what replaced it, lowered."""

from __future__ import annotations

from typing import Any

from vault_tool.search import stored
from vault_tool.search.hits import Hit

SUPERSEDED_FACTOR = 0.5
# Chains of replacements are followed this many steps beyond the hits the text found.
CHAIN_STEPS = 16


def place_superseded(
    searcher: Any, ordered: list[Hit], hidden: set | None, allow: set | None = None
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
