"""Sync with the git remote every so often, on the process that leads the watching only.

One process per vault leads (watcher.py); if every server synced, three servers on one
clone would fetch and push three times as often, and their merges would queue on the
write lock. The sync runs on a thread of its own, so a slow remote never holds up the
watcher's heartbeat or a tool call. Each sync logs its one line of status; a remote that
stays unreachable is logged when it goes and when it comes back, not every time.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from vault_tool.core.printable import escape
from vault_tool.errors import InvalidInput, VaultError

log = logging.getLogger(__name__)


class BackgroundSync:
    """Runs vault.team.sync() every `every` seconds while `leading` is set."""

    def __init__(self, vault: Any, leading: threading.Event, every: float) -> None:
        self.vault = vault
        self.every = every
        self._leading = leading
        self._stop = threading.Event()
        self._offline = False
        self._thread = threading.Thread(target=self._run, name="vault-sync", daemon=True)

    def start(self) -> BackgroundSync:
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.tick()

    def tick(self) -> None:
        """One period: a sync if this process leads the watching, else nothing."""
        if self._leading.is_set() and not self._stop.is_set():
            self.sync_once()

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
            log.exception("sync failed; trying again in %.0f s", self.every)
            return
        offline = outcome.status == "offline"
        if offline != self._offline or (not offline and outcome.status != "up to date"):
            level = logging.WARNING if offline else logging.INFO
            log.log(level, "sync: %s", escape(outcome.line()))
        self._offline = offline
