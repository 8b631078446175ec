"""Restore: a memory's bytes of an earlier version written back as one new commit.

A live memory goes back to a version of its history (its file stays where it is now). A
deleted one comes back with the same id and content, by default its last version, at the
path it was deleted from, or beside it when another file took that place.
"""

from __future__ import annotations

from typing import Any

from vault_tool.core import changelog
from vault_tool.core.memory import Memory, parse
from vault_tool.core.printable import command
from vault_tool.core.times import utc_now
from vault_tool.engine import history
from vault_tool.engine.deletions import Deleted
from vault_tool.engine.writer import Writer, write_result
from vault_tool.errors import InvalidInput, NotFound, VersionConflict
from vault_tool.search.documents import Indexed
from vault_tool.storage.store import Change


def restore(
    writer: Writer, subject: Indexed | Deleted, version: str | None, client: str
) -> dict[str, Any]:
    """Write the bytes of a version back (see the module); one commit, or none if unchanged."""
    store = writer.store
    memory_id = subject.memory_id
    with store.write_lock():
        store.commits.require_committable()  # (a checkout changes the history too)
        if isinstance(subject, Deleted) and writer.index.by_id(memory_id) is not None:
            subject = writer.index.require(memory_id)  # brought back meanwhile
        if version is None:
            version = _last_version(subject)
        commit = history.find_version(history.commits_of(store, subject), memory_id, version)
        old = store.show_file(commit.sha, commit.path)
        if old is None:
            raise NotFound(
                f"version: {version} holds no content for {memory_id} (it deleted the memory)",
                hint=f"pick an earlier version from `{command('history', memory_id)}`",
                field="version",
            )
        memory = parse(old.decode("utf-8"), commit.path)
        path = _place_for(writer, subject, memory) if isinstance(subject, Deleted) else subject.path
        if path != commit.path:  # a title may come from the file name: read it where it goes
            memory = parse(old.decode("utf-8"), path)
        of = changelog.Entry(memory.memory_type, memory.title, memory_id)
        message = changelog.one("restore", of, client, version=commit.sha[:10])
        if isinstance(subject, Deleted):
            sha = store.apply([Change(path, old, memory.title, expected=None)], message)
            writer.index_written([(memory, path, old)], sha, changed=store.commit_time(sha))
            return write_result("update", "restored", memory_id, sha, path, [])
        current = store.read_bytes(subject.path)
        if writer.hand_edited(subject.path, current):
            raise VersionConflict(
                f"{subject.path} has an uncommitted hand edit",
                current_version_id=subject.version_id,
                hint="commit or discard the edit first",
            )
        if current == old:
            return write_result("update", "unchanged", memory_id, subject.version_id,
                                subject.path, [])  # fmt: skip
        sha = store.apply([Change(subject.path, old, memory.title, expected=current)], message)
        # Its old `updated` comes back with it: since/until see it at its commit's time.
        writer.index_written([(memory, subject.path, old)], sha, changed=store.commit_time(sha))
    return write_result("update", "updated", memory_id, sha, subject.path, [])


def _last_version(subject: Indexed | Deleted) -> str:
    if isinstance(subject, Indexed):
        raise InvalidInput(
            f"version: {subject.memory_id} is not deleted; name the version to go back to",
            hint=f"pick a version from `{command('history', subject.memory_id)}`",
            field="version",
        )
    if subject.last_version is None:
        raise NotFound(
            f"version: no version of {subject.memory_id} before its delete holds content",
            hint=f"pick one from `{command('history', subject.memory_id)}`",
            field="version",
        )
    return subject.last_version


def _place_for(writer: Writer, subject: Deleted, memory: Memory) -> str:
    """Where a deleted memory comes back: its old path if free, else beside it by its id."""
    if writer.is_free(subject.path):
        return subject.path
    if memory.id is None:  # its id is its path, which another file holds now
        raise InvalidInput(
            f"{subject.path} holds another file now; {subject.memory_id} is that path's id",
            hint="move that file away, then run restore again",
        )
    return writer.path_for(memory.with_changes(created=memory.created or utc_now()))
