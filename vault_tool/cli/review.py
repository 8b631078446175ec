"""Reviewing and curating: blame, feedback, expire, dismiss, undismiss."""

from __future__ import annotations

from typing import Any

import click

from vault_tool.cli.output import emit, open_vault, shown_in_markup, vault_options


@click.command()
@click.argument("memory_id")
@vault_options
def blame(memory_id: str, vault_path: str | None, as_json: bool) -> None:
    """Which commit, date and client asserted each fact of a memory.

    A move never takes the credit: versions are followed across moves and restores. A
    deleted memory's facts are those of its last version.
    """
    with open_vault(vault_path) as vault:
        lines = vault.blame(memory_id)

    def render(out: Any) -> None:
        from rich.table import Table

        if not lines:
            out.print(
                f"{shown_in_markup(memory_id)} has no facts: blame shows which version "
                "asserted each fact in a memory's `facts`; `vault-tool history "
                f"{shown_in_markup(memory_id)}` shows every version of it.",
                highlight=False,
            )
            return
        table = Table(box=None, pad_edge=False)
        for column in ("fact", "version", "date", "client"):
            table.add_column(column, no_wrap=column != "fact")
        for line in lines:
            fact = f"{line['subject']} {line['predicate']} {line['object']}"
            when = (line["date"] or "")[:10]
            table.add_row(
                shown_in_markup(fact),
                line["version_id"][:10] if line["version_id"] else "uncommitted",
                when,
                shown_in_markup(line["client"] or ""),
            )
        out.print(table)

    emit(lines, as_json, render)


@click.command()
@click.argument("handle")
@click.option("--helpful", multiple=True, metavar="ID", help="A result that helped (repeatable).")
@click.option(
    "--unhelpful", multiple=True, metavar="ID", help="A result that did not (repeatable)."
)
@vault_options
def feedback(
    handle: str,
    helpful: tuple[str, ...],
    unhelpful: tuple[str, ...],
    vault_path: str | None,
    as_json: bool,
) -> None:
    """Mark which results of a logged search (HANDLE from `vault-tool ledger`) helped.

    Ranking learns from it: a judged memory moves up (or down) by at most a quarter of the
    best text score, for queries sharing words with the judged one (most for a rewording of
    it; not at all for unrelated ones). `search --explain` shows it.
    """
    with open_vault(vault_path, catch_up=False) as vault:
        result = vault.feedback(handle, list(helpful), list(unhelpful))

    def render(out: Any) -> None:
        out.print(
            f"Recorded feedback on {handle!r} ({result['query']}): "
            f"{len(helpful)} helpful, {len(unhelpful)} unhelpful."
        )

    emit(result, as_json, render)


@click.command()
@click.option("--dry-run", is_flag=True, help="Show the diff and change nothing.")
@vault_options
def expire(dry_run: bool, vault_path: str | None, as_json: bool) -> None:
    """Delete memories whose expires_at has passed, in one commit (history keeps them)."""
    with open_vault(vault_path) as vault:
        result = vault.expire(dry_run=dry_run)
    _emit_plan(result, dry_run, as_json, "Expired")


@click.command()
@click.argument("memory_id")
@click.option("--dry-run", is_flag=True, help="Show the diff and change nothing.")
@click.option("--reason", metavar="TEXT", help="Why, in one line: kept in the commit's message.")
@vault_options
def dismiss(
    memory_id: str, dry_run: bool, reason: str | None, vault_path: str | None, as_json: bool
) -> None:
    """Hide a memory from search (status: dismissed); it stays in the vault and in git."""
    with open_vault(vault_path) as vault:
        result = vault.set_status(memory_id, "dismissed", dry_run=dry_run, reason=reason)
    _emit_plan(result, dry_run, as_json, "Dismissed")


@click.command()
@click.argument("memory_id")
@click.option("--dry-run", is_flag=True, help="Show the diff and change nothing.")
@click.option("--reason", metavar="TEXT", help="Why, in one line: kept in the commit's message.")
@vault_options
def undismiss(
    memory_id: str, dry_run: bool, reason: str | None, vault_path: str | None, as_json: bool
) -> None:
    """Make a dismissed memory searchable again."""
    with open_vault(vault_path) as vault:
        result = vault.set_status(memory_id, "active", dry_run=dry_run, reason=reason)
    _emit_plan(result, dry_run, as_json, "Undismissed")


def _emit_plan(result: Any, dry_run: bool, as_json: bool, done: str) -> None:
    data = {"paths": result.paths, "version_id": result.version_id, "dry_run": dry_run}
    if dry_run:
        data["diff"] = result.diff

    def render(out: Any) -> None:
        if dry_run:
            out.print(result.diff or "Nothing to change.\n", markup=False, end="")
        elif not result.paths:
            out.print("Nothing to change.")
        else:
            out.print(f"{done} {len(result.paths)} file(s) in {result.version_id[:10]}.")

    emit(data, as_json, render)


COMMANDS = [blame, feedback, expire, dismiss, undismiss]
