"""`serve --sync-every` while another process leads the vault's watching: the leader syncs
as often as any live process asked, and stops when the one that asked is gone."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_support import invoke
from tests.clones import fact, memory_args, team
from tests.e2e.mcp_client import (  # noqa: F401 (anyio_backend is a fixture)
    anyio_backend,
    stdio_session,
)
from tests.helpers import eventually, eventually_async, git
from vault_tool.engine.vault import Vault

pytestmark = pytest.mark.anyio


def _leader(vault: Path) -> int | None:
    with contextlib.suppress(OSError, ValueError, KeyError):
        return json.loads((vault / ".vault" / "run" / "leader.json").read_text())["pid"]
    return None


async def test_a_servers_sync_every_is_kept_while_another_process_leads(tmp_path: Path):
    _, (a_path, b_path) = team(tmp_path)
    watch = subprocess.Popen(
        [sys.executable, "-m", "vault_tool", "watch", "--vault", str(b_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        eventually(lambda: _leader(b_path) == watch.pid, timeout=30, what="the watch to lead")
        async with stdio_session(b_path, options=("--sync-every", "1s")) as (b, _):
            with Vault.open(a_path) as a:
                made = a.remember(
                    memory_args("Alpha report", "# Alpha report\n\na\n", [fact("a", "b", "c")], [])
                )
                assert a.team.sync().status == "synced"

            async def arrived() -> bool:
                read = await b.call_tool("search", {"memory_id": made["memory_id"]})
                return not read.is_error

            await eventually_async(arrived, timeout=60, interval=0.2, what="the background sync")
            assert _leader(b_path) == watch.pid  # the watch synced, as the server asked
            said = invoke("doctor", "--vault", b_path, "--json").stdout
            assert f"pid {watch.pid} (" in said and "syncs with the remote every 1 s" in said
        assert git(b_path, "rev-parse", "HEAD") == git(a_path, "rev-parse", "HEAD")
    finally:
        watch.terminate()
        watch.wait(30)
