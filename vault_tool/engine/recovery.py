"""Rebuilding a damaged index from the files, in the background, while calls go on.

The index says when it finds itself unreadable (Index.on_damage); from then until the
rebuild is done, searches answer from what can be read and say `index_catching_up`, a
read by an id not read yet says `vault_busy` (Index.require), and writes go to the files
and git as always (the rebuild indexes them). A removed .vault/index is the same case: the
rebuild makes the folder again.

Every process that has the vault open finds the same damage. Each rebuild empties the
index under the vault's write lock only if it is still damaged, so the first one rebuilds
and the others only catch up with what it made. The write lock is held for the emptying
alone: writes go on during the catch-up.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator

from vault_tool.engine.intake import Intake
from vault_tool.errors import Cancelled
from vault_tool.search.index import Index
from vault_tool.storage.processes import alive

log = logging.getLogger(__name__)

# Lies in .vault/run while a process refills the index from empty (its pid).
REBUILD_MARKER = "index-rebuilding"
# A rebuild that keeps finding damage (a failing disk) stops after this many passes; the
# next damage found starts it again, and `vault-tool doctor` names the problem meanwhile.
REBUILD_PASSES = 3


class Recovery:
    """One rebuild at a time of one vault's index, started by the damage it finds."""

    def __init__(self, intake: Intake, index: Index) -> None:
        self._intake = intake
        self._index = index
        self._mutex = threading.Lock()
        self._wanted = False  # damage seen since the running pass began
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        index.on_damage = self.start

    @property
    def running(self) -> bool:
        """Whether a rebuild is wanted or under way (searches then say they may miss some)."""
        with self._mutex:
            return self._wanted or self._thread is not None

    def start(self) -> None:
        """Have the index rebuilt (again, if a pass is under way: it may have read damage)."""
        with self._mutex:
            self._wanted = True
            if self._thread is not None or self._stopping.is_set():
                return
            self._thread = threading.Thread(
                target=self._rebuild, name="vault-index-rebuild", daemon=True
            )
            self._thread.start()

    @contextlib.contextmanager
    def announced(self) -> Iterator[None]:
        """While the index is refilled from empty: other processes' lookups that miss then
        answer "being rebuilt" (elsewhere()), not "no memory has id"."""
        marker = self._intake.store.run_dir / REBUILD_MARKER
        with contextlib.suppress(OSError):
            marker.parent.mkdir(parents=True, exist_ok=True)  # `git clean -xfd` removes it
            marker.write_text(str(os.getpid()))
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                marker.unlink()

    def refilling(self) -> bool:
        """Whether the index may lack files it will hold: a rebuild here or elsewhere, or an
        index made empty (by any process) that no catch-up has filled yet."""
        return self.running or self.elsewhere() or not self._intake.filled()

    def elsewhere(self) -> bool:
        """Whether a live process (this one included) is refilling the index from empty."""
        try:
            pid = int((self._intake.store.run_dir / REBUILD_MARKER).read_text())
        except (OSError, ValueError):
            return False
        return alive(pid)

    def stop(self) -> None:
        """Stop a running rebuild after the file it is at (before the vault closes under
        it); the next open catches up with the rest."""
        with self._mutex:
            thread = self._thread
            self._stopping.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _progress(self, done: int, total: int) -> None:
        if self._stopping.is_set():
            raise Cancelled("the vault is closing", hint="the next open catches up")

    def _rebuild(self) -> None:
        passes = 0
        while True:
            with self._mutex:
                if not self._wanted or passes == REBUILD_PASSES:
                    if self._wanted:
                        log.error("the search index is still damaged after %d rebuilds", passes)
                    self._wanted = False
                    self._thread = None
                    return
                self._wanted = False
            passes += 1
            try:
                with self._intake.store.write_lock():
                    emptied = self._index.start_over_if_damaged()
                with self.announced() if emptied else contextlib.nullcontext():
                    report = self._intake.catch_up(self._progress)
            except Cancelled:
                with self._mutex:
                    self._wanted = False
                continue
            except Exception:
                log.exception("rebuilding the search index failed")
                with self._mutex:
                    self._wanted = not self._stopping.is_set()
                continue
            done = "rebuilt" if emptied else "caught up with"
            log.warning("%s the search index: %d memories read", done, len(report.indexed))
