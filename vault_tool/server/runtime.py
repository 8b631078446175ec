"""The vault one server process serves: opened once, watched, called from worker threads, closed.

Also where the process's logs go: `.vault/run/server.log` (rotating, bounded) for the
server, `.vault/run/audit.jsonl` (rotating) for one line per tool call, both shared with the
vault's other servers (shared_log.py). stderr stays quiet.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vault_tool.core import calls, stages
from vault_tool.core.access import Access
from vault_tool.errors import VaultBusy, VaultError, VaultUnavailable
from vault_tool.server import tools
from vault_tool.server.shared_log import RedactingFormatter, SharedRotatingFileHandler

if TYPE_CHECKING:
    from vault_tool.engine.vault import Vault

log = logging.getLogger(__name__)

LOG_BYTES = 1_000_000
LOG_BACKUPS = 2
AUDIT_BYTES = 5_000_000
AUDIT_BACKUPS = 3
# Shutdown shares a 2-second budget: the watcher first, then calls still running.
WATCHER_STOP_SECONDS = 0.8
DRAIN_SECONDS = 0.8


def run_dir(root: Path) -> Path:
    """Where the server's logs live (created by Store.init; made again if someone removed it)."""
    path = root / ".vault" / "run"
    path.mkdir(parents=True, exist_ok=True)
    return path


