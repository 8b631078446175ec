"""A server stopping while its idle warm reads the vault stops quietly: shutdown closes the
vault only once the warm has stopped (at its next word), and a warm that outlasts
shutdown's wait ends without an error. Closing the vault under the warm made its thread
raise, printing a traceback in the server's stderr as it stopped.

A real vault and index; the engine's warm is wrapped to hold it at the moment in question."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import create_args, eventually
from vault_tool.engine import reads
from vault_tool.engine.vault import Vault
from vault_tool.server.runtime import Runtime


@pytest.fixture
def runtime(vault_path: Path) -> Runtime:
    with Vault.open(vault_path) as vault:
        vault.remember(create_args("Ana owns the billing service"))
    opened = Runtime(vault_path, "stdio")
    opened.open(watch=False)
    return opened


def stop_while_warming(runtime: Runtime, monkeypatch: Any, held: Any) -> None:
    """Warm in a thread, the engine's warm replaced by held(the real warm, index, busy);
    stop the server once the warm is in it; the thread must end without raising."""
    real_warm, entered, raised = reads.warm, threading.Event(), []

    def warm_held(index: Any, busy: Any) -> tuple[int, int]:
        entered.set()
        return held(real_warm, index, busy)

    def warm() -> None:
        try:
            runtime.warm()
        except BaseException as problem:  # (what the thread would print as it died)
            raised.append(problem)

    monkeypatch.setattr(reads, "warm", warm_held)
    thread = threading.Thread(target=warm)
    thread.start()
    assert entered.wait(10)
    runtime.shutdown()
    thread.join(10)
    assert not raised and not thread.is_alive()
    assert runtime.vault is None


def test_shutdown_closes_the_vault_only_once_the_warm_has_stopped(runtime, monkeypatch):
    seen = {}

    def held_until_shutdown_begins(real_warm: Any, index: Any, busy: Any) -> tuple[int, int]:
        eventually(lambda: runtime._stopped, what="the shutdown to begin")
        seen["busy"] = busy()
        found = real_warm(index, busy)
        seen["open after"] = runtime.vault is not None
        return found

    stop_while_warming(runtime, monkeypatch, held_until_shutdown_begins)
    assert seen == {"busy": True, "open after": True}  # (told to stop, and not closed under)


def test_a_warm_that_outlasts_the_shutdowns_wait_ends_without_an_error(runtime, monkeypatch):
    def held_until_the_vault_is_closed(real_warm: Any, index: Any, busy: Any) -> tuple[int, int]:
        eventually(lambda: runtime.vault is None, what="the vault to be closed")
        return real_warm(index, lambda: False)  # (reads the closed index: raises)

    stop_while_warming(runtime, monkeypatch, held_until_the_vault_is_closed)
