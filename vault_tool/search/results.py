"""Ranked hits as the search tool returns them: entries, the byte budget, clean cuts, facts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vault_tool.core.text import analysed_words
from vault_tool.search.hits import Hit

# A hit whose share of the budget would be smaller than this gets no content at all:
# a few stray bytes help nobody.
MIN_CONTENT_BYTES = 48


def hit_entries(
    hits: list[Hit],
    budget: int,
    pick_facts: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
    *,
    explain: bool = False,
    problems: dict[str, dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Hits in the result shape of the search tool, their content fitted to the byte budget;
    a hit whose file did not parse when last read (a path of problems) carries that problem."""
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
        if problem := problem_of(entry["path"], problems, hit.fields.get("blob")):
            entry["problem"] = problem
        if explain:
            entry["score_parts"] = hit.parts
        entries.append(entry)
    return entries


def problem_of(
    path: str, problems: dict[str, dict[str, Any]] | None, blob: str | None = None
) -> dict[str, Any] | None:
    """The problem of a memory's file as a result shows it ({file, line, reason, hint}), or
    None when its file parsed: the index then serves what the file holds. blob: that of the
    indexed bytes, which a flag (a body a merge left in conflict) must still describe."""
    recorded = (problems or {}).get(path)
    if recorded is None:
        return None
    # (A problem proper is about the file on disk, whatever the index holds: it applies.)
    if blob is not None and recorded.get("blob") not in (None, blob):
        return None
    shown = {
        "file": path,
        "line": recorded.get("line"),
        "reason": recorded.get("reason", ""),
        "hint": recorded.get("hint", ""),
    }
    # A flag: the hit is the file as committed (a merge left its body in conflict), and an
    # update with the conflict resolved is welcome; a problem's hit is the last good version.
    return {**shown, "flagged": True} if "blob" in recorded else shown


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
        if wanted.intersection(analysed_words(f"{f['subject']} {f['predicate']} {f['object']}"))
    ]
    return chosen or facts
