"""`vault-tool commit`: what it committed, what it left and why, and an exit code that says so."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_support import invoke
from tests.helpers import create_args, git
from vault_tool.engine.vault import Vault
from vault_tool.errors import EXIT_CODES, LEFT_UNCOMMITTED

BROKEN = "---\nmemory_type: note\ntitle: Broken: a colon in the middle\n---\n# Broken\n"


def _two_memories(vault_path: Path) -> list[dict]:
    with Vault.open(vault_path, client="pytest") as vault:
        return [vault.remember(create_args(t)) for t in ("Ana owns billing", "Deploys on Tuesday")]


def test_a_commit_that_leaves_a_broken_file_says_what_it_did_and_exits_non_zero(vault_path):
    made = _two_memories(vault_path)
    with (vault_path / made[0]["path"]).open("a") as file:
        file.write("\nA line a person added.\n")
    (vault_path / made[1]["path"]).write_text(BROKEN)
    commits = int(git(vault_path, "rev-list", "--count", "HEAD"))
    done = invoke("commit", "--vault", vault_path)
    assert done.exit_code == LEFT_UNCOMMITTED, done.stdout + done.stderr
    assert int(git(vault_path, "rev-list", "--count", "HEAD")) == commits + 1
    assert "Committed 1 change." in done.stdout
    assert made[1]["path"] in done.stdout and "Left 1 file uncommitted" in done.stdout
    assert "not valid YAML" in done.stdout  # the reason, and the fix after it
    assert LEFT_UNCOMMITTED in EXIT_CODES and "commit" in EXIT_CODES[LEFT_UNCOMMITTED]


def test_json_still_prints_the_report_when_a_file_is_left(vault_path):
    made = _two_memories(vault_path)
    (vault_path / made[1]["path"]).write_text(BROKEN)
    done = invoke("commit", "--vault", vault_path, "--json")
    assert done.exit_code == LEFT_UNCOMMITTED, done.stderr
    report = json.loads(done.stdout)
    assert report["commits"] == []
    assert list(report["problems"]) == [made[1]["path"]]
    assert report["problems"][made[1]["path"]]["hint"]


def test_a_secret_and_a_refused_name_are_left_too(vault_path):
    made = _two_memories(vault_path)
    secret = vault_path / made[0]["path"]
    secret.write_text(secret.read_text() + "\nkey AKIAIOSFODNN7EXAMPLQ in a note\n")
    (vault_path / "note").mkdir(exist_ok=True)
    (vault_path / "note" / "bad\x01name.md").write_text("# A note\n\nText.\n")
    done = invoke("commit", "--vault", vault_path, "--json")
    assert done.exit_code == LEFT_UNCOMMITTED, done.stderr
    assert set(json.loads(done.stdout)["problems"]) == {made[0]["path"], "note/bad\x01name.md"}


def test_a_commit_that_takes_everything_in_exits_0(vault_path):
    made = _two_memories(vault_path)
    with (vault_path / made[0]["path"]).open("a") as file:
        file.write("\nA line a person added.\n")
    done = invoke("commit", "--vault", vault_path)
    assert done.exit_code == 0, done.stdout + done.stderr
    assert "Committed 1 change." in done.stdout
    assert invoke("commit", "--vault", vault_path).exit_code == 0  # nothing to commit
