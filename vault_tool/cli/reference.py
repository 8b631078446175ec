"""Generate docs/cli.md from the command tree, so the reference cannot drift from --help.

python -m vault_tool.cli.reference > docs/cli.md
"""

from __future__ import annotations

import click

from vault_tool.cli.app import EXIT_CODES, cli

HEADER = """\
# vault-tool command reference

Generated from `vault-tool --help` by `python -m vault_tool.cli.reference > docs/cli.md`;
a test fails when this file and the commands disagree.

"""


def render() -> str:
    """The whole reference as Markdown."""
    parts = [
        HEADER,
        "## Exit codes\n\n",
        EXIT_CODES.replace("\n", " ").replace("Exit codes: ", ""),
        "\n",
    ]
    for name, command in cli.commands.items():
        with click.Context(command, info_name=f"vault-tool {name}", terminal_width=100) as ctx:
            parts.append(f"\n## vault-tool {name}\n\n```text\n{command.get_help(ctx)}\n```\n")
    return "".join(parts)


if __name__ == "__main__":
    print(render(), end="")
