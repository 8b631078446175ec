"""Files saved with a UTF-8 byte order mark (some Windows editors write one) are memories too."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import create_args, delta, git
from vault_tool.engine.vault import Vault

BOM = "\ufeff".encode()


def test_a_hand_made_file_with_a_bom_is_committed_and_searchable(vault: Vault, vault_path: Path):
    note = vault_path / "notes" / "wombats.md"
    note.parent.mkdir()
    note.write_bytes(BOM + b"# Wombats dig burrows\n\nThey dig with their front claws.\n")

    report = vault.sync_paths(["notes/wombats.md"], commit=True)

    assert report.problems == {}
    assert git(vault_path, "status", "--porcelain") == ""
    hits = vault.search({"query": "wombats burrows"})["selected_hits"]
    assert [h["path"] for h in hits] == ["notes/wombats.md"]
    assert hits[0]["title"] == "Wombats dig burrows"


def test_a_memory_resaved_with_a_bom_can_still_be_updated_and_keeps_it(
    vault: Vault, vault_path: Path
):
    created = vault.remember(create_args())
    path = vault_path / created["path"]
    path.write_bytes(BOM + path.read_bytes())
    vault.sync_paths([created["path"]], commit=True)
    current = vault.search({"memory_id": created["memory_id"]})

    updated = vault.remember(
        {
            "mode": "update",
            "memory_id": created["memory_id"],
            "expected_version_id": current["version_id"],
            "content_md": "# Ana owns the billing service\n\nSince March.\n",
            "semantic_delta": delta(),
        }
    )

    assert updated["status"] == "updated"
    data = path.read_bytes()
    assert data.startswith(BOM + b"---\n")
    assert b"Since March." in data
    assert git(vault_path, "status", "--porcelain") == ""
