"""A server started while git was busy (HEAD detached by a checkout, a merge stopped) with an
interrupted write to repair cannot open the vault yet: it must open it once git is free,
not refuse every call for the rest of its life."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import create_args, git
from vault_tool.engine.vault import Vault
from vault_tool.server.runtime import Runtime
from vault_tool.storage.git import blob_sha


def test_a_server_that_met_a_busy_git_at_start_opens_the_vault_when_it_is_free(
    vault_path: Path,
):
    with Vault.open(vault_path) as vault:
        vault.remember(create_args("Ana owns the billing service"))
    data = b"# Renamed before the crash\n\nNot committed yet.\n"
    (vault_path / "notes").mkdir()
    (vault_path / "notes" / "x.md").write_bytes(data)
    journal = vault_path / ".vault" / "run" / "journal"
    journal.mkdir(exist_ok=True)
    (journal / "1-99999.json").write_text(
        '{"message": "Create note: x", "entries": [{"path": "notes/x.md", '
        f'"tmp": "notes/.x.md.vault-tmp-0", "blob": "{blob_sha(data)}", "title": "x"}}]}}'
    )
    git(vault_path, "checkout", "-q", "--detach", "HEAD")
    runtime = Runtime(vault_path, "stdio")
    runtime.open()
    try:
        refused = runtime.call("search", {"query": "billing"}, client="t")
        assert refused.is_error and "detached" in str(refused.structured)

        git(vault_path, "checkout", "-q", "main")
        answered = runtime.call("search", {"query": "billing"}, client="t")
        assert not answered.is_error, answered.structured
        assert answered.structured["selected_hits"]
    finally:
        runtime.shutdown()
