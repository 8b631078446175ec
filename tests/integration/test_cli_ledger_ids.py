"""`vault-tool ledger` prints each returned memory by the id commands take: an operator
copies it into `feedback --helpful` (or `show`) as it stands. Real vault, in-process CLI."""

from __future__ import annotations

from pathlib import Path

from tests.cli_support import invoke, invoke_json
from tests.helpers import create_args
from vault_tool.engine.vault import Vault


def test_the_ids_the_ledger_prints_are_the_ones_feedback_takes(vault_path: Path):
    with Vault.open(vault_path, client="agent") as vault:
        made = vault.remember(create_args("Ana owns billing"))
        vault.search({"query": "billing"})
    shown = invoke("ledger", "--vault", vault_path)
    assert shown.exit_code == 0
    handle = invoke_json("ledger", "--vault", vault_path)[0]["id"]
    (line,) = [line for line in shown.stdout.splitlines() if handle in line]
    printed = line.split()[-1]
    assert printed == made["memory_id"]
    done = invoke("feedback", handle, "--helpful", printed, "--vault", vault_path)
    assert done.exit_code == 0, done.stdout + done.stderr
    assert invoke("show", printed, "--vault", vault_path).exit_code == 0
