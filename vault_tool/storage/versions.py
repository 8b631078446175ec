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
from dataclasses import dataclass
from typing import Any

from vault_tool.storage.git import Git


def last_commits(repo: Git, paths: set[str], rev: str = "HEAD") -> dict[str, str]:
    """path -> the last commit (at or before rev) that changed it, in one walk."""
    return {path: change.sha for path, change in last_changes(repo, paths, rev).items()}


@dataclass(frozen=True)
class LastChange:
    """The last commit that changed a file: its sha, its time (epoch seconds), and whether
    it states the file's time itself (the front matter's `updated`, not the commit's)."""

    sha: str
    time: int
    states_time: bool


def last_changes(repo: Git, paths: set[str], rev: str = "HEAD") -> dict[str, LastChange]:
    """path -> the last commit (at or before rev) that changed it, in one walk."""
    wanted = set(paths)
    found: dict[str, LastChange] = {}
    past_merge: set[str] = set()
    if not wanted:
        return found
    proc = repo.repo.git.log(
        "--format=%x01%H %ct %P%x02%s", "-c", "--name-status", "-z", "--no-renames", rev,
        as_process=True,
    )  # fmt: skip
    sha, when, stated, merges_seen = "", 0, None, False
    status = None  # a commit's records alternate: a status, then its path
    try:
        for record in _records(proc.stdout):
            if record.startswith("\x01"):
                heading, _, subject = record[1:].partition("\x02")
                sha, stamp, *parents = heading.split()
                when, stated = int(stamp), _states_time(subject)
                merges_seen = merges_seen or len(parents) > 1
                status = None
                continue
            record = record.strip("\n")
            if status is None:
                status = record or None
                continue
            if record in wanted:
                added = _added(status) if stated is None else stated
                found[record] = LastChange(sha, when, added)
                wanted.discard(record)
                if merges_seen:
                    past_merge.add(record)
                if not wanted:
                    break
            status = None
    finally:
        with contextlib.suppress(Exception):
            proc.proc.kill()
            proc.proc.wait()
    if past_merge:
        at_rev = repo.trees.root_of(repo.run("rev-parse", "--verify", f"{rev}^{{commit}}"))
        for path in past_merge:
            if not _same_entry(repo, found[path].sha, at_rev, path):
                found[path] = _asked_alone(repo, rev, path)
    return found


# The subjects of the tool's editorial rewrites (core/changelog.py): they keep `updated`,
# so that renaming an entity in hundreds of memories does not make them look changed.
EDITORIAL = ("Rename entity: ", "Merge entity: ", "Rename predicate: ")
# A restore writes back an old version, its old `updated` with it: it changed at its commit,
# even when it brings a deleted memory back.
RESTORE = "Restore "


def _states_time(subject: str) -> bool | None:
    """Whether a commit states the time of the files it changes in their front matter
    (True), never does (False), or does for the files it adds (None: see _added)."""
    if subject.startswith(EDITORIAL):
        return True
    return False if subject.startswith(RESTORE) else None


def _added(status: str) -> bool:
    """A file the commit added (against every parent, for a merge): its front matter's
    `updated` (or its own dates) says when it was made, not the commit (an adoption, an
    import, a person's commit of notes they dated)."""
    return bool(status) and set(status) == {"A"}


def _asked_alone(repo: Git, rev: str, path: str) -> LastChange:
    out = repo.run(
        "log", "-1", "--format=%H %ct%x02%s", "--name-status", "-z", "--no-renames", rev,
        "--", path,
    )  # fmt: skip
    heading, _, rest = out.partition("\x02")
    sha, stamp = heading.split()
    subject, _, statuses = rest.partition("\0")
    status = statuses.strip("\n").split("\0", 1)[0]
    stated = _states_time(subject)
    return LastChange(sha, int(stamp), _added(status) if stated is None else stated)


def commit_time(repo: Git, sha: str) -> int:
    """A commit's time (epoch seconds): when the change it records was made."""
    return int(repo.run("show", "-s", "--format=%ct", sha))


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
