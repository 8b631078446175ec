"""A vault's default project is a committed setting every clone shares: `init` writes it
(the vault folder's name at the time), clones in folders of other names read it, and a
process working in any other folder writes no project of its own into new memories.
A vault made before the setting keeps its folder's name and doctor says to set it.
Real git, bare remote, real index."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clones import fact, memory_args, team
from tests.helpers import git
from vault_tool.checks import doctor as doctor_module
from vault_tool.checks.checkup import Checkup
from vault_tool.engine.vault import Vault
from vault_tool.storage.config import CONFIG_PATH, read_config


def test_init_writes_the_default_project_and_every_clone_shares_it(tmp_path: Path):
    _, (first, other) = team(tmp_path)
    assert read_config(first).default_project == "member0"
    assert read_config(other).default_project == "member0"
    with Vault.open(other, client="agent-b") as vault:
        assert vault.projects.default == "member0"


def test_a_process_working_in_another_folder_writes_no_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    _, (_, other) = team(tmp_path)
    elsewhere = tmp_path / "Some Repository"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    with Vault.open(other, client="agent-b") as vault:
        made = vault.remember(
            memory_args("Staging", "# Staging\n\nk3s.\n", [fact("staging", "runs_on", "k3s")], [])
        )
        assert "project:" not in (other / made["path"]).read_text()
        hits = vault.search({"query": "staging", "project": "member0"})["selected_hits"]
        assert [h["memory_id"] for h in hits] == [made["memory_id"]]


def test_a_vault_without_the_setting_keeps_its_folders_name_and_doctor_says_to_set_it(
    tmp_path: Path,
):
    root = tmp_path / "Old Notes"
    Vault.create(root)
    config = root / CONFIG_PATH
    config.write_text(config.read_text().replace('default = "old-notes"', 'default = ""'))
    git(root, "commit", "-q", "-m", "As before", "--", CONFIG_PATH)
    with Vault.open(root) as vault:
        assert vault.projects.default == "old-notes"
    with Checkup(root) as checkup:
        (check,) = [c for c in doctor_module.doctor(checkup).checks if c.name == "config"]
    assert check.status == "warn"
    assert "[projects] default" in check.summary
    assert 'default = "old-notes"' in check.fix
