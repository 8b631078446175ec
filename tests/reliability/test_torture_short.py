"""Concurrency: three servers, the CLI, a person editing, committing and using git, at once.

The short run of tests/harness/torture.py, with each of the person's git actions once (a
merge resolved and one aborted, a rebase, a checkout of an old commit, a stash, `git clean
-xfd`, the leader frozen). Its checks are the torture's own: no lost write, no lost edit of
the person's, no conflict marker or secret in history, every process sees the others'
writes, no duplicate id, no error in any server log, the watcher's leader replaced when
killed or frozen, and the vault whole at the end.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.harness import torture
from vault_tool.engine.vault import Vault
from vault_tool.watcher import Watcher


# A bound on a hang, not a speed: on a quiet machine the run takes under a minute, but on a
# loaded one the person's git actions alone take minutes, each waited for within its own
# bound (GIT_PERSON_TIMEOUT), which the default 120 s would cut short.
@pytest.mark.timeout(900)
def test_three_servers_the_cli_and_a_person_with_git_at_once_lose_nothing(vault_path: Path):
    # However long each takes, the run lasts until the person's git has done every action
    # once; only states and counts are checked (a takeover is waited for, never timed).
    result = torture.run(vault_path, seconds=15, seed=3)

    if result["problems"]:
        pytest.fail(torture.failure_report(result), pytrace=False)
    counts = result["counts"]
    for activity in (
        "cross_reads",
        "cli_calls",
        "hand_edits",
        "user_commits",
        "final_reads",
        "git_merges_resolved",
        "git_merges_aborted",
        "git_rebases",
        "git_checkouts_old",
        "git_stashes",
        "git_cleans",
        "leader_stops",
        "leader_takeovers_from_stopped",
        "secrets_offered",
    ):
        assert counts.get(activity, 0) >= 1, (activity, counts)
    assert counts["acknowledged_writes"] > 20, counts
    assert counts["leaders_killed"] == 1 and counts["leader_takeovers_from_killed"] == 1, counts
    assert counts["reconnects"] >= 1, counts


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
