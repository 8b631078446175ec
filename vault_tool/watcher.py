"""watchdog events -> debounced sync -> engine, in exactly one process per vault.

Every process that opens a vault for long (a server, `vault-tool watch`) runs a Watcher.
The one that holds the lease (storage/lease.py) leads: it watches the folder, commits hand
edits and keeps the index in step, renewing the lease's heartbeat as it goes. The others
try to claim it every second, so when the leader dies or freezes (SIGSTOP, a hung read:
its heartbeat goes stale) one of them takes over, and a leader that finds its lease taken
stands down before committing anything more.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vault_tool.core.debounce import Debouncer
from vault_tool.core.ids import may_hold_memory
from vault_tool.core.printable import escape
from vault_tool.engine.file_indexing import SyncReport
from vault_tool.engine.vault import Vault
from vault_tool.errors import VaultError
from vault_tool.storage.folder import files_under
from vault_tool.storage.lease import Lease
from vault_tool.storage.left_out import RULE_FILES
from vault_tool.storage.processes import HEARTBEAT_SECONDS

log = logging.getLogger(__name__)

# What the watcher tells: one event per commit, refused file, problem and kept-out secret,
# and when taking in waits for git (a merge, a rebase) and when it goes on again.
Narrate = Callable[[dict[str, Any]], None]
WARNINGS = ("refused", "problem", "secret", "waiting")
LEADER_RETRY_SECONDS = 1.0
_TICK = 0.05
# How often a leader asks whether the index wants a merge or a flush (each asking reads its
# table of contents: at every tick, 1.3% of a core while idle); search/recent.py's pause.
UPKEEP_SECONDS = 0.25


class _StopRace(logging.Filter):
    """Drop the ERROR watchdog logs when its reader thread loses a race with observer.stop().

    Nothing is wrong then (the observer is stopping, as asked), but an ERROR line in
    server.log on a clean shutdown sends people looking for a problem that is not there.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return "called when the thread is inactive" not in record.getMessage()


class LeaseLost(Exception):
    """The lease was taken by another process while this one led (it had frozen)."""


