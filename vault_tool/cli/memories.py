"""Reading, writing and reviewing memories: show, history, restore, log, remember."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from vault_tool.cli.output import (
    Moment,
    emit,
    open_vault,
    shown,
    shown_in_markup,
    vault_options,
)
from vault_tool.core.printable import command
from vault_tool.core.times import parse_time


@click.command()
@click.argument("memory_id")
@click.option(
    "--version",
    "version",
    metavar="SHA",
    help="Show the memory as of this version (7 or more digits of a sha from `history`).",
)
@vault_options
def show(memory_id: str, version: str | None, vault_path: str | None, as_json: bool) -> None:
    """Show one memory: its file as written, with id, version and path, then where its
    links lead and which notes link to it (resolved as the notes are now).

    A deleted memory shows its last version, with when and by whom it was deleted.
    """
    with open_vault(vault_path) as vault:
        result = vault.show(memory_id, version)
    file_text = result["file"]

    def render(out: Any) -> None:
        where = f"{result['memory_id']}  version {result['version_id'][:10]}  {result['path']}"
        out.print(f"[dim]{shown_in_markup(where)}[/dim]")
        if "deleted" in result:
            out.print(f"[yellow]{shown_in_markup(_deleted_line(result['deleted']))}[/yellow]")
        out.print(file_text, markup=False, end="")
        if version is None:  # (links are resolved as the notes are now)
            for line in _link_lines(result):
                out.print(line, markup=False, highlight=False)

    emit(result, as_json, render)


def _link_lines(result: dict[str, Any]) -> list[str]:
    """Where a memory's links lead and which notes link to it, for `show`."""
    lines = []
    if result.get("links"):
        lines.append("\nlinks:")
        for link in result["links"]:
            to = _note_label(link) if "memory_id" in link else "(no note has this name)"
            lines.append(f"  {shown(link['link'])}  -> {to}")
    if result.get("backlinks"):
        total = result.get("backlink_count", len(result["backlinks"]))
        lines.append(f"\nlinked from ({total}):")
        lines += [f"  {_note_label(note)}" for note in result["backlinks"]]
    return lines


def _note_label(note: dict[str, Any]) -> str:
    """A linked note's id and title; once, when its id is its title (a note named by its
    file at the vault's top)."""
    if note["memory_id"] == note["title"]:
        return shown(note["memory_id"])
    return f"{shown(note['memory_id'])}  {shown(note['title'])}"


@click.command()
@click.argument("memory_id")
@click.option("--patch", "-p", is_flag=True, help="Show what each version changed.")
@vault_options
def history(memory_id: str, patch: bool, vault_path: str | None, as_json: bool) -> None:
    """Every version of a memory, newest first: commit, date, author, client, message.

    The versions follow the memory across its moves, deletes and restores (each with the
    path its file had); a deleted memory's history ends with the commit that deleted it.
    """
    with open_vault(vault_path) as vault:
        versions = vault.history(memory_id, patch=patch)

    def render(out: Any) -> None:
        if not patch:
            _print_commits(out, versions)
            return
        for entry in versions:
            out.print(_commit_lines(entry))
            out.print(entry["patch"], markup=False)

    emit(versions, as_json, render)


@click.command()
@click.argument("memory_id")
@click.argument("version", required=False)
@vault_options
def restore(memory_id: str, version: str | None, vault_path: str | None, as_json: bool) -> None:
    """Bring a memory back to an earlier VERSION, as one new commit.

    VERSION is a sha from `history`, or 7 or more of its first digits. A deleted memory
    (see `vault-tool deleted`) comes back with its id, by default as its last version was.
    """
    with open_vault(vault_path) as vault:
        result = vault.restore(memory_id, version)

    def render(out: Any) -> None:
        if result["status"] == "unchanged":
            out.print("Already at that version; nothing to commit.")
        else:
            out.print(f"Restored {shown_in_markup(result['path'])} in {result['version_id'][:10]}")

    emit(result, as_json, render)


@click.command()
@vault_options
def deleted(vault_path: str | None, as_json: bool) -> None:
    """Memories deleted by an agent or a person, last deleted first: id, title, when, by
    whom, and the last version (`vault-tool restore ID` brings one back)."""
    with open_vault(vault_path) as vault:
        found = vault.deleted()

    def render(out: Any) -> None:
        # Two lines a memory, not a table: at 80 columns a table squeezes the title away.
        if not found:
            out.print("No memory has been deleted.")
            return
        for entry in found:
            title = shown_in_markup(f"{entry['memory_type']}: {entry['title']}")
            out.print(f"[bold]{shown_in_markup(entry['memory_id'])}[/bold]  {title}")
            when = entry["date"][:16].replace("T", " ")
            who = shown_in_markup(entry["client"] or entry["author"])
            version = (entry["last_version"] or "")[:10]
            out.print(f"  deleted {when} by {who} · last version {version}")

    emit(found, as_json, render)


