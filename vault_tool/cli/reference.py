"""Generate the references that must not drift: docs/cli.md, and docs/mcp.md's tables.

python -m vault_tool.cli.reference > docs/cli.md
python -m vault_tool.cli.reference --mcp-errors docs/mcp.md   (rewrites the marked block)

docs/cli.md comes from the command tree and `errors.EXIT_CODES`; the error-code block of
docs/mcp.md from `errors.CODES`, its table of search's arguments from the schema. Tests
fail when either file disagrees with the code.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import click

from vault_tool.cli.app import cli
from vault_tool.errors import CODES, EXIT_CODES

HEADER = """\
# vault-tool command reference

Generated from `vault-tool --help` by `python -m vault_tool.cli.reference > docs/cli.md`;
a test fails when this file and the commands disagree.

"""

MCP_ERRORS_START = (
    "<!-- error codes: generated from vault_tool/errors.py by "
    "`python -m vault_tool.cli.reference --mcp-errors docs/mcp.md` -->\n"
)
MCP_ERRORS_END = "<!-- end of error codes -->\n"
SEARCH_ARGUMENTS_START = (
    "<!-- search arguments: generated from schema/search.input.schema.json by "
    "`python -m vault_tool.cli.reference --mcp-errors docs/mcp.md` -->\n"
)
SEARCH_ARGUMENTS_END = "<!-- end of search arguments -->\n"
EXTENDED_START = (
    "<!-- extended tools: generated from vault_tool/server/extended.py and schema/ by "
    "`python -m vault_tool.cli.reference --mcp-errors docs/mcp.md` -->\n"
)
EXTENDED_END = "<!-- end of extended tools -->\n"


def render() -> str:
    """The whole command reference as Markdown."""
    parts = [HEADER, "## Exit codes\n\n", exit_code_table(), dates_section()]
    # Each command's help as `vault-tool NAME --help` prints it: under the group's context,
    # whose settings (-h as well as --help) the commands inherit, but for a command's own
    # (the ones git calls answer only --help: a path `-h….md` is a path).
    settings = {**cli.context_settings, "terminal_width": 100}
    with click.Context(cli, info_name="vault-tool", **settings) as group:
        for name, command in cli.commands.items():
            own = command.context_settings
            with click.Context(command, info_name=name, parent=group, **own) as ctx:
                parts.append(f"\n## vault-tool {name}\n\n```text\n{command.get_help(ctx)}\n```\n")
    return "".join(parts)


def dates_section() -> str:
    """The one date grammar every --since / --until / --as-of reads (core/times.py)."""
    from vault_tool.core.times import MOMENT_FORMS

    return (
        "\n## Dates\n\n"
        f"Every `--since`, `--until` and `--as-of` takes {MOMENT_FORMS}; so do the `search` "
        "tool's `since` and `until`. `today`, `yesterday` and ages name whole UTC days "
        "(`7d` is the day a week before today, `3m` the same day three months back): a day "
        "given to `--since` counts from its start, to `--until` and `--as-of` to its end. "
        "Anything else exits 2 and names these forms.\n"
    )


def exit_code_table() -> str:
    """Every exit code of the CLI, its meaning and the error codes that end in it."""
    rows = ["| Exit code | Meaning | Error codes |", "|---|---|---|"]
    for exit_code, meaning in EXIT_CODES.items():
        codes = ", ".join(f"`{row.code}`" for row in CODES.values() if row.exit_code == exit_code)
        rows.append(f"| {exit_code} | {meaning} | {codes} |")
    return "\n".join(rows) + "\n"


def mcp_error_block() -> str:
    """docs/mcp.md's marked block: every error code, its meaning and the CLI's exit code."""
    rows = ["| `code` | Meaning | CLI exit code |", "|---|---|---|"]
    rows += [f"| `{row.code}` | {row.meaning} | {row.exit_code} |" for row in CODES.values()]
    return MCP_ERRORS_START + "\n".join(rows) + "\n" + MCP_ERRORS_END


def search_arguments_block() -> str:
    """docs/mcp.md's marked block: each argument of search, its values and what it does."""
    from vault_tool.server.schemas import tool_schema

    listed = tool_schema("search.input.schema.json", patterns=False)
    rows = ["| Argument | Values | What it does |", "|---|---|---|"]
    for name, field in listed["properties"].items():
        rows.append(f"| `{name}` | {_values(field)} | {field.get('description', '')} |")
    return SEARCH_ARGUMENTS_START + "\n".join(rows) + "\n" + SEARCH_ARGUMENTS_END


