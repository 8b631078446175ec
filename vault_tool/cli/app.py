"""The `vault-tool` command group: its commands in topic order, and errors -> exit codes.

Only this module imports the command modules; they import `cli/output.py`, never this one.
Commands import the engine lazily so that `vault-tool --help` stays fast.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import click

from vault_tool import __version__
from vault_tool.cli import (
    browse,
    changes,
    health,
    maintenance,
    memories,
    ontology,
    recall,
    review,
    rules,
    search,
    serve,
    setup,
    team,
    tokens,
    transfer,
)
from vault_tool.cli.output import json_requested, report_error
from vault_tool.errors import EXIT_CODES, OUTPUT_CLOSED, VaultError

# The order of `vault-tool --help`: grouped by topic, from setting up to checking health.
TOPICS = (
    setup,
    serve,
    tokens,
    search,
    browse,
    memories,
    review,
    changes,
    recall,
    rules,
    transfer,
    team,
    maintenance,
    ontology,
    health,
)

EPILOG = "Exit codes: " + ", ".join(f"{code} {text}" for code, text in EXIT_CODES.items()) + "."


class VaultGroup(click.Group):
    """The command group; running it turns every outcome into one exit code."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)  # in the order they were added: grouped by topic

    def make_context(self, *args: Any, **extra: Any) -> click.Context:
        try:  # `vault-tool --help | head -1`: the group's own help is printed in here
            return super().make_context(*args, **extra)
        except BrokenPipeError:
            raise click.exceptions.Exit(_output_closed()) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except VaultError as problem:
            # Reported here, where the context still knows whether --json was given.
            report_error(problem, as_json=json_requested(ctx))
            ctx.exit(problem.exit_code)
        except BrokenPipeError:
            # Whatever read the output has gone (`| head -3`): nothing is left to say, and
            # click would exit 1 without a word.
            ctx.exit(_output_closed())

    def main(  # type: ignore[override]
        self,
        args: list[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Run a command; exit with its code (or return it, outside standalone mode)."""
        try:
            # Outside standalone mode click returns a command's ctx.exit(code) instead of raising.
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.ClickException as problem:
            problem.show()
            code = problem.exit_code
        except click.exceptions.Abort:
            click.echo("Aborted.", err=True)
            code = 130
        code = code if isinstance(code, int) else 0
        if not standalone_mode:
            return code
        sys.exit(code)


def _output_closed() -> int:
    """Send the rest of stdout to /dev/null, so that the flush at exit cannot fail (and
    print a traceback) either; the exit code of a writer whose reader left."""
    try:
        quiet = os.open(os.devnull, os.O_WRONLY)
        os.dup2(quiet, sys.stdout.fileno())
        os.close(quiet)
    except (OSError, ValueError):  # in-process runs give stdout no file descriptor
        pass
    return OUTPUT_CLOSED


@click.group(
    name="vault-tool",
    cls=VaultGroup,
    epilog=EPILOG,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(__version__, prog_name="vault-tool")
def cli() -> None:
    """A memory vault for AI agents: Markdown files in git, searchable, served over MCP.

    Every command takes --vault PATH (default: $VAULT_TOOL_VAULT, else the current
    folder) and --json.
    """


def _register() -> None:
    for topic in TOPICS:
        for command in topic.COMMANDS:
            cli.add_command(command)


_register()


def main(argv: list[str] | None = None) -> None:
    """Entry point: run a command, turning errors into a message and an exit code."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    cli.main(args=argv, prog_name="vault-tool")
