"""Words and meaning fused: the candidates' rank by words and by cosine, combined by
reciprocal rank, score = 1 / (K + rank by words) + WEIGHT / (K + rank by meaning).

Ranks, not scores: a BM25 score's scale changes with the query's words and a cosine's with
the model, and ranks need neither calibrated. Only the lexical candidates are reranked
(no scan of every vector), so what the words find nothing for stays nothing, and only when
every candidate has its vector: a half-embedded vault would favour the memories embedded
first. K and WEIGHT are bench/semantic.py's, chosen on the tuning seeds of both question
sets (docs/semantic.md).
"""

from __future__ import annotations

from typing import Any

K = 60
WEIGHT = 0.75


def fuse_meaning(dense: Any, query: str, hits: dict[int, Any], best_text: float) -> None:
    """Give each hit a `meaning` part that puts it where the fused rank does, on the scale
    of its text score (the best fused hit scores the best lexical score), so what ranking
    applies after it (valid time, ended facts, pinned, superseded) acts as without it."""
    if not hits:
        return
    ids = [hit.memory_id for hit in hits.values()]
    if not dense.ready_for(ids):
        return
    cosine = dense.similarities(query, ids)
    by_words = sorted(hits.values(), key=lambda h: (-h.score, h.fields["path"]))
    by_meaning = sorted(by_words, key=lambda h: -cosine.get(h.memory_id, -1.0))
    fused = {id(h): 1 / (K + n + 1) for n, h in enumerate(by_words)}
    for n, hit in enumerate(by_meaning):
        fused[id(hit)] += WEIGHT / (K + n + 1)
    top = max(fused.values())
    for hit in hits.values():
        wanted = best_text * fused[id(hit)] / top
        hit.parts["meaning"] = round(wanted - hit.score / hit.parts.get("factor", 1.0), 6)
