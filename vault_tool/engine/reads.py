"""What a search returns: a ranked list of hits, or one memory read by its id."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from vault_tool.core.calls import Controls
from vault_tool.core.text import query_words
from vault_tool.search import links, ranking, results
from vault_tool.search.documents import Indexed
from vault_tool.search.index import Index


def ranked(
    index: Index,
    query: str,
    controls: Controls,
    judged: list[tuple[str, int, str]],
    *,
    explain: bool = False,
    problems: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The hits for a query that fit the call's byte budget, with the count of all matches.

    problems (path -> the record of a file that did not parse): such a hit is its last good
    version, and says so."""
    now = datetime.now(UTC)
    hits, total = index.read(lambda s: ranking.rank(s, query, controls, now, judged))
    words = query_words(query)
    selected = results.hit_entries(
        hits,
        controls.maximum_context_bytes,
        lambda facts: results.matching_facts(facts, words),
        explain=explain,
        problems=problems,
    )
    return {"query": query, "selected_hits": selected, "total_matches": total}


def addressed(
    doc: Indexed, index: Index, problems: dict[str, dict[str, Any]] | None = None
) -> dict[str, Any]:
    """An addressed read: the one memory, at the top level, with its links resolved now
    (and, if its file did not parse when last read, that problem)."""
    record = doc.record
    problem = results.problem_of(doc.path, problems)
    return {
        **({"problem": problem} if problem else {}),
        "memory_id": doc.memory_id,
        "version_id": doc.version_id,
        "title": doc.title,
        "memory_type": doc.memory_type,
        "content_md": record["content_md"],
        "semantic_delta": record["semantic_delta"],
        "path": doc.path,
        "created": record["created"],
        "updated": record["updated"],
        **index.read(lambda searcher: links.of_note(searcher, doc.path)),
    }
