"""Sync with the git remote every so often, on the process that leads the watching only.

One process per vault leads (watcher.py); if every server synced, three servers on one
clone would fetch and push three times as often, and their merges would queue on the
write lock. Yet the setting is given to one process (`serve --sync-every`), and another
may lead (a second server, `vault-tool watch`): so every long-lived process runs one of
these, records its setting (vault.team: storage/sync_requests.py), and the one that leads syncs as
often as the most eager live process asked, its own setting included. When the leader
changes, the new one takes the requests over; when the process that asked stops, its
request goes with it.

The sync runs on a thread of its own, so a slow remote never holds up the watcher's
heartbeat or a tool call. Each sync logs its one line of status; a remote that stays
unreachable is logged when it goes and when it comes back, not every time.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from vault_tool.core.printable import escape
from vault_tool.errors import InvalidInput, VaultError

if TYPE_CHECKING:
    from vault_tool.engine.vault import Vault

log = logging.getLogger(__name__)

# How often the thread looks: whether its process leads, and what the others asked.
LOOK_SECONDS = 1.0


class BackgroundSync:
    """Runs vault.team.sync() while `leading` is set, as often as any live process asked."""

    def __init__(
        self,
        vault: Vault,
        leading: threading.Event,
        every: float,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """every: this process's own setting in seconds (0: it asks for none)."""
        self.vault = vault
        self.every = every
        self._leading = leading
        self._clock = clock
        self._since: float | None = None  # the last sync, or when this process began leading
        self._stop = threading.Event()
        self._offline = False
        self._thread = threading.Thread(target=self._run, name="vault-sync", daemon=True)

    def start(self) -> BackgroundSync:
        if self.every > 0:
            self.vault.team.ask_to_sync(self.every)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        if self.every > 0:
            self.vault.team.stop_asking_to_sync()

    def period(self) -> float:
        """How often the leader syncs now: the shortest period asked (0.0: nobody asked)."""
        asked = [s for s in (self.every, self.vault.team.asked_period()) if s > 0]
        return min(asked, default=0.0)

    def _run(self) -> None:
        look = min(LOOK_SECONDS, self.every) if self.every > 0 else LOOK_SECONDS
        while not self._stop.wait(look):
            try:
                self.tick()
            except Exception:  # (a look at the run folder failed: the next look tries again)
                log.exception("the background sync could not look at its schedule")

    def tick(self) -> None:
        """One look: a sync if this process leads and a period has passed since its last
        (or since it began leading), else nothing."""
        if self._stop.is_set():
            return
        if not self._leading.is_set():
            self._since = None
            if self.every > 0 and not self.vault.team.asking_to_sync():
                self.vault.team.ask_to_sync(self.every)  # (`git clean -xfd` removed it)
            return
        now = self._clock()
        if self._since is None:
            self._since = now
        period = self.period()
        if period and now - self._since >= period:
            self.sync_once()
            self._since = self._clock()

    def sync_once(self) -> None:
        """One sync, its outcome logged; a failure is logged and the next one tried."""
        try:
            outcome = self.vault.team.sync()
        except InvalidInput as problem:  # no remote: nothing will change that but a person
            log.warning("background sync stops: %s (%s)", problem, problem.hint)
            self._stop.set()
            return
        except VaultError as problem:
            log.warning("sync did not finish: %s (%s)", problem, problem.hint)
            return
        except Exception:
            log.exception("sync failed; trying again in %.0f s", self.period())
            return
        offline = outcome.status == "offline"
        if offline != self._offline or (not offline and outcome.status != "up to date"):
            level = logging.WARNING if offline else logging.INFO
            log.log(level, "sync: %s", escape(outcome.line()))
        self._offline = offline
