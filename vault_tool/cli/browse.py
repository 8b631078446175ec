"""Browsing the vault: list, newest first, without a query."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from vault_tool.cli.output import (
    Moment,
    emit,
    filter_arguments,
    open_vault,
    shown_in_markup,
    vault_options,
)

if TYPE_CHECKING:
    from vault_tool.engine.vault import Vault


@click.command("list")
@click.option(
    "--type",
    "memory_types",
    multiple=True,
    metavar="TYPE",
    help="Only memories of this type (repeatable: any of them).",
)
@click.option(
    "--tag",
    "tags",
    multiple=True,
    metavar="TAG",
    help="Only memories with this tag (repeatable: all of them).",
)
@click.option(
    "--project",
    metavar="NAME",
    help="Only the memories of this project (docs/projects.md).",
)
@click.option(
    "--since",
    type=Moment(),
    metavar="DATE",
    help="Only memories changed (a hand edit, a restore: at its commit; with --deleted: "
    "deleted) on or after DATE (2026-03-15, an ISO time, today, yesterday, 7d, 2w, 3m).",
)
@click.option(
    "--until",
    type=Moment(),
    metavar="DATE",
    help="Only memories changed (with --deleted: deleted) on or before DATE (a day counts "
    "to its end).",
)
@click.option("--deleted", is_flag=True, help="List deleted memories instead, last deleted first.")
@click.option(
    "--limit",
    "-n",
    type=click.IntRange(min=1),
    metavar="N",
    default=20,
    show_default=True,
    help="How many memories.",
)
@click.option(
    "--offset",
    type=click.IntRange(min=0),
    metavar="N",
    default=0,
    show_default=True,
    help="Skip this many of the newest first (the next page: --offset 20).",
)
@vault_options
def list_memories(
    memory_types: tuple[str, ...],
    tags: tuple[str, ...],
    project: str | None,
    since: str | None,
    until: str | None,
    deleted: bool,
    limit: int,
    offset: int,
    vault_path: str | None,
    as_json: bool,
) -> None:
    """List memories, newest first by when they were last updated: one a line, with id,
    type, title and time.

    What changed this week: `vault-tool list --since 7d`. Narrow with --type, --tag,
    --since and --until (they all hold); page with -n and --offset. Dismissed and expired
    memories are left out, as search leaves them out. --json prints the list, each with
    memory_id, version_id, memory_type, title, path, tags, created and updated.

    With --deleted, the memories that were deleted, last deleted first: the entries of
    `vault-tool deleted` (`vault-tool restore ID` brings one back). --type narrows them,
    --since and --until by when they were deleted; --tag does not apply, as a deleted
    memory is no longer indexed.

    To find memories by what they say, use `vault-tool search`: its query takes type: and
    tag: too, and a query of those alone lists the same way.
    """
    if deleted and project:
        raise click.UsageError("--project does not apply with --deleted")
    if deleted and tags:
        raise click.UsageError(
            "--tag does not apply with --deleted: a deleted memory is no longer indexed "
            "(`vault-tool show ID` shows its last version, tags and all)"
        )
    filters: dict[str, Any] = {}
    filters.update(filter_arguments(memory_types, tags, since, until, project))
    with open_vault(vault_path) as vault:
        if deleted:
            found = _deleted(vault, filters)
            total, page = len(found), found[offset : offset + limit]
        else:
            listed = vault.listing(filters, limit=limit, offset=offset)
            total, page = listed["total"], listed["memories"]
        empty = not deleted and total == 0 and vault.count() == 0

    def render(out: Any) -> None:
        if not page:
            out.print(_nothing(deleted, empty, bool(filters), total))
            return
        width = max(len(entry["memory_type"]) for entry in page)
        for entry in page:
            memory_id = shown_in_markup(entry["memory_id"])
            kind = shown_in_markup(entry["memory_type"].ljust(width))
            title = shown_in_markup(entry["title"])
            if deleted:
                who = shown_in_markup(entry["client"] or entry["author"])
                when = f"deleted {_time(entry['date'])} by {who}"
            else:
                when = f"updated {_time(entry['updated'])}"
            out.print(f"{memory_id}  {kind}  [bold]{title}[/bold]  [dim]{when}[/dim]")
        out.print(_page_line(offset, len(page), total, deleted))

    emit(page, as_json, render)


def _deleted(vault: Vault, filters: dict[str, Any]) -> list[dict[str, Any]]:
    """Vault.deleted(), narrowed by type and by when each was deleted."""
    from vault_tool.core.times import end_of, parse_time

    types = set(filters.get("memory_types", ()))
    start = parse_time(filters["since"]) if "since" in filters else None
    end = end_of(filters["until"]) if "until" in filters else None
    return [
        entry
        for entry in vault.deleted()
        if (not types or entry["memory_type"] in types)
        and (start is None or parse_time(entry["date"]) >= start)
        and (end is None or parse_time(entry["date"]) <= end)
    ]


def _time(value: str) -> str:
    """A stored time as a person reads it: 2026-06-11 16:20 (UTC, as the files hold it)."""
    return value[:16].replace("T", " ")


def _nothing(deleted: bool, empty: bool, narrowed: bool, total: int) -> str:
    if total:
        return f"Nothing at this offset: there are {total} (a smaller --offset shows them)."
    if deleted:
        return (
            "No deleted memory matches these filters."
            if narrowed
            else ("No memory has been deleted.")
        )
    if empty:
        return "The vault has no memories yet."
    return "No memory matches these filters."


def _page_line(offset: int, shown: int, total: int, deleted: bool) -> str:
    """What the lines are and how to see the next ones."""
    order = "last deleted first" if deleted else "newest first"
    noun = "deleted memor" if deleted else "memor"
    if offset == 0 and shown == total:
        return f"{total} {noun}{'y' if total == 1 else 'ies'}, {order}."
    line = f"{noun.capitalize()}ies {offset + 1}-{offset + shown} of {total}, {order}"
    if offset + shown < total:
        line += f" (--offset {offset + shown} shows the next)"
    return line + "."


COMMANDS = [list_memories]
