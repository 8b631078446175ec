"""Reviewing history: who asserted each fact (blame), and the vault as it was (as-of search).

Record time comes from git (what the vault held at a commit); valid time from each fact's
valid_from / valid_until. An as-of search combines both: the memories of the commit in
force at that moment, with only the facts that held on that day.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from vault_tool.core import ids
from vault_tool.core.memory import Memory, parse, parse_time
from vault_tool.errors import InvalidInput, NotFound, UnparseableFile
from vault_tool.search import index as index_module
from vault_tool.search import ranking
from vault_tool.storage.git import Commit, blob_sha
from vault_tool.storage.store import Store, is_memory_path

_SHA_RE = re.compile(r"^[0-9a-f]{7,40}$")


def blame(store: Store, path: str) -> list[dict[str, Any]]:
    """Each current fact of the file with the commit, date, author and client that asserted it.

    A fact's asserting commit is the oldest one of the unbroken run of versions, counted
    back from now, that all state it. A fact only in an uncommitted edit has no commit.
    """
    current = _parse_bytes(store.read_bytes(path), path)
    if current is None:
        raise NotFound(f"{path} is missing or does not parse", hint="run `vault-tool doctor`")
    versions: list[tuple[Commit, set[tuple[str, str, str]]]] = []
    for commit in store.history(path):
        memory = _parse_bytes(store.show_file(commit.sha, commit.path), commit.path)
        facts = {(f.subject, f.predicate, f.object) for f in memory.facts} if memory else set()
        versions.append((commit, facts))
    lines = []
    for fact in current.facts:
        key = (fact.subject, fact.predicate, fact.object)
        asserted: Commit | None = None
        for commit, facts in versions:
            if key not in facts:
                break
            asserted = commit
        lines.append(
            {
                **fact.to_dict(),
                "commit": asserted.sha if asserted else None,
                "date": asserted.date if asserted else None,
                "author": asserted.author if asserted else None,
                "client": asserted.client if asserted else None,
            }
        )
    return lines


def resolve_moment(store: Store, when: str) -> tuple[str, datetime]:
    """A date, a time or a commit -> (the commit in force then, the moment)."""
    if _SHA_RE.match(when.lower()) and store.commit_exists(when):
        sha = store.git("rev-parse", f"{when}^{{commit}}")
        stamp = store.git("log", "-1", "--format=%cI", sha)
        return sha, parse_time(stamp)
    try:
        moment = parse_time(when)
    except ValueError:
        raise InvalidInput(
            f"--as-of: {when!r} is neither a date nor a commit of this vault",
            hint="give YYYY-MM-DD, an ISO time, or a sha from `vault-tool log`",
        ) from None
    if len(when.strip()) == 10:  # a date means the end of that day
        moment = moment.replace(hour=23, minute=59, second=59)
    sha = store.git("rev-list", "-1", f"--before={moment.isoformat()}", "HEAD")
    if not sha:
        raise NotFound(f"the vault has no commit before {when}", hint="pick a later date")
    return sha, moment


def search_as_of(
    store: Store, args: dict[str, Any], when: str, *, explain: bool = False, progress: Any = None
) -> dict[str, Any]:
    """Rank the memories the vault held at a moment, with the facts valid on that day."""
    from whoosh.filedb.filestore import RamStorage

    sha, moment = resolve_moment(store, when)
    listing = store.git("-c", "core.quotepath=off", "ls-tree", "-r", "--name-only", sha)
    paths = [p for p in listing.splitlines() if is_memory_path(p)]
    versions = store.last_commits(set(paths), rev=sha)
    ix = RamStorage().create_index(index_module.whoosh_schema())
    writer = ix.writer()
    stamp = int(moment.timestamp() * 1e9)
    for n, path in enumerate(paths, 1):
        if progress:
            progress(n, len(paths))
        data = store.show_file(sha, path)
        memory = _parse_bytes(data, path)
        if memory is None or data is None:
            continue
        writer.add_document(
            **index_module.document(
                memory,
                path=path,
                memory_id=memory.id or ids.path_id(path),
                version_id=versions.get(path, sha),
                blob=blob_sha(data),
                mtime_ns=stamp,
                size=len(data),
            )
        )
    writer.commit()
    controls = ranking.Controls(
        top_k=args.get("top_k", 5),
        maximum_context_bytes=args.get("maximum_context_bytes", 12000),
        memory_types=args.get("memory_types", []),
        tags=args.get("tags", []),
    )
    with ix.searcher() as searcher:
        hits, total = ranking.rank(searcher, args["query"], controls, moment)
    day = moment.date().isoformat()
    selected = ranking.hit_entries(
        hits,
        controls.maximum_context_bytes,
        lambda facts: [f for f in facts if valid_on(f, day)],
        explain=explain,
    )
    return {
        "query": args["query"],
        "selected_hits": selected,
        "total_matches": total,
        "as_of": {"commit": sha, "moment": moment.astimezone(UTC).isoformat()},
    }


def valid_on(fact: dict[str, Any], day: str) -> bool:
    """Whether a fact holds on day (YYYY-MM-DD) by its valid_from / valid_until."""
    return fact.get("valid_from", "") <= day and (
        not fact.get("valid_until") or day <= fact["valid_until"]
    )


def _parse_bytes(data: bytes | None, path: str) -> Memory | None:
    if data is None:
        return None
    try:
        return parse(data.decode("utf-8"), path)
    except (UnparseableFile, UnicodeDecodeError):
        return None
