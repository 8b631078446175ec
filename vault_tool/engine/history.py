"""Reviewing history: who asserted each fact (blame), and the vault as it was (as-of search).

Record time comes from git (what the vault held at a commit); valid time from each fact's
valid_from / valid_until. An as-of search combines both: the memories of the commit in
force at that moment, with only the facts that held on that day.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from vault_tool.core import query as query_syntax
from vault_tool.core import search_call
from vault_tool.core.ids import is_memory_path, path_id
from vault_tool.core.memory import Memory, parse
from vault_tool.core.printable import command
from vault_tool.core.times import MOMENT_FORMS, end_of, parse_moment, parse_time, valid_on
from vault_tool.engine import trail
from vault_tool.engine.deletions import Deleted
from vault_tool.engine.trail import Start
from vault_tool.errors import InvalidInput, NotFound, UnparseableFile
from vault_tool.search import ranking
from vault_tool.search.documents import Indexed, document_for
from vault_tool.search.index import scratch_searcher
from vault_tool.search.results import hit_entries
from vault_tool.storage.git import Commit, blob_sha
from vault_tool.storage.store import Store

_SHA_RE = re.compile(r"^[0-9a-f]{7,40}\Z")


def start_of(subject: Indexed | Deleted) -> Start:
    """Where a memory's line of commits begins: its file now, or the commit that deleted it."""
    if isinstance(subject, Deleted):
        return subject.start
    by_id = subject.memory_id != path_id(subject.path)
    return Start(subject.memory_id, subject.path, "HEAD", by_id)


def commits_of(store: Store, subject: Indexed | Deleted) -> list[Commit]:
    """Every version of a memory, newest first, across its moves, deletes and restores."""
    return trail.commits(store, start_of(subject))


def blame(store: Store, subject: Indexed | Deleted) -> list[dict[str, Any]]:
    """Each current fact of the memory with the commit, date, author and client that asserted it.

    A fact's asserting commit is the oldest one of the unbroken run of versions, counted
    back from now, that all state it; a move, or a delete later undone, keeps the run
    unbroken. A fact only in an uncommitted edit has no commit. A deleted memory's facts
    are those of its last version.
    """
    path = subject.path
    if isinstance(subject, Deleted):
        last = subject.last_version
        data = store.show_file(last, path) if last else None
    else:
        data = store.read_bytes(path)
    current = _parse_bytes(data, path)
    if current is None:
        raise NotFound(f"{path} is missing or does not parse", hint="run `vault-tool doctor`")
    lines = commits_of(store, subject)
    versions: list[tuple[Commit, set[tuple[str, str, str]]]] = []
    for commit in lines:
        data = store.show_file(commit.sha, commit.path)
        if data is None:
            continue  # a delete, later undone: the facts it took away came back as they were
        memory = _parse_bytes(data, commit.path)
        facts = {(f.subject, f.predicate, f.object) for f in memory.facts} if memory else set()
        versions.append((commit, facts))
    found = []
    for fact in current.facts:
        key = (fact.subject, fact.predicate, fact.object)
        asserted: Commit | None = None
        for commit, facts in versions:
            if key not in facts:
                break
            asserted = commit
        found.append(
            {
                **fact.to_dict(),
                "version_id": asserted.sha if asserted else None,
                "date": asserted.date if asserted else None,
                "author": asserted.author if asserted else None,
                "client": asserted.client if asserted else None,
            }
        )
    return found


def resolve_moment(store: Store, when: str) -> tuple[str, datetime]:
    """A date, a time or a commit -> (the commit in force then, the moment)."""
    if _SHA_RE.match(when.lower()) and store.commit_exists(when):
        sha = store.git("rev-parse", f"{when}^{{commit}}")
        stamp = store.git("log", "-1", "--format=%cI", sha)
        return sha, parse_time(stamp)
    try:
        moment = end_of(parse_moment(when))  # a day means the end of that day
    except ValueError:
        raise InvalidInput(
            f"--as-of: {when!r} is neither a date nor a commit of this vault",
            hint=f"give {MOMENT_FORMS}, or a sha from `vault-tool log`",
        ) from None
    sha = store.git("rev-list", "-1", f"--before={moment.isoformat()}", "HEAD")
    if not sha:
        raise NotFound(f"the vault has no commit before {when}", hint="pick a later date")
    return sha, moment


def versions(store: Store, subject: Indexed | Deleted, *, patch: bool = False) -> list[dict]:
    """Every version of the memory, newest first; with patch, the diff each one made."""
    found = [record(c) for c in commits_of(store, subject)]
    for entry in found if patch else ():
        entry["patch"] = store.diff(entry["version_id"], entry["path"])
    return found


def record(commit: Commit) -> dict[str, Any]:
    """A commit as every command and result names its parts (version_id, not sha)."""
    return {
        "version_id": commit.sha,
        "date": commit.date,
        "author": commit.author,
        "client": commit.client,
        "subject": commit.subject,
        "path": commit.path,
        "memory_ids": list(commit.memory_ids),
    }