class Watcher:
    """Leads watching the vault when it can; otherwise stands by to take over."""

    def __init__(
        self,
        vault: Vault,
        clock: Callable[[], float] = time.monotonic,
        *,
        narrate: Narrate | None = None,
    ) -> None:
        """narrate: called with each event (see narration); without it, events are logged."""
        self.vault = vault
        self._narrate = narrate
        self.root = vault.root
        self.debounce = vault.settings.debounce_ms / 1000
        self.leading = threading.Event()
        self.ready = threading.Event()  # set once the leader has caught up with the folder
        self._stop = threading.Event()
        self._pending = Debouncer(self.debounce, clock)
        self._rescan = False
        # New top-level folders, not looked in yet; the memory files found in them, pending.
        self._look_in: set[str] = set()
        self._found_in_new: set[str] = set()
        self._clock = clock
        # After a failed take-in (git busy, a lock held): when to retry, and what was logged.
        self._retry_at = 0.0
        self._waiting_for: str | None = None
        self._mutex = threading.Lock()
        self._lease = Lease(vault.places.run, vault.client)
        self._last_beat = 0.0
        self._observer: Any = None
        self._handler: Any = None
        self._events: list[type] = []  # the kinds of event watched (_start_observer)
        self._folders: dict[str, Any] = {}  # top-level folder -> its recursive watch
        self._thread: threading.Thread | None = None

    def start(self) -> Watcher:
        """Start standing by (and leading as soon as the leader lock is free)."""
        self._thread = threading.Thread(target=self._run, name="vault-watcher", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 2.0) -> None:
        """Stop watching, finish nothing half-way, release leadership."""
        self._stop.set()
        if self._thread:
            self._thread.join(timeout)
        self._stop_observer()
        self._release()

    # --- leadership ------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if self._lease.claim():
                    self.leading.set()
                    self._lead()
            except LeaseLost:
                log.warning("another process took over watching this vault; standing by")
            except Exception:
                log.exception("the watcher failed; it stands down and retries")
            if self.leading.is_set():
                self._stop_observer()
                self._release()
            self._stop.wait(LEADER_RETRY_SECONDS)

    def _release(self) -> None:
        self.leading.clear()
        self.ready.clear()
        self._lease.release()

    def _lead(self) -> None:
        self._last_beat = time.monotonic()
        self._start_observer()
        # Changes made while no process watched: hand edits, `git pull`, branch switches
        # (while git is busy with a merge or a rebase, retried like any event until it is over).
        self._rescan = True
        self._flush()
        self.ready.set()
        upkeep_at = self._clock()
        while not self._stop.is_set():
            self._stop.wait(_TICK)
            self._beat()
            self._flush()
            if self._clock() >= upkeep_at:
                self._merge_index_when_idle()
                upkeep_at = self._clock() + UPKEEP_SECONDS

    def _beat(self, *progress: int) -> None:
        """Renew the lease once a heartbeat is due (also called as work progresses, so a
        long catch-up does not look like a frozen leader); LeaseLost if it was taken."""
        if time.monotonic() - self._last_beat < HEARTBEAT_SECONDS:
            return
        if not self._lease.renew():
            raise LeaseLost
        self._last_beat = time.monotonic()

    # --- events ----------------------------------------------------------------------------

    def _start_observer(self) -> None:
        from watchdog import events
        from watchdog.observers import Observer

        watcher = self

        class Handler(events.FileSystemEventHandler):
            def on_any_event(self, event: Any) -> None:
                watcher._on_event(event)

        inotify_log = logging.getLogger("watchdog.observers.inotify")
        if not any(isinstance(f, _StopRace) for f in inotify_log.filters):
            inotify_log.addFilter(_StopRace())
        self._observer = Observer()
        self._handler = Handler()
        # Only the events that can change a file (the kernel is not even asked for the
        # others): every read of a note, by anyone (git status, a catch-up, an editor),
        # would otherwise wake the observer twice, and each write of ours in a folder
        # once more for the folder itself.
        self._events = [
            events.FileCreatedEvent, events.FileModifiedEvent, events.FileClosedEvent,
            events.FileMovedEvent, events.FileDeletedEvent,
            events.DirCreatedEvent, events.DirMovedEvent, events.DirDeletedEvent,
        ]  # fmt: skip
        # The top level alone, then each visible folder with all below it: never .git or
        # .vault, whose every write (objects, refs, index segments) would wake us for nothing.
        self._observer.schedule(
            self._handler, str(self.root), recursive=False, event_filter=self._events
        )
        self._observer.start()
        # Listed once the top level is watched: a folder made meanwhile has an event too.
        for entry in os.scandir(self.root):
            if entry.is_dir(follow_symlinks=False):
                self._watch_folder(entry.name)

    def _watch_folder(self, name: str) -> None:
        """Watch a top-level folder and everything below it (hidden ones are not memories).

        Called from the observer's thread and from ours; watchdog keeps one watch per path,
        so the two finding the same new folder at once schedule it once.
        """
        if name.startswith("."):
            return
        with contextlib.suppress(OSError):  # gone again already: its deletion says so
            self._folders[name] = self._observer.schedule(
                self._handler, str(self.root / name), recursive=True, event_filter=self._events
            )

    def _unwatch_folder(self, name: str) -> None:
        watch = self._folders.pop(name, None)
        if watch is not None:
            with contextlib.suppress(KeyError, OSError):
                self._observer.unschedule(watch)

    def _stop_observer(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            with contextlib.suppress(RuntimeError):
                self._observer.join(2.0)
            self._observer = None
            self._folders.clear()

    def _on_event(self, event: Any) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        for raw in (event.src_path, getattr(event, "dest_path", "")):
            if not raw:
                continue
            path = os.fsdecode(raw)
            try:
                rel = Path(path).relative_to(self.root).as_posix()
            except ValueError:
                continue
            if rel.startswith((".git/", ".vault/")) or rel in (".git", ".vault"):
                continue
            if event.is_directory and "/" not in rel:
                self._top_level_folder_changed(event, raw, rel)
            with self._mutex:
                if event.is_directory:
                    # A folder moved or deleted as a whole: its files get no events of their
                    # own. (A created folder needs nothing: the observer reports its files.)
                    if event.event_type in ("moved", "deleted"):
                        self._rescan = True
                elif may_hold_memory(rel):
                    self._pending.note(rel)
                elif rel in RULE_FILES or rel == ".gitignore":
                    # What is left out changed: the whole vault is looked over (a catch-up
                    # drops what is left out now, and takes in what no longer is).
                    self._rescan = True

    def _top_level_folder_changed(self, event: Any, raw: Any, rel: str) -> None:
        """Keep one recursive watch per top-level folder as folders come, go and move."""
        if raw == event.src_path and event.event_type in ("deleted", "moved"):
            self._unwatch_folder(rel)
        elif event.event_type in ("created", "moved"):
            self._watch_folder(rel)
            # What was written into it before its watch began had no event: look once,
            # there only. (The whole vault, walked at the first write into a new type's
            # folder, held up the writes that came next.)
            with self._mutex:
                self._look_in.add(rel)

    def _flush(self) -> None:
        if self._clock() < self._retry_at:
            return
        with self._mutex:
            rescan, self._rescan = self._rescan, False
            look_in, self._look_in = self._look_in, set()
        found = [] if rescan else self._memory_files_in(look_in)  # (a rescan looks everywhere)
        with self._mutex:
            for path in found:  # due once quiet, as an event's file (a write may be midway)
                self._pending.note(path)
            self._found_in_new.update(found)
            due = self._pending.due()
            came_new = self._found_in_new.intersection(due)
            self._found_in_new -= came_new
        if (due or rescan) and not self._lease.held():
            # Frozen while another took over: it took in these changes when it started.
            raise LeaseLost
        try:
            due = [path for path in due if not self.vault.settled(path)]
            if came_new.intersection(due):
                # A person's file in a new folder may have been moved there from a folder
                # whose event said only "deleted": the whole vault is looked over, so the
                # two halves of the move meet. (The tool's own new folders need none.)
                due, rescan = [], True
            if due:
                self._took_in(self.vault.sync_paths(due))
            if rescan:
                self._took_in(self._sync_everything())
        except VaultError as problem:
            # Said once, not at every retry: a merge can last minutes.
            if str(problem) != self._waiting_for:
                self._tell({"event": "waiting", "reason": str(problem)})
                self._waiting_for = str(problem)
            self._retry_at = self._clock() + self.debounce
            with self._mutex:
                self._pending.again(due)
                self._found_in_new |= came_new
                self._rescan = self._rescan or rescan
            return
        if self._waiting_for is not None and (due or rescan):
            self._tell({"event": "resumed"})
            self._waiting_for = None

    def _memory_files_in(self, folders: set[str]) -> list[str]:
        """The memory files in these top-level folders, as a rescan would list them."""
        return [
            rel
            for folder in sorted(folders)
            for rel, _ in files_under(self.root, folder)
            if may_hold_memory(rel)
        ]

    def _took_in(self, report: SyncReport) -> None:
        """Tell what a take-in did, and look again at what was still being written."""
        for done in report.commits:
            self._tell(
                {
                    "event": "commit",
                    "version_id": done.sha,
                    "subject": done.subject,
                    "memory_id": done.memory_id,
                    "paths": done.paths,
                }
            )
        for path, problem in report.problems.items():
            self._tell({"event": report.kept.get(path, "problem"), "path": path, **problem})
        # A file still being written is looked at again once quiet: its last save's event
        # may have come before this look, and no other may follow.
        with self._mutex:
            for path in report.changing:
                self._pending.note(path)

    def _tell(self, event: dict[str, Any]) -> None:
        if self._narrate is not None:
            try:
                self._narrate(event)
            except OSError as gone:  # a closed terminal or pipe must not stop the watching
                log.warning("could not tell of %s: %s", event["event"], gone)
        else:
            level = logging.WARNING if event["event"] in WARNINGS else logging.INFO
            log.log(level, "%s", narration(event))

    def _merge_index_when_idle(self) -> None:
        """Merge index segments while nothing is pending: writers then never pay for it."""
        if self._pending:
            return
        with contextlib.suppress(VaultError):  # a writer is busy: merge on a later tick
            self.vault.upkeep.merge_when_idle()

    def _sync_everything(self) -> SyncReport:
        # Searches meanwhile say the index is catching up only while the intake has found
        # changes it has not indexed yet, never for the scan alone.
        return self.vault.take_in_offline_changes(self._beat)


def narration(event: dict[str, Any]) -> str:
    """One event as a line for a person (a terminal, the server log), names escaped."""
    kind = event["event"]
    if kind == "commit":
        return f"committed {event['version_id'][:10]} {escape(event['subject'])}"
    if kind == "waiting":
        return f"waiting: could not take in changes ({escape(event['reason'])}); retrying"
    if kind == "resumed":
        return "taking in changes again"
    where = escape(event["path"]) + (f":{event['line']}" if event.get("line") else "")
    said = {"refused": "refused", "problem": "not taken in", "secret": "kept out"}[kind]
    return f"{said} {where}: {escape(event['reason'])} ({escape(event['hint'])})"
