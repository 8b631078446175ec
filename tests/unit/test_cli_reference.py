"""docs/cli.md and docs/mcp.md's error codes are generated; they must match the code as it is."""

from pathlib import Path

import pytest

from tests.cli_support import invoke
from vault_tool.cli.app import cli
from vault_tool.cli.reference import (
    exit_code_table,
    mcp_error_block,
    render,
    search_arguments_block,
    with_mcp_errors,
)
from vault_tool.errors import CODES, EXIT_CODES

DOCS = Path(__file__).parents[2] / "docs"


def test_cli_reference_matches_the_commands():
    reference = DOCS / "cli.md"
    assert reference.read_text(encoding="utf-8") == render(), (
        "docs/cli.md is stale: run `python -m vault_tool.cli.reference > docs/cli.md`"
    )


def test_the_reference_shows_each_command_s_help_as_vault_tool_prints_it():
    # Commands inherit -h from the group (rendered alone they would show only --help), but
    # for the ones git calls, which answer only --help.
    assert "  -h, --help " in invoke("init", "--help").stdout
    own = [c for c in cli.commands.values() if "help_option_names" in c.context_settings]
    assert {c.name for c in own} == {"merge-driver", "textconv"}
    assert render().count("\n  -h, --help ") == len(cli.commands) - len(own)
    assert "  --help " in invoke("merge-driver", "--help").stdout


def test_mcp_error_codes_match_the_table():
    text = (DOCS / "mcp.md").read_text(encoding="utf-8")
    assert mcp_error_block() in text
    assert with_mcp_errors(text) == text, (
        "docs/mcp.md's error codes are stale: run "
        "`python -m vault_tool.cli.reference --mcp-errors docs/mcp.md`"
    )


def test_every_exit_code_and_every_error_code_is_rendered():
    table = exit_code_table()
    for exit_code, meaning in EXIT_CODES.items():
        assert f"| {exit_code} | {meaning} |" in table
    block = mcp_error_block()
    for row in CODES.values():
        assert f"| `{row.code}` | {row.meaning} | {row.exit_code} |" in block
        assert f"`{row.code}`" in table
        assert row.exit_code in EXIT_CODES


def test_a_changed_table_makes_the_mcp_doc_stale(monkeypatch: pytest.MonkeyPatch):
    text = (DOCS / "mcp.md").read_text(encoding="utf-8")
    monkeypatch.setitem(CODES, "new_code", CODES["not_found"].__class__("new_code", 4, "new"))
    assert with_mcp_errors(text) != text
    assert "| `new_code` | new | 4 |" in with_mcp_errors(text)


def test_a_doc_without_the_markers_is_refused():
    with pytest.raises(ValueError, match="no block <!-- error codes"):
        with_mcp_errors("# The MCP server\n")


def test_search_arguments_are_listed_from_the_schema():
    block = search_arguments_block()
    for name in ("query", "memory_id", "key", "offset", "order", "response_format"):
        assert f"| `{name}` |" in block
    assert "`relevance`, `newest`, `oldest`" in block
