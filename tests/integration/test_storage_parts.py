"""The storage layer's parts on their own: finding a vault, the wait for a lock, who holds
what in the vault, and the one commit path through `git commit` on real repositories."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import create_args, eventually, git
from vault_tool.engine.vault import Vault
from vault_tool.errors import VaultBusy, VaultUnavailable
from vault_tool.storage import processes
from vault_tool.storage.config import find_vault
from vault_tool.storage.git import Backoff
from vault_tool.storage.store import Store

# --- finding the vault ---------------------------------------------------------------------


def test_find_vault_returns_the_absolute_root_of_a_vault(vault_path: Path, monkeypatch):
    monkeypatch.chdir(vault_path.parent)
    assert find_vault(vault_path.name) == vault_path


@pytest.mark.parametrize("missing", [".git", ".vault"])
def test_a_folder_without_git_or_vault_state_is_no_vault_and_the_error_says_how(
    tmp_path: Path, missing: str
):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".vault").mkdir()
    (tmp_path / missing).rmdir()
    with pytest.raises(VaultUnavailable) as raised:
        find_vault(tmp_path)
    assert raised.value.message == f"no vault at {tmp_path}"
    assert "vault-tool init" in raised.value.hint and "$VAULT_TOOL_VAULT" in raised.value.hint


# --- waiting for a lock --------------------------------------------------------------------


def test_backoff_looks_at_the_holder_once_per_stale_period_and_expires_at_its_deadline():
    wait = Backoff(timeout=0.3, stale_after=0.1)
    assert not wait.holder_due() and not wait.expired
    time.sleep(0.12)
    assert wait.holder_due()
    assert not wait.holder_due()  # the next look waits another stale period
    while not wait.expired:
        wait.pause()
    assert wait.expired


def test_backoff_with_no_stale_period_looks_at_the_holder_every_time():
    wait = Backoff(timeout=1, stale_after=0)
    assert wait.holder_due() and wait.holder_due()


# --- who holds what ------------------------------------------------------------------------


def test_a_git_working_in_the_vault_is_found_and_one_elsewhere_is_not(
    vault_path: Path, tmp_path: Path
):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # `git hash-object --stdin` waits for its input: a git that stays alive while we look.
    waiting = ["git", "hash-object", "--stdin"]
    here = subprocess.Popen(waiting, cwd=vault_path, stdin=subprocess.PIPE)
    there = subprocess.Popen(waiting, cwd=elsewhere, stdin=subprocess.PIPE)
    try:
        # Until exec, a child is still a copy of this Python process.
        eventually(
            lambda: all(processes.command_of(p.pid).startswith("git ") for p in (here, there))
        )
        found = processes.git_processes(vault_path)
    finally:
        for proc in (here, there):
            proc.communicate(b"")
    assert here.pid in found and there.pid not in found
    assert processes.git_processes(vault_path) == []


def test_an_flock_and_its_holder_are_seen_without_taking_the_lock(tmp_path: Path):
    path = tmp_path / "write.lock"
    assert not processes.flock_held(path)  # no file: nobody ever locked it
    path.touch()
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert processes.flock_held(path)
        assert processes.flock_holder(path) == os.getpid()
    finally:
        os.close(fd)
    assert not processes.flock_held(path)
    assert processes.flock_holder(path) is None


def _leader(run_dir: Path, **record: object) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "leader.json").write_text(json.dumps(record))


def test_only_a_live_leader_with_a_fresh_heartbeat_leads(tmp_path: Path):
    run = tmp_path / "run"
    assert processes.live_leader(run) is None
    _leader(run, pid=os.getpid(), heartbeat=time.time())
    assert processes.live_leader(run)["pid"] == os.getpid()
    _leader(run, pid=os.getpid(), heartbeat=time.time() - 10 * processes.HEARTBEAT_SECONDS)
    assert processes.live_leader(run) is None
    assert processes.leader_record(run)["pid"] == os.getpid()  # the record stays readable
    _leader(run, pid=2**22 + 1, heartbeat=time.time())
    assert processes.live_leader(run) is None
    _leader(run, pid="not a pid", heartbeat=time.time())
    assert processes.leader_record(run) is None and processes.live_leader(run) is None


def test_a_process_is_alive_until_it_has_exited(tmp_path: Path):
    child = subprocess.Popen(["sleep", "30"])
    try:
        assert processes.alive(child.pid)
        # Between fork and exec the child's command line is still empty.
        eventually(lambda: processes.command_of(child.pid) == "sleep 30")
    finally:
        child.kill()
        child.wait()
    assert not processes.alive(child.pid)
    assert processes.command_of(child.pid) == "unknown command"


# --- the commit through `git commit` -------------------------------------------------------


def _with_commit_hook(vault_path: Path) -> Path:
    marker = vault_path.parent / "hook.ran"
    hook = vault_path / ".git" / "hooks" / "post-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f'#!/bin/sh\necho ran >> "{marker}"\n')
    hook.chmod(0o755)
    return marker


def test_with_a_hook_a_snapshot_is_committed_through_git_commit_from_a_scratch_tree(
    vault_path: Path,
):
    marker = _with_commit_hook(vault_path)
    note = vault_path / "notes" / "n.md"
    note.parent.mkdir()
    checked = b"# A checked note\n\nAll there.\n"
    note.write_bytes(b"# A checked note\n\nStill typ")  # saved again after the check
    store = Store.open(vault_path)
    try:
        sha = store.commit_paths(["notes/n.md"], "Hand edit: A checked note",
                                 snapshot={"notes/n.md": checked})  # fmt: skip
    finally:
        store.close()
    assert marker.read_text() == "ran\n"
    assert sha == git(vault_path, "rev-parse", "HEAD")
    assert git(vault_path, "show", "HEAD:notes/n.md") == checked.decode().strip()
    assert git(vault_path, "status", "--porcelain") == "M notes/n.md"
    assert not list((vault_path / ".vault" / "run").glob("snapshot-*"))


def test_with_a_hook_a_new_file_is_committed_alone_and_unchanged_files_make_no_commit(
    vault_path: Path,
):
    _with_commit_hook(vault_path)
    (vault_path / "mine.txt").write_text("staged work\n")
    git(vault_path, "add", "mine.txt")
    (vault_path / "n.md").write_text("# New\n")
    store = Store.open(vault_path)
    try:
        sha = store.commit_paths(["n.md"], "Hand edit: New")
        again = store.commit_paths(["n.md"], "Hand edit: New")
    finally:
        store.close()
    assert sha == git(vault_path, "rev-parse", "HEAD") and again is None
    assert git(vault_path, "show", "--format=", "--name-only", "HEAD") == "n.md"
    assert git(vault_path, "diff", "--cached", "--name-only") == "mine.txt"


HOLD_INDEX_LOCK = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""


def test_an_index_lock_a_live_vault_process_holds_is_never_taken_for_stale(vault_path: Path):
    # A vault process holds .git/index.lock between its git commands, when no git runs:
    # only its flock tells it from a lock a killed process left.
    config = vault_path / ".vault" / "config.toml"
    config.write_text(
        config.read_text().replace("lock_timeout_seconds = 30", "lock_timeout_seconds = 3")
    )
    lock = vault_path / ".git" / "index.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_INDEX_LOCK, str(lock)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(VaultBusy), Vault.open(vault_path) as vault:  # (open waits too)
            vault.remember(create_args("Staging needs the VPN"))
        assert lock.read_bytes() == b""  # untouched: not taken over
    finally:
        holder.kill()
        holder.wait()