def _deleted_line(entry: dict[str, Any]) -> str:
    when = entry["date"][:16].replace("T", " ")
    who = entry["client"] or entry["author"]
    return (
        f"deleted {when} by {who} in {entry['deleted_in'][:10]}; "
        f"`{command('restore', entry['memory_id'])}` brings it back"
    )


@click.command()
@click.option("--limit", "-n", default=30, show_default=True, help="How many commits to show.")
@click.option("--client", metavar="NAME", help="Only commits made by this client (agent or tool).")
@click.option(
    "--since",
    type=Moment(),
    metavar="DATE",
    help="Only commits since DATE (2026-03-15, an ISO time, today, yesterday, 7d, 2w, 3m).",
)
@click.option("--type", "memory_type", metavar="TYPE", help="Only writes of memories of this type.")
@vault_options
def log(
    limit: int,
    client: str | None,
    since: str | None,
    memory_type: str | None,
    vault_path: str | None,
    as_json: bool,
) -> None:
    """The vault's changelog: every write, hand edit and repair, newest first.

    To review what one agent wrote today in plain git: git log --since=midnight
    --grep 'Client: claude-code' --stat
    """
    with open_vault(vault_path, catch_up=False) as vault:
        # As seconds since the epoch: git reads a bare day as that day at the current time.
        start = f"@{int(parse_time(since).timestamp())}" if since else None
        commits = vault.log(limit=limit, client=client, since=start, memory_type=memory_type)
    emit(commits, as_json, lambda out: _print_commits(out, commits))


@click.command("remember")
@click.argument("file", type=click.File("r", encoding="utf-8"))
@click.option(
    "--id", "memory_id", metavar="ID", help="Update this memory (default: the file's id, if any)."
)
@click.option(
    "--expected-version",
    metavar="SHA",
    help="Refuse the update unless the memory is still at this version "
    "[default: its current version].",
)
@click.option(
    "--client",
    default="cli",
    show_default=True,
    help="Name recorded in the commit's Client trailer.",
)
@vault_options
def remember_file(
    file: Any,
    memory_id: str | None,
    expected_version: str | None,
    client: str,
    vault_path: str | None,
    as_json: bool,
) -> None:
    """Create or update a memory from a Markdown FILE (or - for stdin).

    The front matter holds the semantic delta (memory_type, title, entities, facts, tags,
    ...) and the body starts with an H1. A file whose front matter has an id that is in
    the vault updates that memory; otherwise a new memory is created, and its id is
    written into FILE's front matter so that running the command again updates it.
    """
    from vault_tool.core.memory import MAX_FILE_BYTES, parse

    name = getattr(file, "name", "-")
    # (enough to be refused as too large: never all of a file far larger)
    draft = parse(file.read(MAX_FILE_BYTES + 1), name if name != "<stdin>" else "-")
    delta = draft.semantic_delta()
    with open_vault(vault_path) as vault:
        target = memory_id or (draft.id if draft.id and vault.find(draft.id) else None)
        if target:
            version = expected_version or vault.read(target)["version_id"]
            args = {"mode": "update", "memory_id": target, "expected_version_id": version}
        else:
            args = {"mode": "create"}
        result = vault.remember(
            {**args, "content_md": draft.body, "semantic_delta": delta}, client=client
        )

    if result["status"] == "created" and name not in ("-", "<stdin>") and draft.id is None:
        _write_id_into(Path(name), result["memory_id"])

    def render(out: Any) -> None:
        named = shown_in_markup(f"{result['memory_id']} ({result['path']})")
        out.print(f"{result['status'].capitalize()} {named}")
        out.print(f"[dim]version {result['version_id']}[/dim]")
        for other in result.get("similar", ()):
            like = f"{other['memory_id']} {other['title']!r} (version {other['version_id'][:10]})"
            out.print(f"[yellow]Similar: {shown_in_markup(like)}; update that one instead "
                      "if it is the same memory[/yellow]")  # fmt: skip
        for item in result["redactions"]:
            out.print(
                f"[yellow]Redacted {item['count']} {item['kind']} in {item['field']}[/yellow]"
            )

    emit(result, as_json, render)


