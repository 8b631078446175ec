"""The one place that composes store, index and ledger: remember, search, read, history.

Surfaces (the MCP server, the CLI) call a Vault; the watcher feeds it changed paths, which
intake.py takes in.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vault_tool.core import calls as remember
from vault_tool.core import ids, schema
from vault_tool.core import memory as memory_module
from vault_tool.core.memory import Memory, parse, utc_now
from vault_tool.engine import history as review
from vault_tool.engine.intake import Intake, Progress, SyncReport
from vault_tool.engine.ledger import Ledger
from vault_tool.engine.writer import Planned, PlanResult, Writer, clean_client, write_result
from vault_tool.errors import Cancelled, InvalidInput, NotFound, VersionConflict
from vault_tool.search import ranking
from vault_tool.search.index import Index, Indexed
from vault_tool.storage.git import blob_sha, commit_message
from vault_tool.storage.store import Change, Store

log = logging.getLogger(__name__)

# Folders hold a month of one type; past this many files a day level is added, because
# every commit rewrites the tree objects of the folders on its path.
FOLDER_FILE_LIMIT = 400


class Vault:
    """A vault opened by one process: its store, its index, and the operations on them."""

    def __init__(self, store: Store, index: Index, client: str = "cli") -> None:
        self.store = store
        self.index = index
        self.client = clean_client(client)
        self.root = store.root
        self.ledger = Ledger(store.root)
        # True while a background catch-up runs: searches then say they may miss changes.
        self.catching_up = False
        self.intake = Intake(store, index)
        self.writer = Writer(store, index)

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
        who = clean_client(client or self.client)
        if call.batch:
            return self.writer.create_batch(call.drafts, who)
        if call.mode == "create":
            return self.writer.create_batch(call.drafts, who, single=True)
        memory_id = ids.check_memory_id(call.memory_id)
        expected = ids.check_version_id(call.expected_version_id)
        with self.store.write_lock():
            doc, data, current = self.writer.current(memory_id, expected)
            if call.mode == "delete":
                return self.writer.delete(doc, who)
            return self.writer.update(doc, data, call.drafts[0], who, current)

    def apply_plan(
        self, plan: list[Planned], subject: str, *, client: str | None = None, dry_run: bool = False
    ) -> PlanResult:
        """Create, rewrite and delete several memory files as one commit (see Writer)."""
        return self.writer.apply_plan(plan, subject, client=client or self.client, dry_run=dry_run)

    def path_for(self, memory: Memory, taken: set[str] | frozenset[str] = frozenset()) -> str:
        """Where a new memory goes: <type>/<YYYY-MM>/<slug>.md, unique in the vault."""
        return self.writer.path_for(memory, taken)

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
            client=clean_client(client or self.client),
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
        record_id = self.ledger.record_feedback(search, helpful, unhelpful, clean_client(who))
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
        doc = self.index.require(ids.check_memory_id(memory_id))
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

    def blame(self, memory_id: str) -> list[dict[str, Any]]:
        """Each current fact of a memory with the commit, date and client that asserted it."""
        return review.blame(self.store, self.index.require(ids.check_memory_id(memory_id)).path)

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
        doc = self.index.require(ids.check_memory_id(memory_id))
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
        doc = self.index.require(ids.check_memory_id(memory_id))
        return [c.__dict__ for c in self.store.history(doc.path)]

    def restore(self, memory_id: str, version: str, client: str | None = None) -> dict[str, Any]:
        """Bring a memory back to an earlier version, as one new commit."""
        who = clean_client(client or self.client)
        doc = self.index.require(ids.check_memory_id(memory_id))
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
                return write_result("update", "unchanged", memory_id, doc.version_id, doc.path, [])
            memory = parse(old.decode("utf-8"), doc.path)
            subject = f"Restore {memory.memory_type}: {memory.title} to {match[0].sha[:10]}"
            message = commit_message(subject, [memory_id], who)
            sha = self.store.apply([Change(doc.path, old, memory.title)], message)
            self.writer.index_written([(memory, doc.path, old)], sha)
        return write_result("update", "updated", memory_id, sha, doc.path, [])

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
