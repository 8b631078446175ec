"""What a search returns: a ranked list of hits, or one memory read by its id."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vault_tool.core import search_call, stages
from vault_tool.core.projects import Projects
from vault_tool.core.query import parse_query
from vault_tool.core.search_call import Controls
from vault_tool.core.text import query_words
from vault_tool.errors import InvalidInput, VaultBusy
from vault_tool.search import bm25, links, listing, postings, ranking, results
from vault_tool.search.documents import Indexed
from vault_tool.search.index import Index
from vault_tool.storage.git import blob_sha

if TYPE_CHECKING:
    from vault_tool.search.index import Searcher


@stages.timed("ranking")
def ranked(
    index: Index,
    query: str,
    controls: Controls,
    judged: list[tuple[str, int, str]],
    *,
    explain: bool = False,
    problems: dict[str, dict[str, Any]] | None = None,
    dense: Any = None,
) -> dict[str, Any]:
    """The hits for a query that fit the call's byte budget, with the count of all matches.

    problems (path -> the record of a file that did not parse): such a hit is its last good
    version, and says so. dense: the vault's DenseIndex, when meaning is on."""
    # Read first: a malformed query is refused before the index is (and before the ledger).
    words = query_words(parse_query(query).text)
    now = datetime.now(UTC)
    hits, total = index.read(lambda s: ranking.rank(s, query, controls, now, judged, dense))
    selected = results.hit_entries(
        hits[: controls.top_k],
        controls.maximum_context_bytes,
        lambda facts: results.matching_facts(facts, words),
        explain=explain,
        problems=problems,
    )
    result = {"query": query, "selected_hits": selected, "total_matches": total}
    return {**result, **paged(controls.offset, len(selected), len(hits) > controls.top_k)}


def warm(index: Index, busy: Callable[[], bool]) -> tuple[int, int]:
    """Read what every ranked search reads first (postings.warm), read the postings of the
    index's most common words ahead of the searches that will ask for them (search/
    bm25.py's warm), then analyse the notes' titles (links.warm_titles), stopping as
    soon as busy(); how many words and titles."""

    def warmed(searcher: Searcher) -> tuple[int, int]:
        postings.warm(searcher, busy)
        words = bm25.warm(searcher, busy)
        return words, links.warm_titles(searcher, busy)

    return index.read(warmed)


def paged(offset: int, shown: int, more: bool) -> dict[str, Any]:
    """has_more, and where the next page starts if there is one."""
    return {"has_more": True, "next_offset": offset + shown} if more else {"has_more": False}


@stages.timed("ranking")
def keyed(index: Index, key: str, controls: Controls) -> dict[str, Any]:
    """The memories whose key is this one (one, unless hand edits gave two the same key),
    as hits: expired and dismissed ones left out, as a query leaves them out."""
    now = datetime.now(UTC)
    hits = index.read(lambda s: ranking.with_key(s, key, now))
    selected = results.hit_entries(hits, controls.maximum_context_bytes, lambda facts: facts)
    result = {"key": key, "selected_hits": selected, "total_matches": len(selected)}
    return {**result, "has_more": False, **({} if selected else {"reason": "no_such_key"})}


# What a listing may be narrowed by: search's filters.
LISTING_FILTERS = ("memory_types", "tags", "since", "until", "project")


def listed(
    index: Index, filters: dict[str, Any], projects: Projects, *, limit: int, offset: int
) -> dict[str, Any]:
    """The memories the filters leave, newest first by updated: limit of them from offset,
    and how many there are. The filters are search's, checked as a search checks them."""
    unknown = sorted(set(filters) - set(LISTING_FILTERS))
    if unknown:
        raise InvalidInput(
            f"{unknown[0]}: a listing is narrowed only by {', '.join(LISTING_FILTERS)}",
            hint=f"remove {', '.join(unknown)}",
            field=unknown[0],
        )
    for name, value, least in (("limit", limit, 1), ("offset", offset, 0)):
        if not isinstance(value, int) or value < least:
            raise InvalidInput(
                f"{name}: must be a whole number of at least {least}, got {value!r}",
                hint=f"send {name} as an integer >= {least}",
                field=name,
            )
    controls = search_call.check_search({"query": "*", **filters}).controls_in(projects)
    now = datetime.now(UTC)
    memories, total = index.read(
        lambda s: listing.listed(s, controls, now, offset=offset, limit=limit)
    )
    return {"memories": memories, "total": total}


@stages.timed("reading")
def addressed(
    doc: Indexed,
    index: Index,
    problems: dict[str, dict[str, Any]] | None = None,
    folder: Path | None = None,
) -> dict[str, Any]:
    """An addressed read: the one memory, at the top level, with its links resolved now
    (and, if its file did not parse when last read, that problem).

    With folder, the file is looked at first: an agent reads a memory to update it, and a
    version the index has not caught up with (a person's checkout put other bytes back a
    moment ago) would be refused by the update. So a file whose bytes the index does not
    hold answers VaultBusy ("retry in a moment") until the watcher or a catch-up has read
    it; one that did not parse serves its last good version, with its problem, as before.
    """
    if folder is not None and doc.path not in (problems or {}):
        _require_as_indexed(doc, folder)
    record = doc.record
    problem = results.problem_of(doc.path, problems, doc.blob)
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


def _require_as_indexed(doc: Indexed, folder: Path) -> None:
    try:
        stat = (folder / doc.path).stat()
        if (stat.st_mtime_ns, stat.st_size) == (doc.mtime_ns, doc.size):
            return
        # (read only at the size the index read: another size is other bytes, and may be
        # more than a memory's)
        if stat.st_size == doc.size and blob_sha((folder / doc.path).read_bytes()) == doc.blob:
            return  # (touched, not changed: an editor saving the same bytes)
    except OSError:
        pass  # gone since: the index has not caught up with that either
    raise VaultBusy(
        f"memory_id: {doc.memory_id}'s file ({doc.path}) changed since the search index read "
        "it, and the index is being rebuilt or caught up from the files",
        hint="retry in a moment (nothing was changed or lost)",
        field="memory_id",
    )


def timeline(index: Index, doc: Indexed, before: int, after: int) -> dict[str, Any]:
    """The memories updated just before and after doc's, oldest first, doc marked."""
    now = datetime.now(UTC)
    shown, earlier, later = index.read(
        lambda searcher: listing.around(searcher, doc.path, before, after, now)
    )
    entries = [{**entry, "anchor": entry["path"] == doc.path} for entry in shown]
    return {"anchor": doc.memory_id, "entries": entries, "earlier": earlier, "later": later}
