"""docs/cli.md is generated from the command tree; it must match the commands as they are."""

from pathlib import Path

from vault_tool.cli.reference import render


def test_cli_reference_matches_the_commands():
    reference = Path(__file__).parents[2] / "docs" / "cli.md"
    assert reference.read_text(encoding="utf-8") == render(), (
        "docs/cli.md is stale: run `python -m vault_tool.cli.reference > docs/cli.md`"
    )
