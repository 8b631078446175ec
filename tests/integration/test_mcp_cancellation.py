"""A search cancelled while it runs records nothing: the SDK's in-process client, a real vault.

The search is held mid-flight on the index's own lock (the lock the watcher contends for),
so the cancel provably arrives while the worker thread is running; no timing guesses.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import anyio
import pytest

from tests.helpers import create_args, eventually
from vault_tool.server.app import build_server
from vault_tool.server.runtime import Runtime

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    """The SDK runs on asyncio."""
    return "asyncio"


def _wait_until(condition) -> object:  # type: ignore[no-untyped-def]
    """eventually(), off the event loop: the in-process server runs on it meanwhile."""
    return anyio.to_thread.run_sync(partial(eventually, condition))


async def test_a_search_cancelled_while_running_stops_before_the_ledger(
    vault_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp import Client

    runtime = Runtime(vault_path, "test")
    runtime.open()
    flags = []  # each call's "was I cancelled?" question, as the server asks it
    call = runtime.call

    def noting_the_flag(*args, **options):  # type: ignore[no-untyped-def]
        flags.append(options["cancelled"])
        return call(*args, **options)

    monkeypatch.setattr(runtime, "call", noting_the_flag)
    try:
        runtime.vault.remember(create_args(), "pytest")
        server = build_server(runtime)
        async with Client(server, mode="legacy") as client:
            guard = runtime.vault._index._guard
            guard.acquire()
            try:
                async with anyio.create_task_group() as group:
                    group.start_soon(client.call_tool, "search", {"query": "cancelled billing"})
                    await _wait_until(lambda: runtime._running == 1)
                    group.cancel_scope.cancel()  # the client sends notifications/cancelled
                await _wait_until(flags[0])  # the cancel has reached the server's handler
            finally:
                guard.release()
            await _wait_until(lambda: runtime._running == 0)
            after = await client.call_tool("search", {"query": "billing afterwards"})
            assert not after.is_error
    finally:
        runtime.shutdown()

    ledger = [
        json.loads(line)
        for path in (vault_path / ".vault" / "ledger").glob("*.jsonl")
        for line in path.read_text().splitlines()
    ]
    assert [r["query"] for r in ledger if r["type"] == "search"] == ["billing afterwards"]
    audit_lines = (vault_path / ".vault/run/audit.jsonl").read_text().splitlines()
    audit = [json.loads(line) for line in audit_lines]
    assert [(a["result"], a["error"]) for a in audit if a["tool"] == "search"] == [
        ("error", "cancelled"),
        ("ok", None),
    ]
