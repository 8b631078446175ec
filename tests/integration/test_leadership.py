"""Leading the watching is a lease: a frozen leader is replaced and stands down on waking."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.helpers import eventually, git
from vault_tool.engine.vault import Vault
from vault_tool.storage.lease import STALE_SECONDS, Lease
from vault_tool.storage.processes import HEARTBEAT_SECONDS, leader_record
from vault_tool.watcher import Watcher

NOTE = "---\nmemory_type: note\ntitle: {title}\n---\n# {title}\n\n{body}\n"

# A leader in another process that says each time it starts or stops leading.
LEADER = """
import sys, time
from vault_tool.engine.vault import Vault
from vault_tool.watcher import Watcher
watcher = Watcher(Vault.open(sys.argv[1])).start()
leading = None
while True:
    if watcher.leading.is_set() != leading and (watcher.ready.is_set() or leading):
        leading = watcher.leading.is_set()
        print("leading" if leading else "standing down", flush=True)
    time.sleep(0.02)
"""


class Clock:
    """Wall-clock seconds that a test steps."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def hand_edits(path: Path, title: str) -> int:
    log = git(path, "log", "--format=%s").splitlines()
    return log.count(f"Hand edit: {title}")


def test_a_lease_passes_only_when_its_heartbeat_is_stale(tmp_path: Path):
    assert STALE_SECONDS == 3 * HEARTBEAT_SECONDS
    clock = Clock()
    first, second = Lease(tmp_path, "first", clock), Lease(tmp_path, "second", clock)
    assert first.claim() and first.held()
    assert not second.claim()
    clock.now += STALE_SECONDS - 0.1
    assert not second.claim()  # late, but not yet stale
    assert first.renew()
    clock.now += STALE_SECONDS - 0.1
    assert not second.claim()  # the renewal counted
    clock.now += 0.2
    assert second.claim() and second.held()  # stale: taken over, with a new token
    assert not first.held() and not first.renew()  # the old holder finds out and stands down
    first.release()  # releasing a lost lease leaves the new holder's record alone
    assert leader_record(tmp_path)["client"] == "second"
    second.release()
    assert leader_record(tmp_path) is None
    assert first.claim()  # free again: anyone may take it at once


def test_a_frozen_leader_is_replaced_and_stands_down_when_it_wakes(vault: Vault, vault_path):
    leader = subprocess.Popen(
        [sys.executable, "-c", LEADER, str(vault_path)],
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    assert leader.stdout
    assert leader.stdout.readline().strip() == "leading"
    standby = Watcher(vault).start()
    try:
        assert not standby.leading.wait(2 * HEARTBEAT_SECONDS)  # a beating leader keeps it
        leader.send_signal(signal.SIGSTOP)  # frozen: alive, holding whatever it held
        note = vault_path / "notes" / "frozen.md"
        note.parent.mkdir()
        note.write_text(NOTE.format(title="Written while frozen", body="Kept out no more."))
        eventually(standby.leading.is_set, timeout=10 * STALE_SECONDS)
        eventually(lambda: hand_edits(vault_path, "Written while frozen") == 1)
        assert leader_record(vault.places.run)["pid"] == os.getpid()
        leader.send_signal(signal.SIGCONT)
        # One leader again: the woken one stands down, unless the freeze caught it inside
        # the lease's flock (microseconds a beat), when its late write takes the lease back
        # and the standby stands down instead (lease.py).
        said: list[str] = []
        woken_leads = eventually(lambda: _one_leader(vault, standby, leader, said)) == "woken"
        note.write_text(NOTE.format(title="Written while frozen", body="Edited after."))
        eventually(lambda: hand_edits(vault_path, "Written while frozen") == 2)
        assert standby.leading.is_set() is not woken_leads
        assert leader_record(vault.places.run)["pid"] == (
            leader.pid if woken_leads else os.getpid()
        )
        # (HEAD moves before git's index has the edit: the commit ends when it does.)
        eventually(lambda: git(vault_path, "status", "--porcelain") == "", what="a clean status")
        assert hand_edits(vault_path, "Written while frozen") == 2  # each edit exactly once
    finally:
        standby.stop()
        leader.send_signal(signal.SIGCONT)
        leader.kill()
        leader.wait(5)


def _one_leader(vault: Vault, standby: Watcher, woken: Any, said: list[str]) -> str | None:
    """ "woken" when the woken leader leads and the standby stood down, "standby" when the
    woken one said it stands down and the standby leads (the record agreeing), else None."""
    if select.select([woken.stdout], [], [], 0)[0]:
        said.append(woken.stdout.readline().strip())
    record = leader_record(vault.places.run)
    if record is None:
        return None
    if record["pid"] == woken.pid and not standby.leading.is_set():
        return "woken"
    if said[-1:] == ["standing down"] and record["pid"] == os.getpid():
        return "standby" if standby.leading.is_set() else None
    return None
