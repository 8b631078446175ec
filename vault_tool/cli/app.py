"""The `vault-tool` command group, shared options, output and error handling.

Commands import the engine lazily so that `vault-tool --help` stays fast.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
from collections.abc import Callable, Iterator
from typing import Any

import click

from vault_tool import __version__
from vault_tool.errors import VaultError

_state = {"json": False}

EXIT_CODES = """\
Exit codes: 0 success, 1 internal error, 2 invalid input or usage, 3 version conflict,
4 not found, 5 limit exceeded, 6 vault busy, 7 no vault or vault broken, 8 unhealthy."""


def _note_json(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    _state["json"] = _state["json"] or value
    return value


def vault_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--vault and --json, which every command takes."""
    command = click.option(
        "--json",
        "as_json",
        is_flag=True,
        callback=_note_json,
        help="Print JSON for scripts instead of text.",
    )(command)
    return click.option(
        "--vault",
        "vault_path",
        metavar="PATH",
        help="The vault folder [default: $VAULT_TOOL_VAULT, else the current folder].",
    )(command)


@contextlib.contextmanager
def open_vault(vault_path: str | None, *, catch_up: bool = True) -> Iterator[Any]:
    """Open the vault a command works on; close it (and git's helpers) afterwards."""
    from vault_tool.engine.vault import Vault
    from vault_tool.storage.config import resolve_vault_path
    from vault_tool.watcher import live_leader

    vault = Vault.open(resolve_vault_path(vault_path), client="cli", catch_up=False)
    try:
        # A running leader keeps the index in step; without one, catch up first.
        if catch_up and live_leader(vault.store.run_dir) is None:
            vault.catch_up(progress=progress_callback("Indexing changed files"))
        yield vault
    finally:
        vault.close()


def emit(data: Any, as_json: bool, render: Callable[[Any], None]) -> None:
    """Print data as JSON, or call render(console) for people."""
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        render(console())


def console(stderr: bool = False) -> Any:
    """A rich console (imported on first use)."""
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=True)


def progress_callback(label: str) -> Callable[[int, int], None] | None:
    """A progress bar on stderr for long work, when a person is watching and not in --json."""
    if _state["json"] or not sys.stderr.isatty():
        return None
    from rich.progress import Progress

    bar: dict[str, Any] = {}

    def update(done: int, total: int) -> None:
        if "progress" not in bar:
            bar["progress"] = Progress(console=console(stderr=True), transient=True)
            bar["progress"].start()
            bar["task"] = bar["progress"].add_task(label, total=total)
        bar["progress"].update(bar["task"], completed=done, total=total)
        if done >= total:
            bar["progress"].stop()
            bar.clear()

    return update


class _Group(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)  # in the order they were added: grouped by topic


@click.group(
    cls=_Group, epilog=EXIT_CODES, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.version_option(__version__, prog_name="vault-tool")
def cli() -> None:
    """A memory vault for AI agents: Markdown files in git, searchable, served over MCP.

    Every command takes --vault PATH (default: $VAULT_TOOL_VAULT, else the current
    folder) and --json.
    """


def _register() -> None:
    from vault_tool.cli import (
        health,
        maintenance,
        memories,
        ontology,
        review,
        search,
        serve,
        setup,
        transfer,
    )

    for module in (setup, serve, search, memories, review, transfer, maintenance, ontology, health):
        for command in module.COMMANDS:
            cli.add_command(command)


_register()


def main(argv: list[str] | None = None) -> None:
    """Entry point: run a command, turning errors into a message and an exit code."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    try:
        # Outside standalone mode click returns a command's ctx.exit(code) instead of raising.
        code = cli.main(args=argv, prog_name="vault-tool", standalone_mode=False)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except click.ClickException as problem:
        problem.show()
        sys.exit(problem.exit_code)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except VaultError as problem:
        report_error(problem)
        sys.exit(problem.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)


def report_error(problem: VaultError) -> None:
    """An error as JSON on stdout (--json) or as two readable lines on stderr."""
    if _state["json"]:
        click.echo(json.dumps(problem.to_dict(), indent=2, ensure_ascii=False))
        return
    click.secho(f"error: {problem.message}", fg="red", err=True)
    if problem.hint:
        click.echo(f"  fix: {problem.hint}", err=True)
