"""What every command shares: the --vault and --json options, opening the vault, printing.

Whether --json was given lives in click's context (its `meta`, shared by the root context
and every command's), never in a module global, so runs in one process cannot leak into
each other. Commands import this module, never `cli/app.py`.

What is printed may quote file names, titles and ids. The console escapes control,
text-direction and invisible characters in every string it prints (line breaks aside:
the commands lay out their own lines), `shown()` escapes line breaks too for one name,
and JSON carries those characters as JSON escapes (the same data), so nothing from a file
can move the cursor, reorder a line or start a line of its own.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import re
import shlex
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from vault_tool.core import printable

if TYPE_CHECKING:
    from vault_tool.errors import VaultError

_JSON_KEY = "vault_tool.json"


def _note_json(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    if value:
        ctx.meta[_JSON_KEY] = True
    return value


def json_requested(ctx: click.Context | None = None) -> bool:
    """True when the running command was given --json (False outside a command)."""
    ctx = ctx or click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.meta.get(_JSON_KEY))


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

    vault = Vault.open(resolve_vault_path(vault_path), client="cli", catch_up=False)
    try:
        # A running leader keeps the index in step; without one, catch up first.
        if catch_up and vault.leader() is None:
            vault.catch_up(progress=progress_callback("Indexing changed files"))
        yield vault
    finally:
        vault.close()


def emit(data: Any, as_json: bool, render: Callable[[Any], None]) -> None:
    """Print data as JSON, or call render(console) for people."""
    if as_json:
        click.echo(as_json_text(data))
    else:
        render(console())


def as_json_text(data: Any) -> str:
    """data as indented JSON, unsafe characters escaped."""
    return printable.escape_json(json.dumps(data, indent=2, ensure_ascii=False))


def shown(value: Any) -> str:
    """One name, title or id for a line of text: every unsafe character escaped, line
    breaks included."""
    return printable.escape(value)


def shown_in_markup(value: Any) -> str:
    """shown(value) for a string printed with rich markup: its brackets stay text."""
    from rich.markup import escape

    return escape(shown(value))


def console(stderr: bool = False) -> Any:
    """A rich console (imported on first use) that escapes what it is given to print."""
    return _escaping_console()(stderr=stderr, highlight=False, soft_wrap=True)


@functools.cache
def _escaping_console() -> type:
    from rich.console import Console

    class EscapingConsole(Console):
        def render_str(self, text: str, **options: Any) -> Any:
            return super().render_str(printable.escape_except_newlines(text), **options)

        def on_broken_pipe(self) -> None:
            # rich would exit 1 here; the command group ends every closed stdout alike.
            raise BrokenPipeError(errno.EPIPE, "stdout closed")

    return EscapingConsole


def progress_callback(label: str) -> Callable[[int, int], None] | None:
    """A progress bar on stderr for long work, when a person is watching and not in --json."""
    if json_requested() or not sys.stderr.isatty():
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


class Moment(click.ParamType):
    """A --since / --until / --as-of value in the one date grammar (core/times.py),
    resolved to a day or a UTC time; with commits, a commit sha (7 to 40 hex digits) too."""

    name = "moment"

    def __init__(self, *, commits: bool = False) -> None:
        self.commits = commits

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from vault_tool.core.times import CALENDAR, MOMENT_FORMS, OutOfCalendar, parse_moment

        text = str(value)
        if self.commits and _COMMIT.match(text.strip()):
            return text.strip()
        try:
            return parse_moment(text)
        except OutOfCalendar:
            self.fail(f"'{shown(text)}' is out of range: {CALENDAR}", param, ctx)
        except ValueError:
            also = ", or a commit sha from `vault-tool log`" if self.commits else ""
            self.fail(f"'{shown(text)}' is not a date: use {MOMENT_FORMS}{also}", param, ctx)


_COMMIT = re.compile(r"^[0-9a-fA-F]{7,40}\Z")


def report_error(problem: VaultError, as_json: bool) -> None:
    """An error as JSON on stdout (--json) or as two readable lines on stderr."""
    if as_json:
        click.echo(as_json_text(problem.to_dict()))
        return
    click.secho(f"error: {shown(problem.message)}", fg="red", err=True)
    if problem.hint:
        click.echo(f"  fix: {pasteable(shown(problem.hint))}", err=True)


def pasteable(text: str) -> str:
    """Text naming `vault-tool` commands, with each named as this one can be run again."""
    name = program()
    return text if name == "vault-tool" else re.sub(r"(?<![\w/.-])vault-tool(?= )", name, text)


def program() -> str:
    """How to run this vault-tool again, for hints a person pastes: `vault-tool` when the
    shell finds this one by that name, else the path it was started by (.venv/bin/...)."""
    import shutil
    import sys

    started = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if started is None or started.name != "vault-tool":
        return "vault-tool"
    found = shutil.which("vault-tool")
    if found and Path(found).resolve() == started.resolve():
        return "vault-tool"
    return shlex.quote(str(started))


def filter_arguments(
    memory_types: tuple[str, ...],
    tags: tuple[str, ...],
    since: str | None,
    until: str | None,
    project: str | None = None,
) -> dict[str, Any]:
    """The --type/--tag/--since/--until/--project options as search's arguments (only those
    given)."""
    given = {
        "memory_types": list(memory_types),
        "tags": list(tags),
        "since": since,
        "until": until,
        "project": project,
    }
    return {name: value for name, value in given.items() if value}
