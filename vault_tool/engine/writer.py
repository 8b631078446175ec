"""Writing memories: the create, update and delete of remember, and multi-file plans.

Every write holds the vault lock, goes through Store.apply (one commit) and then updates
the index, so a write is searchable when it returns.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vault_tool.core import calls, changelog, front_matter, ids, redact, schema, stages
from vault_tool.core.memory import Memory, fingerprint, memory_from_delta, parse, render
from vault_tool.core.projects import Projects
from vault_tool.core.times import utc_now
from vault_tool.engine import deletions, preconditions, similar
from vault_tool.errors import InvalidInput, UnparseableFile, VersionConflict
from vault_tool.search.documents import Indexed, document_for
from vault_tool.search.index import Index
from vault_tool.storage import problems as recorded
from vault_tool.storage.git import blob_sha
from vault_tool.storage.store import Change, Store

# Folders hold a month of one type; past this many files a day level is added, because
# every commit rewrites the tree objects of the folders on its path.
FOLDER_FILE_LIMIT = 400


@dataclass(frozen=True)
class Planned:
    """One file of a multi-file change: write memory at path, or delete path (memory None)."""

    path: str
    memory: Memory | None
    memory_id: str | None = None  # for a delete: the id to name in the commit trailer
    data: bytes | None = None  # the file's bytes when not render(memory): an edit in place


@dataclass
class PlanResult:
    """What apply_plan changed (or would change, on a dry run)."""

    paths: list[str]
    diff: str
    version_id: str | None


class Writer:
    """The write side of one open vault."""

    def __init__(self, store: Store, index: Index) -> None:
        self.store = store
        self.index = index
        self.root = store.root

    def create_batch(
        self, drafts: list[calls.Draft], client: str, projects: Projects, single: bool = False
    ) -> dict:
        """Create memories as one commit. Each is compared with its own project's memories
        only: an exact repeat there is `unchanged` and nearly the same ones are `similar`;
        another project's copy is not the memory it repeats (a search of its project would
        never find it), and is never named to a caller that may not reach it."""
        with self.store.write_lock():
            self.store.commits.require_committable()  # while git is busy, before any lookup
            results: list[dict[str, Any]] = []
            new: list[tuple[Memory, str]] = []
            seen: dict[tuple[str, str], dict[str, Any]] = {}  # (fingerprint, project) ->
            taken_paths: set[str] = set()
            now = utc_now()
            problems: list[schema.Problem] = []  # every item's, refused together
            keys: list[tuple[int, str]] = []
            earlier: dict[str, list[similar.Candidate]] = {}  # by project
            for i, draft in enumerate(drafts):
                prefix = "" if single else f"items[{i}]."
                delta = draft.delta
                project = projects.of(delta.get("project"), f"{delta['memory_type']}/")
                print_ = fingerprint(delta["memory_type"], delta["title"], draft.content_md)
                existing = seen.get((print_, project)) or self._existing_create(
                    print_, draft, projects, project
                )
                if existing:
                    results.append(existing)
                    continue
                problems += preconditions.reference_problems(self.index, delta, prefix, None)
                memory = memory_from_delta(
                    delta,
                    draft.content_md,
                    id=ids.new_id(),
                    source=client,
                    created=now,
                    updated=now,
                )
                path = self.path_for(memory, taken_paths)
                taken_paths.add(path)
                new.append((memory, path))
                keys += [(i, memory.key)] if memory.key else []
                result = write_result("create", "created", memory.id, "", path, draft.redactions)
                result.update({"warnings": draft.warnings} if draft.warnings else {})
                results.append(result)
                seen[print_, project] = {**result, "status": "unchanged", "redactions": []}
                mine = earlier.setdefault(project, [])
                scope = projects.scope(project)
                like = similar.similar(
                    self.index, memory.title, draft.content_md, mine, scope, draft.delta
                )
                if like:
                    result["similar"] = like
                mine.append(
                    similar.candidate(memory.id, memory.title, draft.content_md, None, draft.delta)
                )
            if problems := problems + preconditions.batch_key_problems(keys):
                raise schema.refusal(problems)
            sha = self.write_new(new, client) if new else self.store.head_sha()
            for result in results:
                if result["status"] == "created" or not result["version_id"]:
                    result["version_id"] = sha
                for other in result.get("similar", ()):
                    other["version_id"] = other["version_id"] or sha  # (an item of this batch)
        if single:
            return results[0]
        return {"mode": "create", "version_id": sha, "results": results}

    def _existing_create(
        self, print_: str, draft: calls.Draft, projects: Projects, project: str
    ) -> dict[str, Any] | None:
        for doc in self.index.find("fingerprint", print_):
            of = projects.of(doc.record["semantic_delta"].get("project"), doc.path)
            if doc.status == "active" and of == project:
                return write_result(
                    "create", "unchanged", doc.memory_id, doc.version_id, doc.path, draft.redactions
                )
        return None

    def write_new(self, new: list[tuple[Memory, str]], client: str) -> str:
        changes = [Change(path, render(m).encode(), m.title, expected=None) for m, path in new]
        message = changelog.created([changelog.entry(m, p) for m, p in new], client)
        sha = self.store.apply(changes, message)
        written = [(m, p, c.data) for (m, p), c in zip(new, changes, strict=True)]
        self.index_written(written, sha, new_paths=True)
        return sha

    def update(
        self, doc: Indexed, data: bytes, draft: calls.Draft, client: str, current: str
    ) -> dict:
        try:
            old = parse(data.decode("utf-8"), doc.path)
        except (UnparseableFile, UnicodeDecodeError):
            old = None  # a committed but broken file: the update replaces it; git keeps the old
        memory_id = (old.id if old else None) or (
            doc.memory_id if ids.is_ulid(doc.memory_id) else ids.new_id()
        )
        preconditions.require_no_markers(draft.content_md, doc)
        problems = preconditions.reference_problems(self.index, draft.delta, "", memory_id)
        if problems := problems + preconditions.fact_problems(draft.delta, doc):
            raise schema.refusal(problems)
        now = utc_now()
        keep = {
            "id": memory_id,
            # What the file says of its making stays as written, and a person's note that
            # says nothing of it gets nothing (git's trailers name each writer), but the
            # date every read gave it (below), which would otherwise become this update's.
            "source": old.source if old else client,
            "created": old.created if old else now,
            # An update that names no project leaves the memory in its own.
            "project": draft.delta.get("project") or (old.project if old else None),
            "extra": old.extra if old else {},
            "bom": old.bom if old else False,
        }
        memory = memory_from_delta(
            draft.delta, draft.content_md, updated=old.updated if old else now, **keep
        )
        # Nothing the caller sent changes the file: no commit, and no id or date put in it.
        as_was = memory.with_changes(id=old.id, created=old.created) if old else memory
        if old and _written_over(data, doc.path, as_was) == data:
            return write_result(
                "update", "unchanged", doc.memory_id, current, doc.path, draft.redactions
            )
        memory = memory.with_changes(updated=now)
        if old and not old.created and "created" not in old.extra:
            memory = memory.with_changes(created=_created_as_read(memory, doc))
        text = _written_over(data, doc.path, memory)
        was = changelog.entry(old, doc.path) if old else None
        message = changelog.updated(changelog.entry(memory, doc.path), was, client)
        sha = self.store.apply([Change(doc.path, text, memory.title, expected=data)], message)
        self.index_written([(memory, doc.path, text)], sha)
        recorded.discard(self.store.run_dir, [doc.path])  # (a flag of a merged body, say)
        result = write_result("update", "updated", memory_id, sha, doc.path, draft.redactions)
        return {**result, "warnings": draft.warnings} if draft.warnings else result

    def delete(self, doc: Indexed, client: str, data: bytes) -> dict[str, Any]:
        """Delete the memory's file, refused if it no longer holds data (what was checked)."""
        of = changelog.Entry(doc.memory_type, doc.title, doc.memory_id)
        message = changelog.one("delete", of, client)
        sha = self.store.apply([Change(doc.path, None, doc.title, expected=data)], message)
        with self.index.recorded() as writer:
            writer.forget([doc.path])
        recorded.discard(self.store.run_dir, [doc.path])
        return write_result("delete", "deleted", doc.memory_id, sha, doc.path, [])

    @stages.timed("version")
    def current(self, memory_id: str, expected: str) -> tuple[Indexed, bytes, str]:
        """The memory's document, bytes and version; refuse if it moved on since `expected`."""
        self.store.commits.require_committable()  # (a checkout or merge changes the files)
        doc = deletions.require(self.index, self.store, memory_id)  # (a deleted one: when, who)
        data = preconditions.writable_bytes(self.store, doc)  # there, and not broken by hand
        current = self.store.last_commit(doc.path) or self.store.head_sha()
        if self.hand_edited(doc.path, data):
            raise VersionConflict(
                f"memory_id: {memory_id} has an uncommitted hand edit in {doc.path}",
                current_version_id=current,
                hint="nothing was changed; the same version_id is refused until the edit is "
                "committed (by the watcher in a moment, or by a person: vault-tool commit); "
                "then read it again (search with memory_id) and retry with the new version_id",
            )
        # Another commit of the very bytes the agent read (a merge kept them) is as good.
        if expected != current and not self.store.holds_at(expected, doc.path, blob_sha(data)):
            since = (
                f"changed since version {expected[:10]}"
                if self.store.commit_exists(expected)
                else f"has no version {expected[:10]} (no commit of this vault has that id)"
            )
            raise VersionConflict(
                f"expected_version_id: {memory_id} {since}; its current version is {current}",
                current_version_id=current,
                hint="nothing was changed; read the current version (search with memory_id), "
                "merge your change into it, and retry with its version_id",
            )
        return doc, data, current

    def path_for(self, memory: Memory, taken: set[str] | frozenset[str] = frozenset()) -> str:
        """Where a new memory goes: <type>/<YYYY-MM>/<slug>.md, unique in the vault."""
        assert memory.id and memory.created
        folder = f"{memory.memory_type}/{memory.created[:7]}"
        full = self.root / folder
        if _entries(full) >= FOLDER_FILE_LIMIT:
            folder = f"{folder}/{memory.created[8:10]}"
        stem = ids.slugify(memory.title)
        path = f"{folder}/{stem}.md"
        if path in taken or (self.root / path).exists() or self.index.by_path(path):
            path = f"{folder}/{stem}-{memory.id[-6:].lower()}.md"
        return path

    def is_free(self, path: str, taken: set[str] | frozenset[str] = frozenset()) -> bool:
        """Whether a new file may go at path: not taken, not indexed, nothing on disk."""
        if path in taken or self.index.by_path(path) is not None:
            return False
        try:
            target = self.store.resolve(path)
        except InvalidInput:  # a symlink, or a path that leads out of the vault
            return False
        return not target.exists()

    # --- hand edits: the one test, and the one refusal ------------------------------------

    def hand_edited(self, path: str, data: bytes | None) -> bool:
        """Whether these bytes of path differ from HEAD's: a hand edit not yet committed."""
        return data is not None and not self.store.matches_head(path, data)

    def committed_bytes(self, path: str) -> bytes | None:
        """path's bytes (None if missing), refused while it has an uncommitted hand edit:
        rewriting it would lose the edit."""
        data = self.store.read_bytes(path)
        if self.hand_edited(path, data):
            raise VersionConflict(
                f"{path} has an uncommitted hand edit",
                current_version_id=self.store.head_sha(),
                hint=preconditions.hand_edit_hint(self.store, path),
            )
        return data

    @stages.timed("index")
    def index_written(
        self,
        written: list[tuple[Memory, str, bytes]],
        sha: str,
        *,
        new_paths: bool = False,
        changed: int | None = None,
    ) -> None:
        """Index files just committed (an index that cannot be written is rebuilt instead:
        the commit stands). new_paths: none of them is in the index yet (path_for checked,
        under the write lock), so no old document is looked up. changed: the commit's time,
        when it is not the files' `updated` (a restore: search/documents.py)."""
        with self.index.recorded() as writer:
            if not new_paths:
                writer.forget([path for _, path, _ in written])
            for memory, path, data in written:
                try:
                    stat = (self.root / path).stat()
                except FileNotFoundError:
                    continue  # removed since its commit (a person, git clean): it is in git
                writer.add_document(**document_for(
                    memory, path, version_id=sha, blob=blob_sha(data),
                    mtime_ns=stat.st_mtime_ns, size=stat.st_size, changed=changed,
                ))  # fmt: skip

    # --- several files in one commit (import, expiry, ontology, ...) ----------------------

    def apply_plan(
        self,
        plan: list[Planned],
        subject: str,
        *,
        client: str | None = None,
        dry_run: bool = False,
        read: dict[str, bytes] | None = None,
        author_date: str | None = None,
        reason: str | None = None,
    ) -> PlanResult:
        """Create, rewrite and delete several memory files as one commit (its message
        saying the reason, if one is given).

        Files whose bytes would not change are skipped; nothing changed means no commit.
        A file with an uncommitted hand edit refuses the whole plan (nothing is lost), as
        does a file of read (path -> the bytes the plan was made from) that changed since.
        With dry_run, nothing is written and the result carries the unified diff.
        """
        who = clean_client(client or "cli")
        with self.store.write_lock():
            self.store.commits.require_committable()  # while git is busy, before any lookup
            for path, planned_from in (read or {}).items():
                if self.store.read_bytes(path) != planned_from:
                    raise VersionConflict(
                        f"{path} changed since the rewrite was planned",
                        current_version_id=self.store.head_sha(),
                        hint="nothing was changed; run the command again",
                    )
            changes: list[Change] = []
            written: list[tuple[Memory, str, bytes]] = []
            removed: list[str] = []
            diffs: list[str] = []
            entries: list[changelog.Entry] = []
            for item in plan:
                old = self.committed_bytes(item.path)
                new = item.data
                if new is None and item.memory is not None:
                    new = _written_over(old, item.path, item.memory)
                if new == old:
                    continue
                if item.memory is not None:
                    of = changelog.entry(item.memory, item.path)
                    written.append((item.memory, item.path, new or b""))
                else:  # named as its last version has it
                    of = changelog.entry_of_file(old, item.path, item.memory_id)
                    removed.append(item.path)
                entries.append(of)
                changes.append(Change(item.path, new, of.title, expected=old))
                diffs.append(unified_diff(item.path, old, new))
            result = PlanResult([c.path for c in changes], "".join(diffs), None)
            if dry_run or not changes:
                return result
            message = changelog.about(subject, entries, who, reason)
            result.version_id = self.store.apply(changes, message, author_date=author_date)
            self.index_written(written, result.version_id)
            if removed:
                with self.index.recorded() as writer:
                    writer.forget(removed)
            return result


