"""Indexes in memory (an as-of search's, the journal's segments) never touch a shared
temporary folder: Whoosh's own put every process's temporary files in <tmp>/MAIN.tmp."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from tests.helpers import create_args
from vault_tool.engine.vault import Vault


@pytest.fixture
def shared_tmp_taken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary folder where MAIN.tmp is a file (as another program may leave it)."""
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    (shared / "MAIN.tmp").write_text("not a folder")
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    return shared


def test_a_search_as_of_a_commit_needs_no_temporary_folder(vault: Vault, shared_tmp_taken):
    made = vault.remember(create_args("Wallabies hop", body="Wallabies are small."))
    result = vault.search_as_of({"query": "wallabies"}, made["version_id"])
    assert [h["memory_id"] for h in result["selected_hits"]] == [made["memory_id"]]
    assert (shared_tmp_taken / "MAIN.tmp").read_text() == "not a folder"


def test_a_write_is_searchable_without_a_temporary_folder(vault: Vault, shared_tmp_taken):
    made = vault.remember(create_args("Possums climb", body="Possums live in trees."))
    assert vault._index.damaged is None
    hits = vault.search({"query": "possums"})["selected_hits"]
    assert [h["memory_id"] for h in hits] == [made["memory_id"]]
