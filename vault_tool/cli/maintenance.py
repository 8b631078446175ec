"""Keeping the vault in step: reindex, watch, commit."""

from __future__ import annotations

import json
import signal
import threading
from typing import Any

import click

from vault_tool.cli.output import (
    emit,
    open_vault,
    progress_callback,
    shown_in_markup,
    vault_options,
)
from vault_tool.core import printable


@click.command()
@vault_options
def reindex(vault_path: str | None, as_json: bool) -> None:
    """Rebuild the search index from the files (the index is only a cache)."""
    with open_vault(vault_path, catch_up=False) as vault:
        report = vault.reindex(progress=progress_callback("Indexing"))
    result = {"indexed": len(report.indexed), "problems": report.problems}

    def render(out: Any) -> None:
        out.print(f"Indexed {len(report.indexed)} memories.")
        for path, problem in report.problems.items():
            where = f"{shown_in_markup(path)}:{problem['line'] or ''}"
            out.print(f"[yellow]{where} {shown_in_markup(problem['reason'])}[/yellow]")

    emit(result, as_json, render)


@click.command()
@vault_options
def watch(vault_path: str | None, as_json: bool) -> None:
    """Watch the folder in the foreground: index and commit hand edits until Ctrl-C.

    Servers already do this; use it when you edit by hand with no server running. If
    another process leads the watching, this one stands by and takes over if it stops.
    While it leads, it syncs with the remote as often as `[sync] every` in
    .vault/config.toml or a running server's --sync-every asks (docs/team.md).
    Prints a line for each commit it makes, each file it refuses or cannot read, and each
    secret it keeps out of git (--json: one JSON object a line, with an `event` field).
    """
    from vault_tool.server.background_sync import BackgroundSync
    from vault_tool.watcher import Watcher, narration

    def tell(event: dict[str, Any]) -> None:
        if as_json:
            click.echo(printable.escape_json(json.dumps(event, ensure_ascii=False)))
        else:
            click.echo(narration(event))

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with open_vault(vault_path, catch_up=False) as vault:
        watcher = Watcher(vault, narrate=tell).start()
        # Leading, it syncs as often as [sync] every or a server's --sync-every asks.
        syncer = BackgroundSync(vault, watcher.leading, vault.settings.sync_every_seconds)
        syncer.start()
        if not as_json:
            click.echo(f"Watching {vault.root} (Ctrl-C to stop)", err=True)
        try:
            stop.wait()
        except KeyboardInterrupt:
            pass
        finally:
            syncer.stop()
            watcher.stop()


@click.command()
@vault_options
def commit(vault_path: str | None, as_json: bool) -> None:
    """Commit hand edits now, one commit saying what happened to each memory.

    `Hand edit: <title>` for a new or changed file, `Delete <type>: <title> (hand edit)`
    for a deleted one, `Move <type>: <title> (old -> new)` for a moved or renamed one;
    `Hand edit <n> memories` listing each for several (deletes that are no move's: a
    commit of their own).

    For vaults with auto_commit = false in .vault/config.toml. A file that does not
    parse, holds a secret or has a name that cannot serve is left uncommitted and listed
    with its fix; the exit code is then 10 (0 when every file was taken in).
    """
    from vault_tool.errors import LEFT_UNCOMMITTED

    with open_vault(vault_path, catch_up=False) as vault:
        report = vault.commit_hand_edits()
    commits = [
        {"version_id": c.sha, "subject": c.subject, "memory_id": c.memory_id, "paths": c.paths}
        for c in report.commits
    ]
    result = {
        "committed": report.indexed + report.removed,
        "commits": commits,
        "problems": report.problems,
    }

    def render(out: Any) -> None:
        count = len(commits)
        out.print(
            f"Committed {count} change{'' if count == 1 else 's'}."
            if count
            else "Nothing to commit."
        )
        for done in commits:
            out.print(f"  {done['version_id'][:10]} {shown_in_markup(done['subject'])}")
        if report.problems:
            left = len(report.problems)
            files = f"{left} file{'' if left == 1 else 's'}"
            out.print(
                f"[yellow]Left {files} uncommitted (fix as shown, then commit again):[/yellow]"
            )
        for path, problem in report.problems.items():
            line = f":{problem['line']}" if problem["line"] else ""
            out.print(f"  [yellow]{shown_in_markup(path)}{line}[/yellow]  "
                      f"{shown_in_markup(problem['reason'])}")  # fmt: skip
            out.print(f"    fix: {shown_in_markup(problem['hint'])}", highlight=False)

    emit(result, as_json, render)
    if report.problems:
        click.get_current_context().exit(LEFT_UNCOMMITTED)


COMMANDS = [reindex, watch, commit]
