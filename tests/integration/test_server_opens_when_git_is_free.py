"""A vault opened while git is busy (HEAD detached by a checkout, a merge stopped) with an
interrupted write to repair opens all the same: searches answer from the index, writes say
git is busy, and the repair commits the interrupted write, with its own message, at the
first write once git is free (before the watcher could take its file in as a hand edit)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import create_args, git
from vault_tool.engine.vault import Vault
from vault_tool.server.runtime import Runtime
from vault_tool.storage.git import blob_sha

DATA = b"# Renamed before the crash\n\nNot committed yet.\n"


@pytest.fixture
def detached(vault_path: Path) -> Path:
    """A vault with a write a crash cut short (renamed, not committed), HEAD detached."""
    with Vault.open(vault_path) as vault:
        vault.remember(create_args("Ana owns the billing service"))
    (vault_path / "notes").mkdir(exist_ok=True)
    (vault_path / "notes" / "x.md").write_bytes(DATA)
    journal = vault_path / ".vault" / "run" / "journal"
    journal.mkdir(exist_ok=True)
    entry = {"path": "notes/x.md", "tmp": "notes/.x.md.vault-tmp-0", "blob": blob_sha(DATA)}
    record = {"message": "Create note: x\n\nClient: t", "entries": [{**entry, "title": "x"}]}
    (journal / "1-99999.json").write_text(json.dumps(record))
    git(vault_path, "checkout", "-q", "--detach", "HEAD")
    return vault_path


def test_a_server_that_met_a_busy_git_at_start_searches_and_repairs_once_it_is_free(
    detached: Path,
):
    runtime = Runtime(detached, "stdio")
    runtime.open()
    try:
        answered = runtime.call("search", {"query": "billing"}, client="t")
        assert not answered.is_error, answered.structured
        assert answered.structured["selected_hits"]
        refused = runtime.call("remember", create_args("Bo runs the deploys"), client="t")
        assert refused.is_error and "detached" in str(refused.structured)
        assert "x.md" not in git(detached, "ls-files")

        git(detached, "checkout", "-q", "main")
        written = runtime.call("remember", create_args("Bo runs the deploys"), client="t")
        assert not written.is_error, written.structured
    finally:
        runtime.shutdown()
    subjects = git(detached, "log", "--format=%s").splitlines()
    assert subjects[1].startswith("Repair") and "x" in subjects[1], subjects
    assert "Client: t" in git(detached, "log", "-1", "--format=%B", "HEAD~1")
    assert not any(s.startswith("Hand edit") for s in subjects), subjects
    assert not list((detached / ".vault" / "run" / "journal").glob("*.json"))


def test_a_cli_open_on_a_detached_head_defers_the_repair_and_keeps_the_journal(
    detached: Path,
):
    with Vault.open(detached) as vault:
        assert vault.search({"query": "billing"})["selected_hits"]
    assert list((detached / ".vault" / "run" / "journal").glob("*.json"))
    git(detached, "checkout", "-q", "main")
    with Vault.open(detached):
        pass
    assert git(detached, "log", "-1", "--format=%s").startswith("Repair")
    assert (detached / "notes" / "x.md").read_bytes() == DATA
