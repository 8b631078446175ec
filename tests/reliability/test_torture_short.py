"""Concurrency: three servers, the CLI, a person editing and committing, all at once.

The short run of tests/harness/torture.py; its checks are the torture's own (no lost write, every
process sees the others' writes, no duplicate id, no error in any server log, the
watcher's leader handed over when killed, and the vault whole at the end).
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.harness import torture
from vault_tool.engine.vault import Vault
from vault_tool.watcher import Watcher


def test_three_servers_the_cli_and_a_person_at_once_lose_nothing(vault_path: Path):
    result = torture.run(vault_path, seconds=15, seed=3)

    assert result["problems"] == []
    counts = result["counts"]
    for activity in ("cross_reads", "cli_calls", "hand_edits", "user_commits", "final_reads"):
        assert counts.get(activity, 0) > 0, (activity, counts)
    assert counts["acknowledged_writes"] > 20, counts
    assert counts["leaders_killed"] == 1 and counts["reconnects"] >= 1, counts
    assert result["handover_seconds"] is not None and result["handover_seconds"] < 5


def test_watchdog_losing_its_race_with_stop_writes_no_error_to_the_log(
    vault_path: Path, caplog: pytest.LogCaptureFixture
):
    # The torture found this line in server.log on clean shutdowns: watchdog's reader
    # thread noticing a stop it raced with. It is noise, not an error.
    with Vault.open(vault_path) as vault:
        watcher = Watcher(vault).start()
        assert watcher.ready.wait(15)
        with caplog.at_level(logging.INFO):
            logging.getLogger("watchdog.observers.inotify").error(
                "InotifyEmitter.queue_events() called when the thread is inactive"
            )
            logging.getLogger("watchdog.observers.inotify").error("any other watchdog error")
        watcher.stop()
    messages = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert messages == ["any other watchdog error"]