def configure_logging(root: Path) -> None:
    """Send every log record of this process to server.log, and nothing to stderr."""
    handler = SharedRotatingFileHandler(run_dir(root) / "server.log", LOG_BYTES, LOG_BACKUPS)
    handler.setFormatter(
        RedactingFormatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")
    )
    top = logging.getLogger()
    for old in list(top.handlers):
        top.removeHandler(old)
    top.addHandler(handler)
    top.setLevel(logging.INFO)
    # The SDK and uvicorn narrate every session at INFO; keep their warnings and errors.
    for noisy in ("mcp", "uvicorn", "httpx", "httpx2"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    logging.captureWarnings(True)


class AuditLog:
    """One JSON line per tool call or refused HTTP request: never the arguments."""

    def __init__(self, root: Path) -> None:
        self._logger = logging.getLogger(f"vault_tool.audit.{id(self)}")
        self._logger.propagate = False
        self._logger.setLevel(logging.INFO)
        self._handler = SharedRotatingFileHandler(
            run_dir(root) / "audit.jsonl", AUDIT_BYTES, AUDIT_BACKUPS
        )
        self._logger.addHandler(self._handler)

    def record(self, **fields: Any) -> None:
        """Append one record, stamped with the time."""
        stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        self._logger.info(json.dumps({"time": stamp, **fields}, ensure_ascii=False))

    def close(self) -> None:
        """Flush and close the file."""
        self._logger.removeHandler(self._handler)
        self._handler.close()


class _NoAudit:
    """The audit of a server with no vault: nowhere to write, nothing to keep."""

    def record(self, **fields: Any) -> None:
        pass

    def close(self) -> None:
        pass


class Runtime:
    """The opened vault, its watcher, and the bookkeeping that lets shutdown wait for calls."""

    def __init__(
        self,
        root: Path,
        transport: str,
        sync_every: float | None = None,
        profile: str = "core",
        project: str | None = None,
        unavailable: VaultError | None = None,
    ) -> None:
        self.root = root
        self.transport = transport
        self.profile = profile  # which tools it offers (tools.tool_specs)
        self.project = project  # the one it works in, if chosen (`serve --project`)
        self.vault: Vault = None
        self.watcher: Any = None
        self.syncer: Any = None
        self.embedder: Any = None  # (engine/meaning.py: only with [search] semantic on)
        self._sync_every = sync_every  # (None: the vault's setting)
        # No vault to serve (`serve --vault` a missing folder): every call answers this
        # error, and nothing is written at the path (no log, no audit).
        self._unavailable = unavailable
        self.audit: AuditLog | _NoAudit = AuditLog(root) if unavailable is None else _NoAudit()
        self._open_error: VaultError | None = unavailable
        self._running = 0
        self._idle = threading.Condition()
        self._opening = threading.Lock()
        self._starting = threading.Lock()
        self._stopped = False
        # Held while the idle warm reads the vault: shutdown closes it only after.
        self._warming = threading.Lock()

    def open(self, *, again: bool = False, watch: bool = True) -> None:
        """Open the vault without catching up (the watcher does that in the background).

        watch=False leaves starting the watcher to `watch()`, so that a first search need
        not share the processor with a catch-up that is most often a scan finding nothing.
        """
        from vault_tool.engine.vault import Vault

        if self._unavailable is not None:
            return
        started = time.perf_counter()
        try:
            self.vault = Vault.open(self.root, client="mcp", catch_up=False)
            self.vault.chosen_project = self.project
        except VaultBusy as problem:
            # The vault is busy (its lock held, the index locked): the next call tries again.
            self._open_error = problem
            if not again:
                log.warning("cannot open the vault yet; will retry: %s", problem)
            return
        except VaultError as problem:
            # Keep serving: every call then says what is wrong with the vault and how to fix it.
            self._open_error = problem
            log.error("could not open the vault: %s", problem)
            return
        except Exception as problem:
            log.exception("could not open the vault")
            self._open_error = VaultUnavailable(
                f"the vault could not be opened ({type(problem).__name__}: {problem})",
                hint="run `vault-tool doctor`; details are in .vault/run/server.log",
            )
            return
        if watch:
            self.watch()
        log.info(
            "serving %s over %s (opened in %.0f ms)",
            self.root,
            self.transport,
            (time.perf_counter() - started) * 1000,
        )

    def watch(self) -> None:
        """Start the watcher, if the vault is open and the server not stopped.

        It catches the index up in the background; searches meanwhile answer from the index
        as it is, and say so only while that catch-up has found changes not indexed yet.
        """
        from vault_tool.watcher import Watcher

        with self._starting:
            if self.vault is not None and self.watcher is None and not self._stopped:
                self.watcher = Watcher(self.vault).start()
                every = self._sync_every
                every = self.vault.settings.sync_every_seconds if every is None else every
                # Run whatever this server's setting: leading, it syncs as often as any
                # live process asked (background_sync.py), a `vault-tool watch` included.
                from vault_tool.server.background_sync import BackgroundSync

                self.syncer = BackgroundSync(self.vault, self.watcher.leading, every).start()
                self.embedder = self.vault.meaning.worker(self.watcher.leading.is_set)

    def warm(self) -> None:
        """Once the server is idle after it starts: compile what a remember call's checks
        need, then score the vault's most common words for the searches to come, giving
        way to any call that comes in."""
        calls.warm()
        with self._warming:  # (a shutdown meanwhile stops it at its next word)
            if self.vault is None or self._stopped:
                return
            try:
                words, titles = self.vault.warm_search(lambda: self._running > 0 or self._stopped)
            except VaultError as problem:  # (a damaged index is being rebuilt: nothing to warm)
                log.info("search not warmed: %s", problem)
                return
            except Exception:
                if self._stopped:  # (a word that outlasted the shutdown's wait: closed under it)
                    return
                raise
        log.info("search warmed: %d common words scored, %d titles analysed", words, titles)

    def index_filled(self) -> bool:
        """Whether a catch-up has filled the index since it was made: until one has, every
        search and read says it is behind, so the watcher is wanted at once."""
        from vault_tool.engine.intake import HEAD_RECORD

        return self.vault is not None and (self.vault.places.index / HEAD_RECORD).exists()

    def _open_again(self) -> None:
        """Open the vault now if it was busy when the server started (another writer held
        its lock past the timeout, the index was locked): it may be free by now, and the
        server must not refuse every call for the rest of its life. Refused again while it
        is still busy."""
        with self._opening:
            if self.vault is None:
                self.open(again=True)

    def call(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        client: str,
        access: Access | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> tools.Outcome:
        """Run one tool call on this thread (a worker thread) and audit it (with the
        project it reached, never its arguments)."""
        access = access or Access()
        started = time.perf_counter()
        with self._idle:
            self._running += 1
        try:
            with stages.timing() as spent:
                if self.vault is None and isinstance(self._open_error, VaultBusy):
                    self._open_again()
                if self.vault is None:
                    problem = self._open_error or VaultUnavailable(
                        "the vault is closed", hint="restart the server"
                    )
                    outcome = tools.refusal(problem)
                else:
                    outcome = self._run(name, arguments, client, access, cancelled)
        finally:
            with self._idle:
                self._running -= 1
                self._idle.notify_all()
        project = arguments.get("project") if isinstance(arguments, dict) else None
        if project is None and access.projects:
            project = access.projects[0]
        self.record_call(
            name,
            outcome,
            client=client,
            token=access.label,
            started=started,
            spent=spent,
            project=project if isinstance(project, str) else None,
        )
        return outcome

    def _run(
        self,
        name: str,
        arguments: Any,
        client: str,
        access: Access,
        cancelled: Callable[[], bool] | None,
    ) -> tools.Outcome:
        try:
            arguments = access.limited(name, arguments, self.vault)
        except VaultError as problem:
            return tools.refusal(problem)
        vault = self.vault
        return tools.run_tool(
            vault,
            name,
            arguments,
            client=client,
            cancelled=cancelled,
            profile=self.profile,
            shown=lambda result: access.shown(result, vault),
        )

    def record_call(
        self,
        name: str,
        outcome: tools.Outcome,
        *,
        client: str,
        token: str | None,
        started: float,
        spent: dict[str, float] | None = None,
        project: str | None = None,
    ) -> None:
        """One audit line for a finished call, with where its time went (core/stages.py)."""
        extra = {"stages_ms": stages.as_milliseconds(spent)} if spent else {}
        if project:
            extra["project"] = project
        self.audit.record(
            transport=self.transport,
            tool=name,
            result="error" if outcome.is_error else "ok",
            error=outcome.error_code,
            client=client,
            token=token,
            ms=round((time.perf_counter() - started) * 1000, 1),
            **extra,
        )

    def shutdown(self) -> None:
        """Stop the watcher, let running calls finish (briefly), close the vault and git helpers."""
        with self._starting:
            self._stopped = True
        if self.syncer is not None:
            self.syncer.stop()
        if self.embedder is not None:
            self.embedder.stop()
        if self.watcher is not None:
            self.watcher.stop(timeout=WATCHER_STOP_SECONDS)
            self.watcher = None
        with self._idle:
            self._idle.wait_for(lambda: self._running == 0, timeout=DRAIN_SECONDS)
        # A warm reading the vault stops at its next word; closing the vault under it made
        # its thread raise (a traceback in the server's stderr as it stopped).
        warm_stopped = self._warming.acquire(timeout=DRAIN_SECONDS)
        if self.vault is not None:
            self.vault.close()
            self.vault = None
        self.audit.close()
        if warm_stopped:
            self._warming.release()
        log.info("server stopped")
