"""Finding memories and reviewing retrievals: search, ledger."""

from __future__ import annotations

from typing import Any

import click

from vault_tool.cli.output import (
    Moment,
    emit,
    filter_arguments,
    open_vault,
    program,
    progress_callback,
    shown_in_markup,
    vault_options,
)
from vault_tool.core.search_call import ORDERS
from vault_tool.core.times import utc_now


class QueryCommand(click.Command):
    """search, whose query may hold -word: a -word among the options is explained."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        given = list(args)  # (click's parser takes the arguments off the list it is given)
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as problem:
            if problem.option_name.startswith("--"):
                raise  # a mistyped option: click's own message says which ones there are
            word = next((a for a in given if a.startswith(problem.option_name)), "-word")
            raise click.UsageError(
                f"{problem.format_message()} ({word} in a query leaves out memories holding "
                f'it: put the whole query in quotes, "billing {word}", or after --: '
                f"{program()} search -- billing {word})",
                ctx,
            ) from None


@click.command(cls=QueryCommand)
@click.argument("query", nargs=-1)
@click.option(
    "--limit",
    "-n",
    "--top-k",
    "-k",
    "top_k",
    type=int,
    default=5,
    show_default=True,
    help="How many hits (-n/--limit, as in log and ledger; -k/--top-k is the same).",
)
@click.option(
    "--max-bytes", type=int, default=12000, show_default=True, help="Total content budget."
)
@click.option(
    "--type",
    "memory_types",
    multiple=True,
    metavar="TYPE",
    help="Only this memory type (repeatable).",
)
@click.option(
    "--tag",
    "tags",
    multiple=True,
    metavar="TAG",
    help="Only memories with this tag (repeatable: all).",
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
    help="Only memories changed on or after DATE (a hand edit, a restore: at its commit; "
    "2026-03-15, an ISO time, today, yesterday, 7d, 2w, 3m).",
)
@click.option(
    "--until",
    type=Moment(),
    metavar="DATE",
    help="Only memories changed on or before DATE (a day counts to its end).",
)
@click.option(
    "--offset", type=click.IntRange(0, 1000), default=0, help="Skip this many hits (a later page)."
)
@click.option(
    "--order",
    type=click.Choice(ORDERS),
    default="relevance",
    show_default=True,
    help="Best first, or by when each memory was last updated.",
)
@click.option(
    "--key",
    metavar="KEY",
    help="Look up the memory with this key exactly (staging.region), instead of a QUERY.",
)
@click.option("--explain", is_flag=True, help="Show every part of each hit's score.")
@click.option(
    "--as-of",
    "as_of",
    type=Moment(commits=True),
    metavar="DATE|COMMIT",
    help="Search the vault as it was then (the end of DATE, or a commit), with the facts "
    "valid on that day (not recorded).",
)
@vault_options
def search(
    query: tuple[str, ...],
    top_k: int,
    max_bytes: int,
    memory_types: tuple[str, ...],
    tags: tuple[str, ...],
    project: str | None,
    since: str | None,
    until: str | None,
    offset: int,
    order: str,
    key: str | None,
    explain: bool,
    as_of: str | None,
    vault_path: str | None,
    as_json: bool,
) -> None:
    """Search memories by QUERY, best first (the same ranking agents get over MCP).

    QUERY is words (a memory needs only some of them), and may hold: "a phrase" (only
    memories with these words adjacent, in order), -word or -"a phrase" (leave out
    memories holding it), type:TYPE (as --type) and tag:NAME (as --tag). A query of
    filters alone (`type:decision`, `'*' --since 7d`: * is every memory) lists what they
    leave, newest first. Quote the query, or put it after --, when it holds a -word:
    `vault-tool search -- billing -draft`. A malformed query (an unclosed quote, an unknown
    type) is refused with what was wrong.

    --key KEY looks a memory up by its key instead (not recorded; a miss says no memory
    has it). --offset N skips the first N hits (the count line names the next page's), and
    --order newest|oldest orders what the query matches by when each was last updated.

    The query is recorded in the retrieval ledger (see `vault-tool ledger`). With
    --as-of, the vault is searched as git held it at that date or commit, and each hit
    shows only the facts valid on that day.
    """
    if bool(query) == bool(key):
        raise click.UsageError("give a QUERY or --key KEY (one of them)")
    args: dict[str, Any] = {"maximum_context_bytes": max_bytes}
    if key:
        args["key"] = key
    else:
        args.update(query=" ".join(query), top_k=top_k)
        args.update({"offset": offset} if offset else {})
        args.update({"order": order} if order != "relevance" else {})
        args.update(filter_arguments(memory_types, tags, since, until, project))
    with open_vault(vault_path) as vault:
        if as_of:
            progress = progress_callback("Reading the vault as it was")
            result = vault.search_as_of(args, as_of, explain=explain, progress=progress)
        else:
            result = vault.search(args, explain=explain)

    from vault_tool.core.query import parse_query

    lists = not key and parse_query(args["query"]).lists  # filters alone: listed newest first
    # A fact has ended if its last day is before today, or before the day searched as of.
    day = (result["as_of"]["moment"] if "as_of" in result else utc_now())[:10]

    def render(out: Any) -> None:
        if "as_of" in result:
            moment = result["as_of"]
            out.print(f"[dim]As of {moment['moment']} (commit {moment['version_id'][:10]})[/dim]")
        if not result["selected_hits"]:
            out.print(_nothing(result))
            return
        for n, hit in enumerate(result["selected_hits"], 1):
            memory_id, path = shown_in_markup(hit["memory_id"]), shown_in_markup(hit["path"])
            about = f"{hit['memory_type']} · {memory_id}"
            if explain:  # a score means something only beside its parts
                about += f" · score {hit['score']}"
            where = f"{path} · version {hit['version_id'][:10]} · updated {hit['updated']}"
            out.print(f"[bold]{n}. {shown_in_markup(hit['title'])}[/bold]  [dim]{about}[/dim]")
            out.print(f"   [dim]{where}[/dim]")
            if hit.get("problem"):
                out.print(f"   [yellow]{_problem_line(hit['problem'])}[/yellow]")
            if hit.get("superseded_by"):
                by = shown_in_markup(", ".join(hit["superseded_by"]))
                out.print(f"   [yellow]superseded by {by}[/yellow]")
            for fact in hit["facts"]:
                line = (
                    f"· {shown_in_markup(fact['subject'])} [italic]{fact['predicate']}"
                    f"[/italic] {shown_in_markup(fact['object'])}"
                )
                out.print(f"   {line}{_validity(fact, day)}")
            if explain:
                out.print(f"   [cyan]{_score_line(hit['score_parts'])}[/cyan]")
        shown, total = len(result["selected_hits"]), result["total_matches"]
        if key:
            counted = f"The memory with key {shown_in_markup(key)}."
        elif offset or order != "relevance":
            counted = _page_line(result, offset, order)
        else:
            counted = _listed_line(shown, total) if lists else _count_line(shown, total)
        out.print(f"[dim]{counted}[/dim]")

    emit(result, as_json, render)


def _nothing(result: dict[str, Any]) -> str:
    if result.get("reason") == "no_such_key":
        return f"No memory has key {shown_in_markup(result['key'])}."
    if result.get("reason") == "empty_vault":
        return "The vault has no memories yet."
    if result["total_matches"]:
        return f"No more: the {result['total_matches']} matching memories were on earlier pages."
    return "Nothing relevant found."


def _score_line(parts: dict[str, float]) -> str:
    """A hit's score as ranking adds and multiplies it (search/ranking.py Hit.score)."""
    names = ["text", "context", "entity", "about", "feedback", "valid_time"]
    names += ["meaning"] * ("meaning" in parts)
    added = " + ".join(f"{name} {parts.get(name, 0.0):.3f}" for name in names)
    return f"score = ({added}) x factor {parts.get('factor', 1.0):.3f}"


def _count_line(shown: int, total: int) -> str:
    """What the hit count counts: the memories that hold any word of the query."""
    noun = "memory holds" if total == 1 else "memories hold"
    line = f"{total} {noun} words of the query"
    if total > shown:
        best = "the best is" if shown == 1 else f"the best {shown} are"
        line += f"; {best} shown (-n N shows more)"
    return line


def _listed_line(shown: int, total: int) -> str:
    """What the count of a query of filters alone counts: the memories they leave."""
    line = f"{total} {'memory matches' if total == 1 else 'memories match'}"
    if total > shown:
        return f"{line}; the newest {shown} are shown (-n N shows more)"
    return f"{line}, newest first."


def _page_line(result: dict[str, Any], offset: int, order: str) -> str:
    """The count of a page past the first, or of hits in time order: which ones these are."""
    shown, total = len(result["selected_hits"]), result["total_matches"]
    ordered = "best first" if order == "relevance" else f"{order} first"
    line = f"{total} {'memory matches' if total == 1 else 'memories match'}; "
    line += f"{offset + 1} to {offset + shown} shown, {ordered}"
    return line + (f" (--offset {result['next_offset']} for more)" if result["has_more"] else "")


def _problem_line(problem: dict[str, Any]) -> str:
    """A hit whose file does not parse: what is wrong, and that this is its last good version."""
    at = f"{problem['file']}:{problem['line']}" if problem.get("line") else problem["file"]
    return shown_in_markup(
        f"{at} does not parse ({problem['reason']}): shown as it last did; fix the file:"
        f" {problem['hint']}"
    )


def _validity(fact: dict[str, Any], day: str) -> str:
    """The days a fact holds on, as a suffix of its line; an ended fact says so."""
    start, end = fact.get("valid_from"), fact.get("valid_until")
    if not (start or end):
        return ""
    span = f"{start} → {end}" if start and end else f"since {start}" if start else f"until {end}"
    if end and end < day:
        return f"  [dim]{span} (ended)[/dim]"
    return f"  [dim]{span}[/dim]"


@click.command()
@click.option(
    "--limit", "-n", default=20, show_default=True, help="How many records (newest first)."
)
@click.option(
    "--query", "query_filter", metavar="TEXT", help="Only records whose query contains TEXT."
)
@click.option(
    "--since",
    type=Moment(),
    metavar="DATE",
    help="Only records since DATE (2026-03-15, an ISO time, today, yesterday, 7d, 2w, 3m).",
)
@vault_options
def ledger(
    limit: int, query_filter: str | None, since: str | None, vault_path: str | None, as_json: bool
) -> None:
    """The retrieval ledger: what each search asked and returned, with its handle.

    Handles are for operators (feedback); agents never see them.
    """
    from vault_tool.core.times import parse_time

    start = parse_time(since) if since else None
    with open_vault(vault_path, catch_up=False) as vault:
        records = [
            r
            for r in vault.ledger_records("search")
            if (not query_filter or query_filter.lower() in r["query"].lower())
            and (start is None or parse_time(r["time"]) >= start)
        ][-limit:][::-1]

    def render(out: Any) -> None:
        from rich.table import Table

        table = Table(box=None, pad_edge=False)
        for column in ("handle", "time", "client", "query", "returned"):
            table.add_column(column, no_wrap=column in ("handle", "time", "returned"))
        for r in records:
            # Whole ids, one a line: an operator pastes them into feedback or show, which
            # take no shortened id.
            returned = "\n".join(x["memory_id"] for x in r["results"]) or "-"
            table.add_row(
                r["id"], r["time"][:19].replace("T", " "), r["client"], r["query"], returned
            )
        out.print(table)

    emit(records, as_json, render)


COMMANDS = [search, ledger]