def unified_diff(path: str, old: bytes | None, new: bytes | None) -> str:
    import difflib

    before = (old or b"").decode("utf-8", "replace").splitlines(keepends=True)
    after = (new or b"").decode("utf-8", "replace").splitlines(keepends=True)
    return "".join(
        difflib.unified_diff(
            before,
            after,
            fromfile=f"a/{path}" if old is not None else "/dev/null",
            tofile=f"b/{path}" if new is not None else "/dev/null",
        )
    )


def write_result(
    mode: str,
    status: str,
    memory_id: str | None,
    version_id: str,
    path: str,
    redactions: list[dict[str, Any]],
) -> dict[str, Any]:
    return {
        "mode": mode,
        "status": status,
        "memory_id": memory_id,
        "version_id": version_id,
        "path": path,
        "redactions": list(redactions),
    }


def clean_client(name: str) -> str:
    """A client name safe for a commit trailer: no secret, one short line of plain characters."""
    name, _ = redact.redact_text(name, "client")
    cleaned = "".join(c if c.isalnum() or c in "._-/ " else "-" for c in name.strip())[:64]
    return cleaned.strip() or "unknown"


def _written_over(old: bytes | None, path: str, memory: Memory) -> bytes:
    """A memory's bytes: over a file that parses, only what it changes (a person's
    comments, quoting and own values stay); else rendered whole."""
    if old is not None:
        try:
            return front_matter.rewritten(old.decode("utf-8"), path, memory).encode()
        except (UnicodeDecodeError, UnparseableFile):
            pass  # (a broken file is replaced whole; git keeps it)
    return render(memory).encode()


def _created_as_read(memory: Memory, doc: Indexed) -> str | None:
    """The created of an update of a note that holds none: the date every read gave it,
    written down only if the index would read another one from the updated file (it dates
    such a note by what else it says, else by its update)."""
    shown = doc.record.get("created")
    after = document_for(memory, doc.path, version_id="", blob="", mtime_ns=0, size=0)
    return None if json.loads(after["record"])["created"] == shown else shown


def _entries(folder: Path) -> int:
    """How many entries a folder holds (0: none, or no folder, or gone while counted)."""
    try:
        return sum(1 for _ in os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return 0