def _write_id_into(path: Path, memory_id: str) -> None:
    """Add `id:` as the first front matter line of path, leaving every other byte as it was."""
    text = path.read_bytes()
    newline = b"\r\n" if text.startswith(b"---\r\n") else b"\n"
    opening = b"---" + newline
    if text.startswith(opening):
        path.write_bytes(opening + b"id: " + memory_id.encode() + newline + text[len(opening) :])


# A table's message column narrower than this is a column of single words: below it, each
# commit gets two lines instead.
MIN_MESSAGE_WIDTH = 30


def _print_commits(out: Any, commits: list[dict[str, Any]]) -> None:
    """Commits as a table when the whole author and client fit beside a readable message,
    else two lines a commit: nothing is ever cut (the message may wrap)."""
    if not commits:
        out.print("No commits match.")
        return
    table = _commit_table(commits, out.width)
    if table is None:
        for c in commits:
            out.print(_commit_lines(c))
    else:
        out.print(table)


def _commit_table(commits: list[dict[str, Any]], width: int) -> Any:
    """The table, or None when it would not fit in width columns."""
    from rich.table import Table

    author = max(len(shown(c["author"])) for c in commits)
    client = max(len("client"), *(len(shown(c["client"] or "")) for c in commits))
    # version, date, author, client and message, two columns of space between each.
    if 10 + 19 + author + client + MIN_MESSAGE_WIDTH + 4 * 2 > width:
        return None
    table = Table(box=None, pad_edge=False)
    for column in ("version", "date", "author", "client"):
        table.add_column(column, no_wrap=True)
    table.add_column("message", min_width=MIN_MESSAGE_WIDTH)
    for c in commits:
        table.add_row(
            c["version_id"][:10],
            _date(c),
            shown_in_markup(c["author"]),
            shown_in_markup(c["client"] or ""),
            shown_in_markup(c["subject"]),
        )
    return table


def _commit_lines(c: dict[str, Any]) -> str:
    """A commit in two lines: version, date, the whole author and client; then its message."""
    who = shown_in_markup(f"{c['author']} ({c['client'] or '-'})")
    return (
        f"[bold]{c['version_id'][:10]}[/bold]  {_date(c)}  {who}\n  {shown_in_markup(c['subject'])}"
    )


def _date(c: dict[str, Any]) -> str:
    return str(c["date"])[:19].replace("T", " ")


@click.command()
@click.argument("span", metavar="[RANGE]", required=False)
@click.option("--client", metavar="NAME", help="Revert this client's commits (an agent, cli).")
@click.option("--since", type=Moment(), metavar="DATE", help="With --client: commits since DATE.")
@click.option("--until", type=Moment(), metavar="DATE", help="With --client: commits up to DATE.")
@click.option("--dry-run", is_flag=True, help="Print what the revert would do; change nothing.")
@vault_options
def revert(
    span: str | None,
    client: str | None,
    since: str | None,
    until: str | None,
    dry_run: bool,
    vault_path: str | None,
    as_json: bool,
) -> None:
    """Put back every memory a RANGE of commits (or a client's session) changed, as one commit.

    RANGE is a git range (`HEAD~5..HEAD`, `origin/main..HEAD`) or one commit; or name the
    session: --client NAME with --since/--until. A memory the range made is deleted, one it
    deleted comes back, one it moved goes back to its path. A memory changed after the range
    (by a person or another client) is not overwritten: it is reverted only where the
    memory merge keeps both changes without a conflict, and listed as kept otherwise.
    """
    with open_vault(vault_path) as vault:
        plan = vault.revert(span, client=client, since=since, until=until, dry_run=dry_run)
    result = plan.to_dict()

    def render(out: Any) -> None:
        files = result["files"]
        done = [f for f in files if f["outcome"] != "kept" and f["change"] != "unchanged"]
        if dry_run:
            from vault_tool.cli.changes import render_terminal

            render_terminal(result["review"], out)  # (what would change, as review shows it)
            out.print(f"Would revert {len(done)} of {len(files)} memories (nothing written):")
        elif result["version_id"]:
            out.print(f"Reverted {len(done)} memories in {result['version_id'][:10]}:")
        else:
            out.print("Nothing to revert: every memory is as it was before the range.")
        for f in files:
            line = f"  {f['outcome']:<8} {f['change']:<9} {f['path']} ({f['title']})"
            if f["reason"]:
                line += f": {f['reason']}"
            out.print(shown_in_markup(line), highlight=False)

    emit(result, as_json, render)


COMMANDS = [show, history, restore, revert, deleted, log, remember_file]
