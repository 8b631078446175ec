"""A person's git that reads HEAD, then writes the index and moves HEAD later without holding
git's index lock all along (a merge, a checkout, a stash, a rebase): a commit landing in
between is lost by it or breaks it (seen in the torture: a merge whose index lacked an
agent's new file, then `git merge --abort` refused for good). A write waits such a git out
before it places a file and again under git's index lock, and refuses (vault_busy, naming
it) if it runs on; nothing is written meanwhile."""

from __future__ import annotations

import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from tests.helpers import create_args, eventually, git
from vault_tool.engine.vault import Vault
from vault_tool.errors import VaultBusy
from vault_tool.storage import index_lock
from vault_tool.storage.processes import CLEAN, HEAD_MOVERS, _runs, git_processes, subcommand

# Stands for a `git merge` between reading HEAD and moving it: records HEAD when it starts
# and again when told to end (a real merge cannot be held there on purpose; this process
# looks like one where it counts: named git, `merge` its command, working in the vault).
HELD_MERGE = """#!/bin/sh
"$GIT" rev-parse HEAD > "$OUT/start"
while [ ! -e "$OUT/release" ]; do sleep 0.01; done
"$GIT" rev-parse HEAD > "$OUT/end"
"""


def _held_merge(vault_path: Path, tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    stand_in = tmp_path / "bin" / "git"
    stand_in.parent.mkdir()
    stand_in.write_text(HELD_MERGE)
    stand_in.chmod(0o755)
    out = tmp_path / "out"
    out.mkdir()
    env = {"PATH": "/usr/bin:/bin", "GIT": shutil.which("git") or "git", "OUT": str(out)}
    merge = subprocess.Popen(
        [str(stand_in), "merge", "--no-edit", "topic"], cwd=vault_path, env=env
    )
    eventually(lambda: (out / "start").exists() and (out / "start").read_text())
    # (its forks count until they exec sleep: they are copies of it)
    eventually(lambda: git_processes(vault_path.resolve(), HEAD_MOVERS) == [merge.pid])
    return merge, out


def test_a_write_waits_until_a_git_moving_head_has_finished(
    vault: Vault, vault_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    asked = []
    moving_git = index_lock.moving_git
    monkeypatch.setattr(index_lock, "moving_git", lambda root: asked.append(1) or moving_git(root))
    merge, out = _held_merge(vault_path, tmp_path)
    made: dict = {}
    writer = threading.Thread(target=lambda: made.update(vault.remember(create_args("VPN"))))
    try:
        writer.start()
        # The merge ends once the write has either answered or asked three times whether a
        # git still moves HEAD: before the fix it answered without asking.
        eventually(lambda: made or len(asked) >= 3)
        (out / "release").touch()
        assert merge.wait(timeout=30) == 0
        writer.join(timeout=60)
    finally:
        merge.kill()
    assert (out / "start").read_text() == (out / "end").read_text()  # no commit while it ran
    assert git(vault_path, "rev-parse", "HEAD") == made["version_id"]
    assert git(vault_path, "status", "--porcelain") == ""


def test_a_write_refuses_while_a_git_moving_head_runs_on_and_writes_nothing(
    vault: Vault, vault_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(index_lock, "GIT_WAIT_SECONDS", 0.2)
    head = git(vault_path, "rev-parse", "HEAD")
    merge, out = _held_merge(vault_path, tmp_path)
    try:
        with pytest.raises(VaultBusy) as refused:
            vault.remember(create_args("Staging needs the VPN"))
    finally:
        (out / "release").touch()
        merge.wait(timeout=30)
    assert "merge --no-edit topic` has been running" in refused.value.message
    assert "retry once it has finished" in refused.value.hint
    assert git(vault_path, "rev-parse", "HEAD") == head
    assert git(vault_path, "status", "--porcelain") == ""


@pytest.mark.parametrize(
    ("argv", "command", "moves_head"),
    [
        (["git", "merge", "--no-edit", "topic"], "merge", True),
        (
            ["/usr/lib/git-core/git", "-C", "/v", "-c", "a=b", "--no-pager", "rebase"],
            "rebase",
            True,
        ),
        (["/bin/sh", "/tmp/bin/git", "checkout", "main"], "checkout", True),
        (["git", "checkout", "--", "notes/a.md"], "checkout", False),
        (["git", "reset", "--hard"], "reset", True),
        (["git", "reset", "--quiet", "--", "notes/a.md"], "reset", False),
        (["git", "stash"], "stash", True),
        (["git", "stash", "pop"], "stash", True),
        (["git", "stash", "list"], "stash", False),
        (["git", "status"], "status", False),
        (["git", "log", "--", "merge"], "log", False),
        (["git-upload-pack", "/v"], "upload-pack", False),
    ],
)
def test_which_command_lines_move_head(argv: list[str], command: str, moves_head: bool):
    line = [a.encode() for a in argv]
    assert subcommand(line)[0] == command.encode()
    assert _runs(HEAD_MOVERS, line) is moves_head
    assert _runs(CLEAN, line) is False
