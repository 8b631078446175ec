"""watchdog events -> debounced sync -> engine, in exactly one process per vault.

Every process that opens a vault for long (a server, `vault-tool watch`) runs a Watcher.
The one that holds the OS lock on .vault/run/leader.lock leads: it watches the folder,
commits hand edits and keeps the index in step. The others retry the lock every second,
so when the leader dies (the kernel drops its lock) one of them takes over.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vault_tool.core.ids import is_memory_path
from vault_tool.engine.vault import Vault
from vault_tool.errors import VaultError
from vault_tool.storage.durable import replace_text
from vault_tool.storage.processes import HEARTBEAT_SECONDS

log = logging.getLogger(__name__)

LEADER_RETRY_SECONDS = 1.0
# A file that never goes quiet (a log someone appends to) is still taken in this often.
MAX_DELAY_SECONDS = 5.0
_TICK = 0.05


class _StopRace(logging.Filter):
    """Drop the ERROR watchdog logs when its reader thread loses a race with observer.stop().

    Nothing is wrong then (the observer is stopping, as asked), but an ERROR line in
    server.log on a clean shutdown sends people looking for a problem that is not there.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return "called when the thread is inactive" not in record.getMessage()


class Debouncer:
    """Paths that had events, each handed out once quiet for `quiet` seconds.

    An editor saves in bursts (write, rename, chmod); taking a file in after the burst reads
    it once, whole. Time comes from `clock`, so a test can step it.
    """

    def __init__(self, quiet: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.quiet = quiet
        self.clock = clock
        self._pending: dict[str, tuple[float, float]] = {}  # path -> (first, last) event time

    def __len__(self) -> int:
        return len(self._pending)

    def note(self, path: str) -> None:
        """An event for path: its quiet period starts again."""
        now = self.clock()
        first = self._pending.get(path, (now, now))[0]
        self._pending[path] = (first, now)

    def due(self) -> list[str]:
        """The paths quiet for long enough or pending too long, now no longer pending."""
        now = self.clock()
        due = [
            p
            for p, (first, last) in self._pending.items()
            if now - last >= self.quiet or now - first >= MAX_DELAY_SECONDS
        ]
        for path in due:
            del self._pending[path]
        return due

    def again(self, paths: list[str]) -> None:
        """Paths that could not be taken in: pending again, as if their event came now."""
        now = self.clock()
        for path in paths:
            self._pending.setdefault(path, (now, now))


class Watcher:
    """Leads watching the vault when it can; otherwise stands by to take over."""

    def __init__(self, vault: Vault, clock: Callable[[], float] = time.monotonic) -> None:
        self.vault = vault
        self.root = vault.root
        self.debounce = vault.settings.debounce_ms / 1000
        self.leading = threading.Event()
        self.ready = threading.Event()  # set once the leader has caught up with the folder
        self._stop = threading.Event()
        self._pending = Debouncer(self.debounce, clock)
        self._rescan = False
        self._mutex = threading.Lock()
        self._lock_fd: int | None = None
        self._observer: Any = None
        self._handler: Any = None
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
            if not self._try_lead():
                self._stop.wait(LEADER_RETRY_SECONDS)
                continue
            try:
                self._lead()
            except Exception:
                log.exception("the watcher failed; it stands down and retries")
                self._stop_observer()
                self._release()
                self._stop.wait(LEADER_RETRY_SECONDS)

    def _try_lead(self) -> bool:
        path = self.vault.places.run / "leader.lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._lock_fd = fd
        self.leading.set()
        return True

    def _release(self) -> None:
        self.leading.clear()
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                (self.vault.places.run / "leader.json").unlink()
            os.close(self._lock_fd)
            self._lock_fd = None

    def _lead(self) -> None:
        started = time.time()
        self._heartbeat(started)
        self._start_observer()
        # Changes made while no process watched: hand edits, `git pull`, branch switches.
        self._sync_everything()
        self.ready.set()
        last_beat = time.monotonic()
        while not self._stop.is_set():
            self._stop.wait(_TICK)
            if time.monotonic() - last_beat >= HEARTBEAT_SECONDS:
                self._heartbeat(started)
                last_beat = time.monotonic()
            self._flush()
            self._merge_index_when_idle()

    def _heartbeat(self, started: float) -> None:
        info = {
            "pid": os.getpid(),
            "client": self.vault.client,
            "since": started,
            "heartbeat": time.time(),
        }
        replace_text(self.vault.places.run / "leader.json", json.dumps(info))

    # --- events ----------------------------------------------------------------------------

    def _start_observer(self) -> None:
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer

        watcher = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: Any) -> None:
                watcher._on_event(event)

        inotify_log = logging.getLogger("watchdog.observers.inotify")
        if not any(isinstance(f, _StopRace) for f in inotify_log.filters):
            inotify_log.addFilter(_StopRace())
        self._observer = Observer()
        self._handler = Handler()
        # The top level alone, then each visible folder with all below it: never .git or
        # .vault, whose every write (objects, refs, index segments) would wake us for nothing.
        self._observer.schedule(self._handler, str(self.root), recursive=False)
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
                self._handler, str(self.root / name), recursive=True
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
                elif is_memory_path(rel):
                    self._pending.note(rel)

    def _top_level_folder_changed(self, event: Any, raw: Any, rel: str) -> None:
        """Keep one recursive watch per top-level folder as folders come, go and move."""
        if raw == event.src_path and event.event_type in ("deleted", "moved"):
            self._unwatch_folder(rel)
        elif event.event_type in ("created", "moved"):
            self._watch_folder(rel)
            # What was written into it before its watch began had no event: look once.
            with self._mutex:
                self._rescan = True

    def _flush(self) -> None:
        with self._mutex:
            rescan, self._rescan = self._rescan, False
            due = self._pending.due()
        try:
            due = [path for path in due if not self.vault.settled(path)]
            if due:
                self.vault.sync_paths(due)
            if rescan:
                self._sync_everything()
        except VaultError as problem:
            log.warning("could not take in changes (%s); retrying", problem)
            with self._mutex:
                self._pending.again(due)

    def _merge_index_when_idle(self) -> None:
        """Merge index segments while nothing is pending: writers then never pay for it."""
        if self._pending:
            return
        with contextlib.suppress(VaultError):  # a writer is busy: merge on a later tick
            self.vault.merge_index_when_idle()

    def _sync_everything(self) -> None:
        self.vault.catching_up = True
        try:
            self.vault.take_in_offline_changes()
        finally:
            self.vault.catching_up = False
