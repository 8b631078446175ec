"""A file's version: the last commit that changed it, as `git log -1 -- PATH` names it.

A write checks an agent's expected_version_id against `git log -1 -- PATH`
(Git.last_commit); the index records versions found for many files at once, in one walk
of the history (last_commits). The two must agree, or an agent that read a version could
never write with it. On a straight history the walk's first commit that lists a file is
that commit. Past a merge it may not be: commits of the two sides come in date order, and
a merge that kept one side's file as it was lists nothing, so the newest commit that lists
the file may be the other side's, holding other bytes. A merge that made a file of its own
(both sides changed it) lists it (`-c`: the files that differ from every parent). So every
file found past a merge is checked against the bytes at rev, and one that does not hold
them is asked of git by itself: a few, after a merge; none on a straight history.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from vault_tool.storage.git import Git


def last_commits(repo: Git, paths: set[str], rev: str = "HEAD") -> dict[str, str]:
    """path -> the last commit (at or before rev) that changed it, in one walk."""
    wanted = set(paths)
    found: dict[str, str] = {}
    past_merge: set[str] = set()
    if not wanted:
        return found
    proc = repo.repo.git.log(
        "--format=%x01%H %P", "-c", "--name-only", "-z", "--no-renames", rev, as_process=True
    )
    sha, merges_seen = "", False
    try:
        for record in _records(proc.stdout):
            # A record is "\x01<sha> <parents>\n<first path>" or a further path of that commit.
            if record.startswith("\x01"):
                heading, _, record = record[1:].partition("\n")
                sha, *parents = heading.split()
                merges_seen = merges_seen or len(parents) > 1
            record = record.strip("\n")
            if record in wanted:
                found[record] = sha
                wanted.discard(record)
                if merges_seen:
                    past_merge.add(record)
                if not wanted:
                    break
    finally:
        with contextlib.suppress(Exception):
            proc.proc.kill()
            proc.proc.wait()
    if past_merge:
        at_rev = repo.trees.root_of(repo.run("rev-parse", "--verify", f"{rev}^{{commit}}"))
        for path in past_merge:
            if not _same_entry(repo, found[path], at_rev, path):
                found[path] = repo.run("log", "-1", "--format=%H", rev, "--", path)
    return found


def holds(repo: Git, sha: str, path: str, blob: str) -> bool:
    """Whether commit sha holds these bytes (their blob id) at path: an agent's version that
    names other commit of the same bytes (a merge kept them) is as good as the current."""
    try:
        entry = repo.trees.entry_at(repo.trees.root_of(sha), path)
    except Exception:  # (not a commit of this repository: no version of it)
        return False
    return entry is not None and entry[1].hex() == blob


def _same_entry(repo: Git, sha: str, root: bytes, path: str) -> bool:
    return repo.trees.entry_at(repo.trees.root_of(sha), path) == repo.trees.entry_at(root, path)


def _records(stream: Any) -> Iterator[str]:
    """NUL-separated records of a git -z output stream, decoded whole (never split)."""
    pending = b""
    for chunk in iter(lambda: stream.read(65536), b""):
        *complete, pending = (pending + chunk).split(b"\0")
        for record in complete:
            yield record.decode("utf-8", "replace")
    if pending:
        yield pending.decode("utf-8", "replace")
