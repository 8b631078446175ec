"""A person's `git stash` that runs between a write putting its file in place and its commit:
the commit must hold what the folder holds, never bytes a stash has just taken away."""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path

import pytest

from tests.helpers import create_args, git
from vault_tool.engine.vault import Vault
from vault_tool.errors import VersionConflict
from vault_tool.storage.commits import Committer


def test_a_stash_just_before_the_commit_makes_the_write_a_conflict_not_a_lie(
    vault: Vault, vault_path: Path, monkeypatch: pytest.MonkeyPatch
):
    made = vault.remember(create_args("Ana owns the billing service", body="First."))
    locked = Committer._index_locked

    @contextlib.contextmanager
    def stash_first(self, *args, **kwargs):  # the person's git runs just before our lock
        subprocess.run(["git", "stash", "-q"], cwd=vault_path, check=True)
        with locked(self, *args, **kwargs) as index:
            yield index

    monkeypatch.setattr(Committer, "_index_locked", stash_first)
    update = {
        **create_args("Ana owns the billing service", body="Second."),
        "mode": "update",
        "memory_id": made["memory_id"],
        "expected_version_id": made["version_id"],
    }
    with pytest.raises(VersionConflict):
        vault.remember(update)
    monkeypatch.undo()

    # Nothing acknowledged, nothing committed; the stash holds the update's bytes.
    assert git(vault_path, "rev-parse", "HEAD") == made["version_id"]
    on_disk = (vault_path / made["path"]).read_text()
    assert "First." in on_disk
    assert git(vault_path, "show", f"HEAD:{made['path']}") == on_disk.strip()
    assert "Second." in git(vault_path, "stash", "show", "-p")
