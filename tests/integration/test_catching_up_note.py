"""A search while the index catches up says so only when something is actually pending.

A server opens its vault without catching up and its watcher catches up in the background
(a scan of every file: most of a second at 10,000 notes). A search in that time answers
from the index as it is; it carries `index_catching_up` only while the catch-up has found
changes it has not indexed yet, never for the scan alone, and never for good once a
catch-up has ended.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import create_args, eventually, git
from vault_tool.engine.vault import Vault
from vault_tool.server.runtime import Runtime


def _note(result: dict) -> bool:
    return bool(result.structured.get("index_catching_up"))


def test_a_server_whose_index_is_current_never_says_it_is_catching_up(vault_path: Path):
    with Vault.open(vault_path) as vault:
        vault.remember(create_args("Ana owns the billing service"))
    runtime = Runtime(vault_path, "stdio")
    runtime.open()
    try:
        first = runtime.call("search", {"query": "billing"}, client="t")
        assert first.structured["selected_hits"] and not _note(first), first.structured
        eventually(lambda: runtime.watcher.ready.is_set(), 20)
        later = runtime.call("search", {"query": "billing"}, client="t")
        assert not _note(later)
        assert [h["memory_id"] for h in later.structured["selected_hits"]] == [
            h["memory_id"] for h in first.structured["selected_hits"]
        ]
    finally:
        runtime.shutdown()


def test_changes_found_while_catching_up_are_said_until_they_are_indexed(vault_path: Path):
    with Vault.open(vault_path) as vault:
        vault.remember(create_args("Ana owns the billing service"))
    (vault_path / "notes").mkdir()
    for n in range(3):  # written and committed while nothing watched: the catch-up finds them
        (vault_path / "notes" / f"offline-{n}.md").write_text(f"# Offline {n}\n\nWombat {n}.\n")
    git(vault_path, "add", "notes")
    git(vault_path, "commit", "-q", "-m", "Notes written by hand")
    said = []
    with Vault.open(vault_path, catch_up=False) as vault:

        def searching(*_: int) -> None:  # called as each pending file is indexed
            said.append(vault.search({"query": "wombat"}).get("index_catching_up"))

        vault.take_in_offline_changes(searching)
        assert said and all(said), said
        assert "index_catching_up" not in vault.search({"query": "wombat"})
        assert len(vault.search({"query": "wombat"})["selected_hits"]) == 3


def test_a_catch_up_with_nothing_to_do_is_not_said(vault_path: Path):
    with Vault.open(vault_path) as vault:
        vault.remember(create_args("Ana owns the billing service"))
    with Vault.open(vault_path, catch_up=False) as vault:
        vault.take_in_offline_changes()
        assert "index_catching_up" not in vault.search({"query": "billing"})
