"""A vault opened through a symlink compares its root with what the system reports."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

from tests.helpers import create_args, eventually, git
from vault_tool.engine.vault import Vault
from vault_tool.storage import processes


def test_a_live_git_commit_is_not_taken_for_stale_through_a_symlinked_vault(
    vault_path: Path, tmp_path: Path
):
    link = tmp_path / "link-to-vault"
    link.symlink_to(vault_path)
    gate = tmp_path / "editor-gate"
    os.mkfifo(gate)
    editor = tmp_path / "editor.sh"
    editor.write_text(f'#!/bin/sh\ncat "{gate}" > /dev/null\n')  # waits until released
    editor.chmod(0o755)
    config = vault_path / ".vault" / "config.toml"
    config.write_text(config.read_text() + "\n# a person's edit\n")
    person = subprocess.Popen(
        ["git", "commit", "-a", "-e", "-m", "A person's commit"],
        cwd=link,  # the person works in the folder by its symlinked name, as the tool does
        env={**os.environ, "GIT_EDITOR": str(editor)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    lock = vault_path / ".git" / "index.lock"
    try:
        eventually(lock.exists, what="git commit holding .git/index.lock in its editor")
        with Vault.open(link) as vault:  # opening must not take the live lock over
            assert lock.exists()
            assert person.pid in processes.git_processes(vault.root)
            assert vault.root == vault_path.resolve()
            written: list[dict] = []
            writer = threading.Thread(target=lambda: written.append(vault.remember(create_args())))
            writer.start()  # waits for the person's commit, as for any git of theirs
            with gate.open("w"):
                pass  # the editor returns: git finishes its commit
            assert person.wait(30) == 0, person.stderr.read() if person.stderr else ""
            writer.join(30)
            assert written and written[0]["status"] == "created"
    finally:
        if person.poll() is None:
            with gate.open("w"):
                pass
            person.wait(10)
    assert git(vault_path, "log", "-2", "--format=%s").splitlines()[1] == "A person's commit"
    assert git(vault_path, "status", "--porcelain") == ""