def show(
    store: Store,
    subject: Indexed | Deleted,
    version: str | None,
    read: Callable[[str], dict[str, Any]],
) -> dict[str, Any]:
    """A memory's file as written (read: its addressed read), now or at a version; a deleted
    one's last version, with when and by whom it was deleted."""
    if isinstance(subject, Indexed) and version is None:
        return file_of(store, read(subject.memory_id), None)
    if isinstance(subject, Deleted) and version is None:
        version = subject.last_version or subject.deleted_in
    assert version is not None
    commit = find_version(commits_of(store, subject), subject.memory_id, version)
    if store.show_file(commit.sha, commit.path) is None:
        raise NotFound(
            f"version: {version} deleted {subject.memory_id}; it holds no file",
            hint=f"pick an earlier version from `{command('history', subject.memory_id)}`",
            field="version",
        )
    if isinstance(subject, Indexed):
        return file_of(store, read(subject.memory_id), commit)
    read = {"memory_id": subject.memory_id, "path": subject.path, "title": subject.title,
            "memory_type": subject.memory_type}  # fmt: skip
    return {**file_of(store, read, commit), "deleted": subject.to_dict()}


def file_of(store: Store, read: dict[str, Any], commit: Commit | None) -> dict[str, Any]:
    """An addressed read with the file's text, as it is now or as of commit."""
    if commit is None:
        data = store.read_bytes(read["path"])
        return {**read, "file": (data or b"").decode("utf-8", "replace")}
    data = store.show_file(commit.sha, commit.path)
    text = (data or b"").decode("utf-8", "replace")
    read = {**read, "version_id": commit.sha, "path": commit.path, "file": text}
    try:
        old = parse(text, commit.path)
    except UnparseableFile:
        return read  # that version did not parse: its text is all there is to show
    # Every field of that version, not today's title or delta beside yesterday's text.
    return {
        **read,
        "title": old.title,
        "memory_type": old.memory_type,
        "content_md": old.body,
        "semantic_delta": old.semantic_delta(),
        "created": old.created,
        "updated": old.updated,
    }


def find_version(commits: list[Commit], memory_id: str, version: str) -> Commit:
    """The one commit of a memory's history that a version names.

    One rule for every command that takes a version (show, restore): a sha or a prefix of
    at least 7 hex digits, in any case, naming exactly one version of this memory.
    """
    wanted = version.strip().lower()
    found = [c for c in commits if c.sha.startswith(wanted)] if _SHA_RE.match(wanted) else []
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        raise InvalidInput(
            f"version: {version!r} names {len(found)} versions of {memory_id}",
            hint="give more of the sha, as `vault-tool history` prints it",
            field="version",
        )
    raise NotFound(
        f"version: {version!r} is not a version of {memory_id}",
        hint=f"pick a commit from `{command('history', memory_id)}`",
        field="version",
    )


def search_as_of(
    store: Store, args: Any, when: str, *, explain: bool = False, progress: Any = None
) -> dict[str, Any]:
    """Rank the memories the vault held at a moment, with the facts valid on that day."""
    call = search_call.check_search(args)
    if call.query is None:
        raise InvalidInput(
            "query: a search as of a moment ranks by query",
            hint="send a query instead of memory_id",
            field="query",
        )
    query_syntax.parse_query(call.query)  # a malformed query is refused before the past is read
    # The moment replaces since/until: an as-of search ranks what the vault held then.
    query, controls = call.query, replace(call.controls, since=None, until=None)
    sha, moment = resolve_moment(store, when)
    listing = store.git("-c", "core.quotepath=off", "ls-tree", "-r", "--name-only", sha)
    paths = [p for p in listing.splitlines() if is_memory_path(p)]
    versions = store.last_commits(set(paths), rev=sha)
    stamp = int(moment.timestamp() * 1e9)

    def documents() -> Iterator[dict[str, Any]]:
        seen: set[str] = set()
        for n, path in enumerate(sorted(paths), 1):
            if progress:
                progress(n, len(paths))
            data = store.show_file(sha, path)
            memory = _parse_bytes(data, path)
            if memory is None or data is None or (memory.id or path) in seen:
                continue  # (a copy beside it, half a move: one memory, as the index holds it)
            seen.add(memory.id or path)
            yield document_for(
                memory,
                path,
                version_id=versions.get(path, sha),
                blob=blob_sha(data),
                mtime_ns=stamp,
                size=len(data),
            )

    with scratch_searcher(documents()) as searcher:
        hits, total = ranking.rank(searcher, query, controls, moment)
    day = moment.date().isoformat()
    selected = hit_entries(
        hits,
        controls.maximum_context_bytes,
        lambda facts: [f for f in facts if valid_on(f, day)],
        explain=explain,
    )
    return {
        "query": query,
        "selected_hits": selected,
        "total_matches": total,
        "as_of": {"version_id": sha, "moment": moment.astimezone(UTC).isoformat()},
    }


def version_memory(store: Store, commit: Commit) -> Memory | None:
    """The memory as a commit holds it (None: the commit removed it, or it did not parse)."""
    return _parse_bytes(store.show_file(commit.sha, commit.path), commit.path)


def _parse_bytes(data: bytes | None, path: str) -> Memory | None:
    if data is None:
        return None
    try:
        return parse(data.decode("utf-8"), path)
    except (UnparseableFile, UnicodeDecodeError):
        return None
