"""A person's `git clean` that runs after a create's commit read the new file and before
git's index has it: git takes the file for untracked and removes it. The write was
committed and is acknowledged, so the file is put back: the folder must hold what the
commit holds, and the watcher must find nothing to take in (no "Delete (hand edit)")."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers import create_args, git
from vault_tool.engine.vault import Vault
from vault_tool.storage.commits import Committer


def test_a_new_file_git_clean_removed_before_the_index_had_it_is_put_back(
    vault: Vault, vault_path: Path, monkeypatch: pytest.MonkeyPatch
):
    stage = Committer._stage

    def clean_first(self, *args, **kwargs):  # the person's git runs just before the index update
        subprocess.run(["git", "clean", "-fdq"], cwd=vault_path, check=True)
        return stage(self, *args, **kwargs)

    monkeypatch.setattr(Committer, "_stage", clean_first)
    made = vault.remember(create_args("Staging needs the VPN"))
    monkeypatch.undo()

    assert git(vault_path, "rev-parse", "HEAD") == made["version_id"]
    on_disk = vault_path / made["path"]
    assert on_disk.is_file()
    assert git(vault_path, "show", f"HEAD:{made['path']}") == on_disk.read_text().strip()
    assert git(vault_path, "status", "--porcelain", "--", made["path"]) == ""
    assert vault.uncommitted() == []
    assert vault.read(made["memory_id"])["version_id"] == made["version_id"]
