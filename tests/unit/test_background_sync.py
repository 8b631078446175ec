"""The background sync runs on the leader only, stops for good without a remote, and logs
an unreachable remote when it goes and when it comes back, not every period."""

from __future__ import annotations

import logging
import threading
from types import SimpleNamespace

import pytest

from vault_tool.engine.syncing import SyncOutcome
from vault_tool.errors import InvalidInput
from vault_tool.server.background_sync import BackgroundSync


class Team:
    """What BackgroundSync asks of vault.team: sync(), answering from a script."""

    def __init__(self, *answers: object) -> None:
        self.answers = list(answers)
        self.calls = 0

    def sync(self) -> SyncOutcome:
        self.calls += 1
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def _syncer(team: Team, leading: bool = True) -> BackgroundSync:
    flag = threading.Event()
    if leading:
        flag.set()
    return BackgroundSync(SimpleNamespace(team=team), flag, every=60)


def _outcome(status: str) -> SyncOutcome:
    return SyncOutcome("origin", "main", status, reason="down" if status == "offline" else None)


def test_a_process_that_does_not_lead_never_syncs():
    team = Team()
    _syncer(team, leading=False).tick()
    assert team.calls == 0


def test_without_a_remote_it_stops_for_good(caplog: pytest.LogCaptureFixture):
    team = Team(InvalidInput("the vault has no remote to sync with", hint="add one"))
    syncer = _syncer(team)
    syncer.tick()
    syncer.tick()
    assert team.calls == 1
    assert "background sync stops" in caplog.text


def test_an_unreachable_remote_is_logged_when_it_goes_and_when_it_comes_back(
    caplog: pytest.LogCaptureFixture,
):
    caplog.set_level(logging.INFO, logger="vault_tool.server.background_sync")
    team = Team(*(_outcome(s) for s in ("offline", "offline", "offline", "synced", "up to date")))
    syncer = _syncer(team)
    for _ in range(5):
        syncer.tick()
    said = [r.getMessage() for r in caplog.records]
    assert team.calls == 5
    assert sum("offline" in line for line in said) == 1
    assert sum("synced" in line for line in said) == 1
    assert not any("up to date" in line for line in said)
