"""The one place that composes store, index and ledger: remember, search, read, history.

Surfaces (the MCP server, the CLI) call a Vault; the watcher feeds it changed paths, which
intake.py takes in.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vault_tool import ids, ranking, remember, review, schema
from vault_tool import index as index_module
from vault_tool import memory as memory_module
from vault_tool.errors import Cancelled, InvalidInput, NotFound, UnparseableFile, VersionConflict
from vault_tool.index import Index, Indexed
from vault_tool.intake import Intake, Progress, SyncReport
from vault_tool.ledger import Ledger
from vault_tool.memory import Memory, memory_from_delta, parse, render, utc_now
from vault_tool.repo import blob_sha, commit_message
from vault_tool.store import Change, Store

log = logging.getLogger(__name__)

# Folders hold a month of one type; past this many files a day level is added, because
# every commit rewrites the tree objects of the folders on its path.
FOLDER_FILE_LIMIT = 400


@dataclass(frozen=True)
class Planned:
    """One file of a multi-file change: write memory at path, or delete path (memory None)."""

    path: str
    memory: Memory | None
    memory_id: str | None = None  # for a delete: the id to name in the commit trailer


@dataclass
class PlanResult:
    """What apply_plan changed (or would change, on a dry run)."""

    paths: list[str]
    diff: str
    version_id: str | None


class Vault:
    """A vault opened by one process: its store, its index, and the operations on them."""

    def __init__(self, store: Store, index: Index, client: str = "cli") -> None:
        self.store = store
        self.index = index
        self.client = _clean_client(client)
        self.root = store.root
        self.ledger = Ledger(store.root)
        # True while a background catch-up runs: searches then say they may miss changes.
        self.catching_up = False
        self.intake = Intake(store, index)

    @classmethod
    def open(cls, path: Path | str, *, client: str = "cli", catch_up: bool = True) -> Vault:
        """Open a vault (repairing interrupted writes) and bring its index up to date."""
        store = Store.open(Path(path))
        vault = cls(store, Index(store.root).open(), client)
        if catch_up:
            vault.catch_up()
        return vault

    def close(self) -> None:
        """Flush the ledger, release the index and every git helper process."""
        self.ledger.flush()
        self.index.close()
        self.store.close()

    def __enter__(self) -> Vault:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- remember ------------------------------------------------------------------------

    def remember(self, args: Any, client: str | None = None) -> dict[str, Any]:
        """One remember call: create, update, delete, or a batch of creates."""
        call = remember.check_call(args)
        who = _clean_client(client or self.client)
        if call.batch:
            return self._create_batch(call.drafts, who)
        if call.mode == "create":
            return self._create_batch(call.drafts, who, single=True)
        memory_id = ids.check_memory_id(call.memory_id)
        expected = ids.check_version_id(call.expected_version_id)
        with self.store.write_lock():
            doc, data, current = self._current(memory_id, expected)
            if call.mode == "delete":
                return self._delete(doc, who)
            return self._update(doc, data, call.drafts[0], who, current)

    def _create_batch(
        self, drafts: list[remember.Draft], client: str, single: bool = False
    ) -> dict:
        with self.store.write_lock():
            results: list[dict[str, Any]] = []
            new: list[tuple[Memory, str]] = []
            seen: dict[str, dict[str, Any]] = {}
            taken_paths: set[str] = set()
            now = utc_now()
            for i, draft in enumerate(drafts):
                prefix = "" if single else f"items[{i}]."
                delta = draft.delta
                print_ = index_module.fingerprint(
                    delta["memory_type"], delta["title"], draft.content_md
                )
                existing = seen.get(print_) or self._existing_create(print_, draft)
                if existing:
                    results.append(existing)
                    continue
                self._check_references(delta, prefix, own_id=None)
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
                result = _result("create", "created", memory.id, "", path, draft.redactions)
                results.append(result)
                seen[print_] = {**result, "status": "unchanged", "redactions": []}
            keys = [m.key for m, _ in new if m.key]
            if len(keys) != len(set(keys)):
                raise InvalidInput(
                    "items: two items use the same key", hint="give each key to one memory"
                )
            sha = self._write_new(new, client) if new else self.store.head_sha()
            for result in results:
                if result["status"] == "created" or not result["version_id"]:
                    result["version_id"] = sha
        if single:
            return results[0]
        return {"mode": "create", "version_id": sha, "results": results}

    def _existing_create(self, print_: str, draft: remember.Draft) -> dict[str, Any] | None:
        for doc in self.index.find("fingerprint", print_):
            if doc.status == "active":
                return _result(
                    "create", "unchanged", doc.memory_id, doc.version_id, doc.path, draft.redactions
                )
        return None

    def _write_new(self, new: list[tuple[Memory, str]], client: str) -> str:
        changes = [Change(path, render(m).encode(), m.title) for m, path in new]
        if len(new) == 1:
            subject = f"Create {new[0][0].memory_type}: {new[0][0].title}"
        else:
            subject = f"Create {len(new)} memories"
        message = commit_message(subject, [m.id for m, _ in new], client)
        sha = self.store.apply(changes, message)
        self._index_written([(m, p, c.data) for (m, p), c in zip(new, changes, strict=True)], sha)
        return sha

    def _update(
        self, doc: Indexed, data: bytes, draft: remember.Draft, client: str, current: str
    ) -> dict:
        try:
            old = parse(data.decode("utf-8"), doc.path)
        except (UnparseableFile, UnicodeDecodeError):
            old = None  # a committed but broken file: the update replaces it; git keeps the old
        memory_id = (old.id if old else None) or (
            doc.memory_id if ids.is_ulid(doc.memory_id) else ids.new_id()
        )
        self._check_references(draft.delta, "", own_id=memory_id)
        now = utc_now()
        keep = {
            "id": memory_id,
            "source": client,
            "created": (old.created if old else None) or now,
            "extra": old.extra if old else {},
        }
        memory = memory_from_delta(
            draft.delta, draft.content_md, updated=old.updated if old else now, **keep
        )
        if old and render(memory).encode() == data:
            return _result("update", "unchanged", memory_id, current, doc.path, draft.redactions)
        memory = memory.with_changes(updated=now)
        text = render(memory).encode()
        message = commit_message(
            f"Update {memory.memory_type}: {memory.title}", [memory_id], client
        )
        sha = self.store.apply([Change(doc.path, text, memory.title)], message)
        self._index_written([(memory, doc.path, text)], sha)
        return _result("update", "updated", memory_id, sha, doc.path, draft.redactions)

    def _delete(self, doc: Indexed, client: str) -> dict[str, Any]:
        message = commit_message(f"Delete {doc.memory_type}: {doc.title}", [doc.memory_id], client)
        sha = self.store.apply([Change(doc.path, None, doc.title)], message)
        with self.index.writer() as writer:
            writer.delete_by_term("path", doc.path)
        return _result("delete", "deleted", doc.memory_id, sha, doc.path, [])

    def _current(self, memory_id: str, expected: str) -> tuple[Indexed, bytes, str]:
        """The memory's document, bytes and version; refuse if it moved on since `expected`."""
        doc = self._require(memory_id)
        data = self.store.read_bytes(doc.path)
        if data is None:
            raise NotFound(
                f"memory_id: {memory_id} is indexed but its file {doc.path} is gone",
                hint="it was deleted or moved by hand; search again for its current id",
                field="memory_id",
            )
        current = self.store.last_commit(doc.path) or self.store.head_sha()
        if blob_sha(data) != self.store.head_blob(doc.path):
            raise VersionConflict(
                f"memory_id: {memory_id} has an uncommitted hand edit in {doc.path}",
                current_version_id=current,
                hint="nothing was changed; read it again once the edit is committed "
                "(search with memory_id) and retry with the new version_id",
            )
        if expected != current:
            raise VersionConflict(
                f"expected_version_id: {memory_id} changed since version {expected[:10]}; "
                f"its current version is {current}",
                current_version_id=current,
                hint="nothing was changed; read the current version (search with memory_id), "
                "merge your change into it, and retry with its version_id",
            )
        return doc, data, current

    def _check_references(self, delta: dict[str, Any], prefix: str, own_id: str | None) -> None:
        key = delta.get("key")
        if key:
            holders = [d for d in self.index.find("key", key) if d.memory_id != own_id]
            if holders:
                raise InvalidInput(
                    f"{prefix}semantic_delta.key: {key!r} is already used by "
                    f"{holders[0].memory_id}",
                    hint="keys are unique: update that memory instead, or choose another key",
                    field=f"{prefix}semantic_delta.key",
                )
        for i, target in enumerate(delta.get("supersedes", ())):
            if target == own_id or self.index.by_id(target) is None:
                where = f"{prefix}semantic_delta.supersedes[{i}]"
                raise InvalidInput(
                    f"{where}: no other memory has id {target}",
                    hint="list ids of existing memories, as returned by search",
                    field=where,
                )

    def path_for(self, memory: Memory, taken: set[str] | frozenset[str] = frozenset()) -> str:
        """Where a new memory goes: <type>/<YYYY-MM>/<slug>.md, unique in the vault."""
        assert memory.id and memory.created
        folder = f"{memory.memory_type}/{memory.created[:7]}"
        full = self.root / folder
        if full.is_dir() and sum(1 for _ in os.scandir(full)) >= FOLDER_FILE_LIMIT:
            folder = f"{folder}/{memory.created[8:10]}"
        stem = ids.slugify(memory.title)
        path = f"{folder}/{stem}.md"
        if path in taken or (self.root / path).exists() or self.index.by_path(path):
            path = f"{folder}/{stem}-{memory.id[-6:].lower()}.md"
        return path

    def _index_written(self, written: list[tuple[Memory, str, bytes]], sha: str) -> None:
        with self.index.writer() as writer:
            for memory, path, data in written:
                stat = (self.root / path).stat()
                writer.update_document(
                    **index_module.document(
                        memory,
                        path=path,
                        memory_id=memory.id or ids.path_id(path),
                        version_id=sha,
                        blob=blob_sha(data),
                        mtime_ns=stat.st_mtime_ns,
                        size=stat.st_size,
                    )
                )

    # --- several files in one commit (import, expiry, ontology, ...) ----------------------

    def apply_plan(
        self, plan: list[Planned], subject: str, *, client: str | None = None, dry_run: bool = False
    ) -> PlanResult:
        """Create, rewrite and delete several memory files as one commit.

        Files whose bytes would not change are skipped; nothing changed means no commit.
        A file with an uncommitted hand edit refuses the whole plan (nothing is lost).
        With dry_run, nothing is written and the result carries the unified diff.
        """
        who = _clean_client(client or self.client)
        with self.store.write_lock():
            changes: list[Change] = []
            written: list[tuple[Memory, str, bytes]] = []
            removed: list[str] = []
            diffs: list[str] = []
            memory_ids: list[str] = []
            for item in plan:
                old = self.store.read_bytes(item.path)
                if old is not None and blob_sha(old) != self.store.head_blob(item.path):
                    raise VersionConflict(
                        f"{item.path} has an uncommitted hand edit",
                        current_version_id=self.store.head_sha(),
                        hint="commit it (vault-tool commit) or undo it, then run this again",
                    )
                new = render(item.memory).encode() if item.memory is not None else None
                if new == old:
                    continue
                title = item.memory.title if item.memory else item.path
                changes.append(Change(item.path, new, title))
                diffs.append(_unified_diff(item.path, old, new))
                if item.memory is not None:
                    written.append((item.memory, item.path, new or b""))
                    memory_ids.append(item.memory.id or ids.path_id(item.path))
                else:
                    removed.append(item.path)
                    memory_ids.append(item.memory_id or ids.path_id(item.path))
            result = PlanResult([c.path for c in changes], "".join(diffs), None)
            if dry_run or not changes:
                return result
            result.version_id = self.store.apply(changes, commit_message(subject, memory_ids, who))
            self._index_written(written, result.version_id)
            if removed:
                with self.index.writer() as writer:
                    for path in removed:
                        writer.delete_by_term("path", path)
            return result

    # --- search --------------------------------------------------------------------------

    def search(
        self,
        args: Any,
        client: str | None = None,
        *,
        explain: bool = False,
        cancelled: Callable[[], bool] | None = None,
    ) -> dict[str, Any]:
        """A search call: ranked retrieval by query, or an addressed read by memory_id."""
        if not isinstance(args, dict):
            raise InvalidInput("arguments: must be an object", hint='send {"query": ...}')
        schema.validate(args, "search.input.schema.json")
        if ("query" in args) == ("memory_id" in args):
            raise InvalidInput(
                "send exactly one of query or memory_id",
                hint="query ranks memories by relevance; memory_id reads one memory in full",
                field="query",
            )
        if "memory_id" in args:
            extra = sorted(set(args) - {"memory_id", "ledger"})
            if extra:
                raise InvalidInput(
                    f"{extra[0]}: ranking controls and filters do not apply to a memory_id read",
                    hint=f"remove {', '.join(extra)}, or search by query instead",
                    field=extra[0],
                )
            return self.read(args["memory_id"])
        query = args["query"].strip()
        if not query:
            raise InvalidInput(
                "query: must contain words", hint="describe what to recall", field="query"
            )
        controls = ranking.Controls(
            top_k=args.get("top_k", 5),
            maximum_context_bytes=args.get("maximum_context_bytes", 12000),
            memory_types=args.get("memory_types", []),
            tags=args.get("tags", []),
            since=_checked_time(args.get("since"), "since"),
            until=_checked_time(args.get("until"), "until"),
        )
        with self.index.searcher() as searcher:
            hits, total = ranking.rank(
                searcher, query, controls, datetime.now(UTC), self.ledger.judgements()
            )
            vault_size = searcher.doc_count()
        words = ranking.query_words(query)
        selected = ranking.hit_entries(
            hits,
            controls.maximum_context_bytes,
            lambda facts: ranking.matching_facts(facts, words),
            explain=explain,
        )
        if cancelled and cancelled():
            raise Cancelled("the search was cancelled", hint="nothing was recorded")
        result: dict[str, Any] = {"query": query, "selected_hits": selected, "total_matches": total}
        if not selected:
            result["reason"] = "empty_vault" if vault_size == 0 else "nothing_relevant"
        if self.catching_up:
            result["index_catching_up"] = True
        self.ledger.record_search(
            query=query,
            controls={k: v for k, v in args.items() if k not in ("query", "ledger")},
            hits=selected,
            total_matches=total,
            client=_clean_client(client or self.client),
        )
        return result

    def feedback(
        self, handle: str, helpful: list[str], unhelpful: list[str], who: str = "operator"
    ) -> dict[str, Any]:
        """Record which results of a logged search helped; ranking learns from it."""
        search = self.ledger.search_record(handle)
        if search is None:
            raise NotFound(
                f"no search record has handle {handle}",
                hint="pick a handle from `vault-tool ledger`",
            )
        returned = {r["memory_id"] for r in search["results"]}
        for memory_id in [*helpful, *unhelpful]:
            if memory_id not in returned:
                raise InvalidInput(
                    f"{memory_id} was not among the results of search {handle}",
                    hint=f"judge only what it returned: {', '.join(sorted(returned)) or 'nothing'}",
                )
        both = set(helpful) & set(unhelpful)
        if both:
            raise InvalidInput(
                f"{sorted(both)[0]} is marked both helpful and unhelpful",
                hint="mark each memory once",
            )
        if not helpful and not unhelpful:
            raise InvalidInput("nothing to record", hint="give --helpful ID or --unhelpful ID")
        record_id = self.ledger.record_feedback(search, helpful, unhelpful, _clean_client(who))
        return {
            "feedback_id": record_id,
            "search_id": handle,
            "query": search["query"],
            "helpful": helpful,
            "unhelpful": unhelpful,
        }

    # --- reading -------------------------------------------------------------------------

    def read(self, memory_id: str) -> dict[str, Any]:
        """An addressed read: the one memory, at the top level."""
        doc = self._require(ids.check_memory_id(memory_id))
        record = doc.record
        return {
            "memory_id": doc.memory_id,
            "version_id": doc.version_id,
            "title": doc.title,
            "memory_type": doc.memory_type,
            "content_md": record["content_md"],
            "semantic_delta": record["semantic_delta"],
            "path": doc.path,
            "created": record["created"],
            "updated": record["updated"],
        }

    def _require(self, memory_id: str) -> Indexed:
        doc = self.index.by_id(memory_id)
        if doc is None:
            raise NotFound(
                f"memory_id: no memory has id {memory_id}",
                hint="search with a query to find the memory and its current id",
                field="memory_id",
            )
        return doc

    def blame(self, memory_id: str) -> list[dict[str, Any]]:
        """Each current fact of a memory with the commit, date and client that asserted it."""
        return review.blame(self.store, self._require(ids.check_memory_id(memory_id)).path)

    def search_as_of(
        self, args: dict[str, Any], when: str, *, explain: bool = False, progress: Any = None
    ) -> dict[str, Any]:
        """A query over the vault as it was at a date or commit (not recorded in the ledger)."""
        schema.validate(args, "search.input.schema.json")
        return review.search_as_of(self.store, args, when, explain=explain, progress=progress)

    # --- lifecycle: expiry and dismissal ------------------------------------------------

    def expire(self, *, dry_run: bool = False) -> PlanResult:
        """Delete every memory whose expires_at has passed, in one commit."""
        from whoosh import query as q

        now = int(datetime.now(UTC).timestamp())
        with self.index.searcher() as searcher:
            due = [
                Indexed.from_stored(searcher.stored_fields(docnum))
                for docnum in searcher.docs_for_query(q.NumericRange("expires_ts", 1, now))
            ]
        plan = [Planned(doc.path, None, doc.memory_id) for doc in sorted(due, key=lambda d: d.path)]
        noun = "memory" if len(plan) == 1 else "memories"
        return self.apply_plan(plan, f"Expire {len(plan)} {noun}", dry_run=dry_run)

    def set_status(self, memory_id: str, status: str, *, dry_run: bool = False) -> PlanResult:
        """Dismiss (hide from search, keep in the vault) or undismiss a memory, as one commit."""
        doc = self._require(ids.check_memory_id(memory_id))
        data = self.store.read_bytes(doc.path)
        memory = parse((data or b"").decode("utf-8"), doc.path)
        if memory.status == status:
            return PlanResult([], "", None)
        changed = memory.with_changes(status=status, updated=utc_now())
        verb = "Dismiss" if status == "dismissed" else "Undismiss"
        subject = f"{verb} {memory.memory_type}: {memory.title}"
        return self.apply_plan([Planned(doc.path, changed)], subject, dry_run=dry_run)

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        """Every version of a memory, newest first."""
        doc = self._require(ids.check_memory_id(memory_id))
        return [c.__dict__ for c in self.store.history(doc.path)]

    def restore(self, memory_id: str, version: str, client: str | None = None) -> dict[str, Any]:
        """Bring a memory back to an earlier version, as one new commit."""
        who = _clean_client(client or self.client)
        doc = self._require(ids.check_memory_id(memory_id))
        match = [c for c in self.store.history(doc.path) if c.sha.startswith(version.lower())]
        if len(version) < 7 or not match:
            raise NotFound(
                f"version: {version!r} is not a version of {memory_id}",
                hint=f"pick a commit from `vault-tool history {memory_id}`",
                field="version",
            )
        old = self.store.show_file(match[0].sha, match[0].path)
        if old is None:
            raise NotFound(
                f"version: {version} holds no content for {memory_id}", hint="pick another"
            )
        with self.store.write_lock():
            current = self.store.read_bytes(doc.path)
            if current is not None and blob_sha(current) != self.store.head_blob(doc.path):
                raise VersionConflict(
                    f"{doc.path} has an uncommitted hand edit",
                    current_version_id=doc.version_id,
                    hint="commit or discard the edit first",
                )
            if current == old:
                return _result("update", "unchanged", memory_id, doc.version_id, doc.path, [])
            memory = parse(old.decode("utf-8"), doc.path)
            subject = f"Restore {memory.memory_type}: {memory.title} to {match[0].sha[:10]}"
            message = commit_message(subject, [memory_id], who)
            sha = self.store.apply([Change(doc.path, old, memory.title)], message)
            self._index_written([(memory, doc.path, old)], sha)
        return _result("update", "updated", memory_id, sha, doc.path, [])

    # --- the folder: catch-up and hand edits (intake.py) --------------------------------

    def catch_up(self, progress: Progress | None = None) -> SyncReport:
        """Index what changed in the folder since the index last saw it."""
        return self.intake.catch_up(progress)

    def reindex(self, progress: Progress | None = None) -> SyncReport:
        """Rebuild the index from the files."""
        return self.intake.reindex(progress)

    def sync_paths(self, paths: list[str], *, commit: bool | None = None) -> SyncReport:
        """Take in hand edits of these files (check, commit, index)."""
        return self.intake.sync_paths(paths, commit=commit)

    def take_in_offline_changes(self, progress: Progress | None = None) -> SyncReport:
        """At start: commit hand edits made while nothing ran, then catch up."""
        return self.intake.take_in_offline_changes(progress)

    def problems(self) -> dict[str, dict[str, Any]]:
        """Files that did not parse when last read: path -> line, reason, hint."""
        return self.intake.problems()


def _unified_diff(path: str, old: bytes | None, new: bytes | None) -> str:
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


def _checked_time(value: str | None, field_name: str) -> str | None:
    if value is None:
        return None
    try:
        memory_module.parse_time(value)
    except ValueError:
        raise InvalidInput(
            f"{field_name}: {value!r} is not a real date",
            hint="use YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ",
            field=field_name,
        ) from None
    return value


def _result(
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


def _clean_client(name: str) -> str:
    """A client name safe for a commit trailer: one short line of plain characters."""
    cleaned = "".join(c if c.isalnum() or c in "._-/ " else "-" for c in name.strip())[:64]
    return cleaned.strip() or "unknown"
