"""Text from notes (titles, names, paths) reaches the terminal as text: the CLI's styling
markup in it is printed, never obeyed (a note cannot restyle, hide or link the output)."""

from __future__ import annotations

from pathlib import Path

from tests.cli_support import invoke
from vault_tool.engine.vault import Vault

HOSTILE_TITLE = "[link=https://evil.example]Click me[/link] [bold]now[/bold]"


def test_a_title_holding_markup_is_printed_as_written_by_log_history_and_blame(
    vault_path: Path,
):
    (vault_path / "notes").mkdir()
    (vault_path / "notes" / "[x].md").write_text(f"# {HOSTILE_TITLE}\n\nBody.\n")
    with Vault.open(vault_path) as vault:
        vault.commit_hand_edits()
    for args, shown in (
        (("log",), HOSTILE_TITLE),
        (("history", "notes/[x]"), HOSTILE_TITLE),
        (("show", "notes/[x]"), "notes/[x]"),
    ):
        done = invoke(*args, "--vault", vault_path)
        assert done.exit_code == 0, done.stdout + done.stderr
        flat = "".join(done.stdout.split())  # a table may wrap a long subject
        assert "".join(shown.split()) in flat, (args, done.stdout)
