"""The background sync runs on the leader only, as often as any live process asked (the
leader's own setting or another's), stops for good without a remote, and logs an
unreachable remote when it goes and when it comes back, not every period."""

from __future__ import annotations

import json
import logging
import subprocess
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from vault_tool.engine.syncing import SyncOutcome
from vault_tool.errors import InvalidInput
from vault_tool.server.background_sync import BackgroundSync
from vault_tool.storage import sync_requests


class Team:
    """What BackgroundSync asks of vault.team: sync(), answering from a script, and the
    requests of the processes, in a real run folder (engine/syncing.py's, over its store)."""

    def __init__(self, *answers: object, run_dir: Path = Path("/nonexistent")) -> None:
        self.answers = list(answers)
        self.calls = 0
        self.run_dir = run_dir

    def ask_to_sync(self, seconds: float) -> None:
        sync_requests.ask(self.run_dir, seconds)

    def asking_to_sync(self) -> bool:
        return sync_requests.asking(self.run_dir)

    def stop_asking_to_sync(self) -> None:
        sync_requests.withdraw(self.run_dir)

    def asked_period(self) -> float:
        return sync_requests.shortest(self.run_dir)

    def sync(self) -> SyncOutcome:
        self.calls += 1
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _syncer(team: Team, leading: bool = True, every: float = 60) -> tuple[BackgroundSync, Clock]:
    """A background sync over a scripted team, on an injected clock, its first look made
    (when it leads, the moment its period counts from)."""
    flag = threading.Event()
    if leading:
        flag.set()
    clock = Clock()
    vault = SimpleNamespace(team=team)
    syncer = BackgroundSync(vault, flag, every=every, clock=clock)
    syncer.tick()
    return syncer, clock


def _ticks(syncer: BackgroundSync, clock: Clock, times: int, step: float = 60) -> None:
    for _ in range(times):
        clock.now += step
        syncer.tick()


def _outcome(status: str) -> SyncOutcome:
    return SyncOutcome("origin", "main", status, reason="down" if status == "offline" else None)


def test_a_process_that_does_not_lead_never_syncs(tmp_path: Path):
    team = Team(run_dir=tmp_path)
    syncer, clock = _syncer(team, leading=False)
    _ticks(syncer, clock, 3)
    assert team.calls == 0


def test_the_leader_syncs_once_a_period_has_passed(tmp_path: Path):
    team = Team(*(_outcome("synced") for _ in range(2)), run_dir=tmp_path)
    syncer, clock = _syncer(team, every=60)
    _ticks(syncer, clock, 4, step=30)
    assert team.calls == 2


def test_the_leader_syncs_as_often_as_another_process_asked(tmp_path: Path):
    team = Team(*(_outcome("up to date") for _ in range(3)), run_dir=tmp_path)
    # Another process (a server given --sync-every 10s) stands by: it records its request.
    asking, _ = _syncer(Team(run_dir=tmp_path), leading=False, every=10)
    asking.start()
    try:
        leader, clock = _syncer(team, every=0)  # (`vault-tool watch`)
        assert leader.period() == 10
        _ticks(leader, clock, 3, step=10)
        assert team.calls == 3
    finally:
        asking.stop()
    assert leader.period() == 0  # its process stopped: nobody asks any more
    _ticks(leader, clock, 3, step=10)
    assert team.calls == 3


def test_a_request_a_killed_process_left_is_not_counted(tmp_path: Path):
    gone = subprocess.Popen(["true"])
    gone.wait()
    folder = tmp_path / sync_requests.FOLDER
    folder.mkdir()
    (folder / str(gone.pid)).write_text(json.dumps({"pid": gone.pid, "every": 5, "started": 1}))
    leader, _ = _syncer(Team(run_dir=tmp_path), every=0)
    assert leader.period() == 0
    assert list(folder.iterdir()) == []


def test_without_a_remote_it_stops_for_good(caplog: pytest.LogCaptureFixture):
    team = Team(InvalidInput("the vault has no remote to sync with", hint="add one"))
    syncer, clock = _syncer(team)
    _ticks(syncer, clock, 2)
    assert team.calls == 1
    assert "background sync stops" in caplog.text


def test_an_unreachable_remote_is_logged_when_it_goes_and_when_it_comes_back(
    caplog: pytest.LogCaptureFixture,
):
    caplog.set_level(logging.INFO, logger="vault_tool.server.background_sync")
    team = Team(*(_outcome(s) for s in ("offline", "offline", "offline", "synced", "up to date")))
    syncer, clock = _syncer(team)
    _ticks(syncer, clock, 5)
    said = [r.getMessage() for r in caplog.records]
    assert team.calls == 5
    assert sum("offline" in line for line in said) == 1
    assert sum("synced" in line for line in said) == 1
    assert not any("up to date" in line for line in said)
