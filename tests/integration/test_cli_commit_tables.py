"""`log`, `history` and `blame` as a person reads them: nothing cut at 80 columns, and a line
that says so when there is nothing to list."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_support import invoke
from tests.helpers import create_args, git
from vault_tool.core.ids import path_id
from vault_tool.engine.vault import Vault

AUTHOR = "Alexandra Konstantinopoulou-Smithsonian"
TITLE = "Ana owns the billing service and the invoice run of every region"


@pytest.fixture
def written(vault_path: Path) -> dict:
    """One memory written by an agent whose author ([authors] in the config) has a long
    name."""
    config = vault_path / ".vault" / "config.toml"
    config.write_text(
        config.read_text(encoding="utf-8").replace(
            "[authors]\n", f'[authors]\nclaude-code = "{AUTHOR} <alexandra@example.com>"\n'
        ),
        encoding="utf-8",
    )
    assert AUTHOR in config.read_text(encoding="utf-8")
    with Vault.open(vault_path, client="claude-code") as vault:
        return vault.remember(create_args(TITLE))


def _shows_every_part(text: str, made: dict) -> None:
    assert "…" not in text
    assert made["version_id"][:10] in text
    assert AUTHOR in text  # on one line, whole
    assert "claude-code" in text
    words = " ".join(text.split())
    assert f"Create decision: {TITLE}" in words  # wrapped, perhaps, but whole


@pytest.mark.parametrize("columns", ["80", "200"])
@pytest.mark.parametrize("command", ["log", "history"])
def test_log_and_history_show_the_whole_author_at_any_width(
    vault_path, written, monkeypatch, command, columns
):
    monkeypatch.setenv("COLUMNS", columns)
    args = ["log"] if command == "log" else ["history", written["memory_id"]]
    done = invoke(*args, "--vault", vault_path)
    assert done.exit_code == 0, done.stderr
    _shows_every_part(done.stdout, written)
    assert git(vault_path, "log", "-1", "--format=%cs") in done.stdout


def test_history_with_patches_names_the_whole_author(vault_path, written, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    done = invoke("history", written["memory_id"], "--patch", "--vault", vault_path)
    assert done.exit_code == 0, done.stderr
    _shows_every_part(done.stdout, written)


def test_a_log_with_nothing_to_show_says_so(vault_path, written):
    done = invoke("log", "--client", "nobody", "--vault", vault_path)
    assert done.exit_code == 0, done.stderr
    assert done.stdout.strip() == "No commits match."


def test_blame_of_a_memory_without_facts_says_it_has_none(vault_path):
    """A person's note: agents must state facts, notes need not."""
    (vault_path / "notes").mkdir()
    (vault_path / "notes" / "deploys.md").write_text(
        "# Deploys happen on Tuesdays\n\nNot Friday.\n"
    )
    with Vault.open(vault_path, client="pytest") as vault:
        vault.sync_paths(["notes/deploys.md"], commit=True)
    done = invoke("blame", path_id("notes/deploys.md"), "--vault", vault_path)
    assert done.exit_code == 0, done.stderr
    [line] = done.stdout.strip().splitlines()
    assert "has no facts" in line and "history" in line
