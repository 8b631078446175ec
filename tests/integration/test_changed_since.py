"""`list --since` and search's since / until ask when a memory last changed: a hand edit or
a restore leaves its front matter's `updated` as it was, and still changed it then (its
commit's time); an edit not committed yet changed it at its file's mtime. A note a person
dated and committed, and an entity renamed across memories, keep their `updated`."""

from __future__ import annotations

import os
from pathlib import Path

from tests.cli_support import invoke
from tests.helpers import git
from vault_tool.engine.vault import Vault
from vault_tool.storage import config as config_module

OLD = "2020-03-01T09:00:00Z"
NOTE = (
    "---\nmemory_type: note\ntitle: Billing runbook\n"
    "entities:\n- n: Ana\n  kind: person\n  is: engineer\n"
    f"created: {OLD}\nupdated: {OLD}\n---\n# Billing runbook\n\nAna restarts billing.\n"
)
PATH = "note/billing-runbook.md"


def _paths(vault: Vault, **filters: str) -> list[str]:
    return [m["path"] for m in vault.listing(filters)["memories"]]


def _found(vault: Vault, **filters: str) -> list[str]:
    return [h["path"] for h in vault.search({"query": "billing", **filters})["selected_hits"]]


def _dated_note(root: Path) -> None:
    (root / "note").mkdir(exist_ok=True)
    (root / PATH).write_text(NOTE, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "A note of 2020")


def test_a_note_dated_by_its_writer_keeps_its_date(vault_path: Path):
    _dated_note(vault_path)
    with Vault.open(vault_path, client="pytest") as vault:
        vault.catch_up()
        assert _paths(vault, since="today") == []
        assert _paths(vault, since="2020-03-01", until="2020-03-01") == [PATH]


def test_a_hand_edit_changed_it_at_its_commit(vault_path: Path):
    _dated_note(vault_path)
    with Vault.open(vault_path, client="pytest") as vault:
        vault.catch_up()
        with (vault_path / PATH).open("a", encoding="utf-8") as file:
            file.write("\nAnd pages the on-call.\n")
        assert len(vault.commit_hand_edits().commits) == 1
        assert _paths(vault, since="today") == [PATH]
        assert _found(vault, since="today") == [PATH]
        assert _found(vault, until="2020-12-31") == []
        vault.reindex()  # read back from git alone, the same
        assert _paths(vault, since="today") == [PATH]
        assert _paths(vault, until="2020-12-31") == []


def test_an_uncommitted_edit_changed_it_at_its_mtime(vault_path: Path):
    _dated_note(vault_path)
    config = vault_path / config_module.CONFIG_PATH
    config.write_text(config.read_text().replace("auto_commit = true", "auto_commit = false"))
    git(vault_path, "commit", "-q", "-am", "no auto commit")
    with Vault.open(vault_path, client="pytest") as vault:
        vault.catch_up()
        with (vault_path / PATH).open("a", encoding="utf-8") as file:
            file.write("\nAnd pages the on-call.\n")
        vault.sync_paths([PATH])
        assert git(vault_path, "status", "--porcelain", "--", PATH).strip()  # not committed
        assert _paths(vault, since="today") == [PATH]
        os.utime(vault_path / PATH, (1_600_000_000, 1_600_000_000))  # 2020-09-13
        vault.reindex()
        assert _paths(vault, since="2020-09-13", until="2020-09-13") == [PATH]


def test_a_restore_changed_it_at_its_commit(vault_path: Path):
    _dated_note(vault_path)
    with Vault.open(vault_path, client="pytest") as vault:
        vault.catch_up()
        memory_id = vault.listing()["memories"][0]["memory_id"]
        (vault_path / PATH).unlink()
        vault.commit_hand_edits()
        vault.restore(memory_id)
        assert (vault_path / PATH).read_text(encoding="utf-8") == NOTE  # its old `updated`
        assert _paths(vault, since="today") == [PATH]
        vault.reindex()
        assert _paths(vault, since="today") == [PATH]


def test_an_entity_renamed_across_memories_keeps_their_dates(vault_path: Path):
    _dated_note(vault_path)
    done = invoke("rename-entity", "Ana", "Ana Lima", "--vault", str(vault_path))
    assert done.exit_code == 0, done.stderr
    assert "Ana Lima" in (vault_path / PATH).read_text(encoding="utf-8")
    with Vault.open(vault_path, client="pytest") as vault:
        vault.catch_up()
        assert _paths(vault, since="today") == []
        vault.reindex()
        assert _paths(vault, since="today") == []