def extended_tools_block() -> str:
    """docs/mcp.md's marked block: each tool the extended profile adds, the scope an HTTP
    token needs for it, its annotations, its description and its arguments."""
    from vault_tool.core.access import needed
    from vault_tool.server.tools import tool_specs

    parts = []
    for spec in tool_specs("extended")[2:]:
        hints = [name for name, key in _HINTS if spec.annotations.get(key)]
        required = set(spec.input_schema.get("required", ()))
        rows = ["| Argument | Values | What it does |", "|---|---|---|"]
        for name, field in spec.input_schema["properties"].items():
            shown = f"`{name}`" + (" (required)" if name in required else "")
            rows.append(f"| {shown} | {_values(field)} | {field.get('description', '')} |")
        parts.append(
            f"#### `{spec.name}`: {spec.title}\n\n{spec.description}\n\n"
            f"Token scope `{needed(spec.name, spec.writes)}`; {', '.join(hints)}.\n\n"
            + "\n".join(rows)
            + "\n"
        )
    return EXTENDED_START + "\n".join(parts) + EXTENDED_END


_HINTS = (
    ("read-only", "readOnlyHint"),
    ("destructive", "destructiveHint"),
    ("idempotent", "idempotentHint"),
)


def _values(field: dict) -> str:
    """A schema property's values in words: its enum, or its type and bounds, and default."""
    if "enum" in field or ("items" in field and "enum" in field["items"]):
        values = field.get("enum") or field["items"]["enum"]
        shown = ", ".join(f"`{v}`" for v in values)
        shown = shown if "enum" in field else f"a list of {shown}"
    elif "const" in field:
        shown = f"`{str(field['const']).lower()}` only"
    else:
        shown = field.get("type", "")
        low, high = field.get("minimum"), field.get("maximum")
        if low is not None and high is not None:
            shown += f" {low} to {high}"
    default = field.get("default")
    return shown + (f" (default `{default}`)" if default is not None else "")


def with_mcp_errors(text: str) -> str:
    """text (docs/mcp.md) with its marked blocks (the error codes, search's arguments, the
    extended tools) replaced by the current tables."""
    for first, last, block in (
        (MCP_ERRORS_START, MCP_ERRORS_END, mcp_error_block()),
        (SEARCH_ARGUMENTS_START, SEARCH_ARGUMENTS_END, search_arguments_block()),
        (EXTENDED_START, EXTENDED_END, extended_tools_block()),
    ):
        start = text.find(first)
        end = text.find(last, max(start, 0))
        if start < 0 or end < 0:
            raise ValueError(f"no block {first.strip()}: add its two marker lines where it belongs")
        text = text[:start] + block + text[end + len(last) :]
    return text


def _main() -> None:
    parser = argparse.ArgumentParser(prog="python -m vault_tool.cli.reference")
    parser.add_argument(
        "--mcp-errors",
        metavar="FILE",
        type=Path,
        help="rewrite the generated blocks of FILE (docs/mcp.md) instead of printing docs/cli.md",
    )
    options = parser.parse_args()
    if options.mcp_errors is None:
        print(render(), end="")
        return
    text = options.mcp_errors.read_text(encoding="utf-8")
    options.mcp_errors.write_text(with_mcp_errors(text), encoding="utf-8")


if __name__ == "__main__":
    _main()
