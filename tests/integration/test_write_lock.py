"""The vault's write lock when its folder, machine state, is removed (`git clean -xfd`)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.helpers import create_args
from vault_tool.engine.vault import Vault
from vault_tool.storage.locks import WriteLock

HOLD = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""


def test_a_write_after_the_run_folder_was_removed_makes_it_again(vault: Vault, vault_path: Path):
    vault.remember(create_args("Wombats dig burrows"))
    shutil.rmtree(vault_path / ".vault" / "run")

    made = vault.remember(create_args("Staging needs the VPN"))

    assert made["status"] == "created"
    assert (vault_path / ".git" / "vault-tool" / "write.lock").exists()


def test_the_lock_is_exclusive_across_processes_and_reentrant_within_one(tmp_path: Path):
    path = tmp_path / "write.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        lock = WriteLock(path)
        assert lock.acquire(timeout=0) is False
        holder.stdin.close()  # type: ignore[union-attr]
        holder.wait(10)
        assert lock.acquire(timeout=10) is True
        assert lock.acquire(timeout=0) is True  # the same holder again
        other = WriteLock(path)  # (its own open file: as another process's)
        assert other.acquire(timeout=0) is False
        lock.release()
        assert other.acquire(timeout=0) is False  # still held once
        lock.release()
        assert other.acquire(timeout=0) is True
    finally:
        holder.kill()


def test_a_held_lock_stays_exclusive_when_git_clean_removes_the_run_folder(vault_path: Path):
    # `git clean -xfd` while a write holds the lock: a second writer must still wait. (A
    # lock file that can be removed while held lets the next writer lock a new file.)
    import pytest

    from vault_tool.errors import VaultBusy

    with Vault.open(vault_path) as first, Vault.open(vault_path) as second:
        with first._store.write_lock():
            subprocess.run(["git", "clean", "-xfdq"], cwd=vault_path, check=True)
            with pytest.raises(VaultBusy), second._store.write_lock(timeout=0.2):
                pass
        with second._store.write_lock(timeout=5):
            pass
