"""Vault: the one door. Every operation a surface or an operator verb needs is a method here.

Vault composes the store (folder + git), the index (Whoosh), the ledger, the writer and the
intake, and keeps them private: the MCP server, the CLI, the watcher and the verbs in ops/
call only these methods, so data flows one way: surfaces -> Vault -> (storage, search).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from vault_tool.core import calls, ids, projects, search_call
from vault_tool.engine import deletions, history, reads, restoring, review, status, syncing
from vault_tool.engine.file_indexing import Progress, SyncReport
from vault_tool.engine.intake import Intake
from vault_tool.engine.ledger import Ledger
from vault_tool.engine.lookups import Lookups
from vault_tool.engine.meaning import Meaning
from vault_tool.engine.recovery import Recovery
from vault_tool.engine.rules import Rules
from vault_tool.engine.upkeep import Upkeep
from vault_tool.engine.views import Views
from vault_tool.engine.work_state import WorkState
from vault_tool.engine.writer import Planned, PlanResult, Writer, clean_client
from vault_tool.errors import Cancelled
from vault_tool.search.documents import Indexed
from vault_tool.search.index import Index
from vault_tool.storage import adopt, processes
from vault_tool.storage.config import Config, Places
from vault_tool.storage.store import Store


class Vault(Lookups):
    """A vault opened by one process: remember, search, read, review, maintain."""

    def __init__(self, store: Store, index: Index, client: str = "cli") -> None:
        self._store = store
        self._index = index
        self._ledger = Ledger(store.root)
        self._intake = Intake(store, index)
        self._writer = Writer(store, index)
        self._recovery = Recovery(self._intake, index)  # rebuilds the index if it is damaged
        self.meaning = Meaning(store.config.semantic, index)  # the optional dense signal
        index.behind = lambda: (
            self.catching_up or self._intake.pending or self._recovery.refilling()
        )
        self.client = clean_client(client)
        self.root = store.root
        # The project a surface chose (`serve --project`); else the config's, else the cwd's.
        self.chosen_project: str | None = None
        # True while a background catch-up runs: searches then say they may miss changes.
        self.catching_up = False

    @classmethod
    def open(cls, path: Path | str, *, client: str = "cli", catch_up: bool = True) -> Vault:
        """Open a vault (repairing interrupted writes) and bring its index up to date."""
        store = Store.open(Path(path))
        try:
            vault = cls(store, Index(store.root).open(), client)
            if catch_up:
                vault.catch_up()
        except BaseException:
            store.close()  # or git's helper processes outlive the failed open
            raise
        return vault

    @classmethod
    def create(
        cls, path: Path | str, *, readme: str | None = None, nested: bool = False
    ) -> dict[str, Any]:
        """Make a folder a vault (a new one, or a folder of notes in place): what it found
        (storage/adopt.py: the notes, those held back from a first commit, those the
        folder's rules leave out) and whether it kept the folder's own git history."""
        root = Path(path).resolve()
        kept = (root / ".git").exists()
        found = adopt.existing_files(root) if root.is_dir() else adopt.Found()
        Store.init(root, readme=readme, found=found, nested=nested).close()
        return {**asdict(found), "kept_git_history": kept}

    def close(self) -> None:
        """Flush the ledger, release the index and every git helper process."""
        self._ledger.flush()
        self._recovery.stop()
        self._index.close()
        self._store.close()

    def __enter__(self) -> Vault:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def settings(self) -> Config:
        """The vault's settings (.vault/config.toml, with defaults)."""
        return self._store.config

    @property
    def projects(self) -> projects.Projects:
        """The vault's projects: its default and the folders mapped to projects."""
        return self.settings.projects(self.root)

    @property
    def project(self) -> str:
        """The project this process works in (new memories without one get it): the one
        chosen, else `[server] project`, else the folder it runs in (docs/projects.md)."""
        return self.projects.working(self.chosen_project or self.settings.server_project, self.root)

    @property
    def places(self) -> Places:
        """Where the index, the ledger and the run files (locks, leader) live."""
        return Places(self.root, self._store.run_dir, self._index.dir, self._ledger.dir)

    # --- the two tools -------------------------------------------------------------------

    def remember(self, args: Any, client: str | None = None) -> dict[str, Any]:
        """One remember call: create, update, delete, or a batch of creates."""
        call = calls.check_call(args)
        who = clean_client(client or self.client)
        if call.mode == "create":
            projects.place(call.drafts, self.projects, self.project)
        if call.batch:
            return self._writer.create_batch(call.drafts, who, self.projects)
        if call.mode == "create":
            return self._writer.create_batch(call.drafts, who, self.projects, single=True)
        assert call.memory_id and call.expected_version_id  # (check_call requires both)
        with self._store.write_lock():
            doc, data, current = self._writer.current(call.memory_id, call.expected_version_id)
            if call.mode == "delete":
                return self._writer.delete(doc, who, data)
            return self._writer.update(doc, data, call.drafts[0], who, current)

    def search(
        self,
        args: Any,
        client: str | None = None,
        *,
        explain: bool = False,
        cancelled: Callable[[], bool] | None = None,
    ) -> dict[str, Any]:
        """A search call: ranked by query, read by memory_id, or looked up by key (unlogged)."""
        call = search_call.check_search(args)
        if call.memory_id is not None:
            return self.read(call.memory_id)
        if call.key is not None:
            return reads.keyed(self._index, call.key, call.controls)
        assert call.query is not None
        judged, problems = self._ledger.judgements(), self.problems()
        result = reads.ranked(
            self._index,
            call.query,
            call.controls_in(self.projects),
            judged,
            explain=explain,
            problems=problems,
            dense=self.meaning.dense(),
        )
        if cancelled and cancelled():
            raise Cancelled("the search was cancelled", hint="nothing was recorded")
        if not result["selected_hits"]:
            result["reason"] = "empty_vault" if self.count() == 0 else "nothing_relevant"
        if self._index.behind():
            result["index_catching_up"] = True
        self._ledger.record_search(
            query=call.query,
            controls=call.as_sent,
            hits=result["selected_hits"],
            total_matches=result["total_matches"],
            client=clean_client(client or self.client),
        )
        return result

    def warm_search(self, busy: Callable[[], bool]) -> tuple[int, int]:
        """For a server while it is idle: score the vault's most common words ahead of the
        searches that will ask for them (kept until the next write), and analyse the
        notes' titles, stopping as soon as busy() (a call came in); how many words and
        titles."""
        return reads.warm(self._index, busy)

    # --- reading -------------------------------------------------------------------------

    def read(self, memory_id: str) -> dict[str, Any]:
        """An addressed read: the one memory, at the top level."""
        return reads.addressed(self._require(memory_id), self._index, self.problems(), self.root)

    def show(self, memory_id: str, version: str | None = None) -> dict[str, Any]:
        """A memory's file as written (now, or at a version) with its id, version and path;
        a deleted memory's last version (or the one asked for), with when it was deleted."""
        return history.show(self._store, self._subject(memory_id), version, self.read)

    def version(self, memory_id: str, version: str) -> history.Commit:
        """The version of a memory that a sha prefix names (one rule for show and restore)."""
        found = history.commits_of(self._store, self._subject(memory_id))
        return history.find_version(found, memory_id, version)

    def history(self, memory_id: str, *, patch: bool = False) -> list[dict[str, Any]]:
        """Every version of a memory (a deleted one too), newest first, across its moves;
        with patch, what each one changed."""
        return history.versions(self._store, self._subject(memory_id), patch=patch)

    def deleted(self) -> list[dict[str, Any]]:
        """Every deleted memory, last deleted first: id, title, when, by whom, last version."""
        return [found.to_dict() for found in deletions.listing(self._store, self._index.by_id)]

    def listing(self, filters: Any = None, *, limit: int = 20, offset: int = 0) -> dict[str, Any]:
        """Memories newest first (by updated), narrowed by search's filters (memory_types, tags,
        since, until, project): {memories: limit of them from offset, total: how many there are}."""
        return reads.listed(self._index, filters or {}, self.projects, limit=limit, offset=offset)

    def log(
        self,
        *,
        limit: int = 30,
        client: str | None = None,
        since: str | None = None,
        memory_type: str | None = None,
    ) -> list[dict[str, Any]]:
        """The vault's changelog, newest first, optionally narrowed."""
        found = self._store.log(limit=limit, client=client, since=since, memory_type=memory_type)
        return [history.record(c) for c in found]

    def blame(self, memory_id: str) -> list[dict[str, Any]]:
        """Each current fact of a memory with the commit, date and client that asserted it."""
        return history.blame(self._store, self._subject(memory_id))

    def review(
        self,
        range: str | None = None,
        *,
        since: str | None = None,
        until: str | None = None,
        client: str | None = None,
        memory: str | None = None,
    ) -> dict[str, Any]:
        """What a range of commits changed in meaning (engine/review.py): each memory it
        touched, created, updated, moved, deleted or restored, with its facts, entities, tags
        and fields before and after, its body as a word diff, and the flags a reviewer must
        see. Without a range or filter: the commits not yet pushed to the upstream."""
        selection = review.Selection(range, since, until, client, memory)
        return review.review(self._store, self._index, selection)

    def search_as_of(
        self, args: dict[str, Any], when: str, *, explain: bool = False, progress: Any = None
    ) -> dict[str, Any]:
        """A query over the vault as it was at a date or commit (not recorded in the ledger)."""
        return history.search_as_of(self._store, args, when, explain=explain, progress=progress)

    def ledger_records(self, kind: str | None = None) -> Iterator[dict[str, Any]]:
        """The retrieval ledger's records (searches, feedback), oldest first."""
        return self._ledger.records(kind)

    def feedback(
        self, handle: str, helpful: list[str], unhelpful: list[str], who: str = "operator"
    ) -> dict[str, Any]:
        """Record which results of a logged search helped; ranking learns from it."""
        return self._ledger.feedback(handle, helpful, unhelpful, clean_client(who))

    # --- several files in one commit -----------------------------------------------------

    def apply_plan(
        self,
        plan: list[Planned],
        subject: str,
        *,
        client: str | None = None,
        dry_run: bool = False,
        read: dict[str, bytes] | None = None,
        author_date: str | None = None,
    ) -> PlanResult:
        """Create, rewrite and delete several memory files as one commit (see Writer).

        read (path -> the bytes the plan was made from) refuses the plan if any of those
        files changed since, checked under the write lock. author_date dates the commit.
        """
        return self._writer.apply_plan(
            plan,
            subject,
            client=client or self.client,
            dry_run=dry_run,
            read=read,
            author_date=author_date,
        )

    def expire(self, *, dry_run: bool = False) -> PlanResult:
        """Delete every memory whose expires_at has passed, in one commit."""
        return status.expire(self._writer, self._index, client=self.client, dry_run=dry_run)

    def set_status(
        self,
        memory_id: str,
        to: str,
        *,
        dry_run: bool = False,
        reason: str | None = None,
        client: str | None = None,
    ) -> PlanResult:
        """Dismiss (hide from search, keep) or undismiss a memory: one commit, with the reason."""
        doc, who = self._require(memory_id), client or self.client
        return status.set_status(self._writer, doc, to, client=who, dry_run=dry_run, reason=reason)

    def restore(
        self, memory_id: str, version: str | None = None, client: str | None = None
    ) -> dict[str, Any]:
        """Bring a memory back to an earlier version (a deleted one: by default its last), as
        one new commit."""
        who = clean_client(client or self.client)
        return restoring.restore(self._writer, self._subject(memory_id), version, who)

    def revert(
        self,
        span: str | None = None,
        *,
        client: str | None = None,
        since: str | None = None,
        until: str | None = None,
        dry_run: bool = False,
    ) -> Any:
        """Put back every memory a range of commits (or a client's commits) changed, as one
        commit; a memory changed since is merged or kept and listed (engine/reverting.py)."""
        from vault_tool.engine import reverting

        plan = reverting.revert(
            self, self._store, span, client=client, since=since, until=until, dry_run=dry_run
        )
        if dry_run:
            plan.review = reverting.reviewed(plan, self._index)
        return plan

    # --- the folder: catch-up and hand edits ---------------------------------------------

    def catch_up(self, progress: Progress | None = None) -> SyncReport:
        """Index what changed in the folder since the index last saw it."""
        return self._intake.catch_up(progress)

    def reindex(self, progress: Progress | None = None) -> SyncReport:
        """Rebuild the index from the files (other processes' misses meanwhile are busy)."""
        with self._recovery.announced():
            return self._intake.reindex(progress)

    def sync_paths(self, paths: list[str], *, commit: bool | None = None) -> SyncReport:
        """Take in hand edits of these files (check, commit, index)."""
        return self._intake.sync_paths(paths, commit=commit)

    def settled(self, path: str) -> bool:
        """Whether a file is indexed and committed as it is (asked without the lock)."""
        return self._intake.settled(path)

    def commit_hand_edits(self) -> SyncReport:
        """Check, commit and index every memory file that differs from HEAD."""
        return self.sync_paths(self.uncommitted(), commit=True)

    def take_in_offline_changes(self, progress: Progress | None = None) -> SyncReport:
        """At start: commit hand edits made while nothing ran, then catch up."""
        return self._intake.take_in_offline_changes(progress)

    def problems(self) -> dict[str, dict[str, Any]]:
        """Files that did not parse when last read: path -> line, reason, hint."""
        return self._intake.problems()

    @property
    def team(self) -> syncing.Team:
        """Its remotes, and sync with them: a vault a team shares through a git remote."""
        return syncing.Team(self._store, self._intake)

    # --- state and upkeep ----------------------------------------------------------------

    def count(self) -> int:
        """How many memory files the index holds."""
        return self._index.count()

    def uncommitted(self) -> list[str]:
        """Memory files that differ from HEAD: modified, new or deleted, not yet committed."""
        return self._store.uncommitted_paths()

    def head(self) -> str:
        """The sha of the vault's HEAD commit."""
        return self._store.head_sha()

    def leader(self) -> dict[str, Any] | None:
        """The heartbeat record of the live process that watches this vault, if any."""
        return processes.live_leader(self._store.run_dir)

    @property
    def views(self) -> Views:
        """Views over the memories the extended tools give: a timeline, facts about a subject."""
        return Views(self._store, self._index, self.search, self.projects, self.rules)

    @property
    def rules(self) -> Rules:
        """The rules agents follow, each a memory of type rule: add, list, confirm."""
        return Rules(self._writer, self._index)

    @property
    def work_state(self) -> WorkState:
        """Named lists per project (state/<project>/<name>.yaml), replaced whole by a write."""
        return WorkState(self._store, self.project)

    @property
    def upkeep(self) -> Upkeep:
        """Housekeeping of the index and of git's objects (gc, the watcher when idle)."""
        return Upkeep(self._store, self._index)

    def _require(self, memory_id: str) -> Indexed:
        return deletions.require(self._index, self._store, ids.check_memory_id(memory_id))

    def _subject(self, memory_id: str) -> Indexed | deletions.Deleted:
        return deletions.live_or_deleted(self._index, self._store, ids.check_memory_id(memory_id))
