"""Finding memories and reviewing retrievals: search, ledger."""

from __future__ import annotations

from typing import Any

import click

from vault_tool.cli.output import (
    emit,
    open_vault,
    progress_callback,
    shown_in_markup,
    vault_options,
)


@click.command()
@click.argument("query", nargs=-1, required=True)
@click.option("--top-k", "-k", type=int, default=5, show_default=True, help="How many hits.")
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
@click.option("--since", metavar="DATE", help="Only memories updated on or after DATE.")
@click.option("--until", metavar="DATE", help="Only memories updated on or before DATE.")
@click.option("--explain", is_flag=True, help="Show every part of each hit's score.")
@click.option(
    "--as-of",
    "as_of",
    metavar="DATE|COMMIT",
    help="Search the vault as it was then, with the facts valid on that day (not recorded).",
)
@vault_options
def search(
    query: tuple[str, ...],
    top_k: int,
    max_bytes: int,
    memory_types: tuple[str, ...],
    tags: tuple[str, ...],
    since: str | None,
    until: str | None,
    explain: bool,
    as_of: str | None,
    vault_path: str | None,
    as_json: bool,
) -> None:
    """Search memories by QUERY, best first (the same ranking agents get over MCP).

    The query is recorded in the retrieval ledger (see `vault-tool ledger`). With
    --as-of, the vault is searched as git held it at that date or commit, and each hit
    shows only the facts valid on that day.
    """
    args: dict[str, Any] = {
        "query": " ".join(query),
        "top_k": top_k,
        "maximum_context_bytes": max_bytes,
    }
    for name, value in (
        ("memory_types", list(memory_types)),
        ("tags", list(tags)),
        ("since", since),
        ("until", until),
    ):
        if value:
            args[name] = value
    with open_vault(vault_path) as vault:
        if as_of:
            progress = progress_callback("Reading the vault as it was")
            result = vault.search_as_of(args, as_of, explain=explain, progress=progress)
        else:
            result = vault.search(args, explain=explain)

    def render(out: Any) -> None:
        if "as_of" in result:
            moment = result["as_of"]
            out.print(f"[dim]As of {moment['moment']} (commit {moment['commit'][:10]})[/dim]")
        if not result["selected_hits"]:
            out.print(
                "The vault has no memories yet."
                if result.get("reason") == "empty_vault"
                else "Nothing relevant found."
            )
            return
        for n, hit in enumerate(result["selected_hits"], 1):
            memory_id, path = shown_in_markup(hit["memory_id"]), shown_in_markup(hit["path"])
            about = f"{hit['memory_type']} · {memory_id} · score {hit['score']}"
            where = f"{path} · version {hit['version_id'][:10]} · updated {hit['updated']}"
            out.print(f"[bold]{n}. {shown_in_markup(hit['title'])}[/bold]  [dim]{about}[/dim]")
            out.print(f"   [dim]{where}[/dim]")
            if hit.get("superseded_by"):
                out.print(f"   [yellow]superseded by {', '.join(hit['superseded_by'])}[/yellow]")
            for fact in hit["facts"]:
                out.print(
                    f"   · {shown_in_markup(fact['subject'])} [italic]{fact['predicate']}"
                    f"[/italic] {shown_in_markup(fact['object'])}"
                )
            if explain:
                parts = ", ".join(f"{k} {v:.3f}" for k, v in hit["score_parts"].items())
                out.print(f"   [cyan]score = (text + entity + feedback) x factor: {parts}[/cyan]")
        out.print(f"[dim]{result['total_matches']} matching memories[/dim]")

    emit(result, as_json, render)


@click.command()
@click.option(
    "--limit", "-n", default=20, show_default=True, help="How many records (newest first)."
)
@click.option(
    "--query", "query_filter", metavar="TEXT", help="Only records whose query contains TEXT."
)
@click.option("--since", metavar="DATE", help="Only records since DATE (YYYY-MM-DD).")
@vault_options
def ledger(
    limit: int, query_filter: str | None, since: str | None, vault_path: str | None, as_json: bool
) -> None:
    """The retrieval ledger: what each search asked and returned, with its handle.

    Handles are for operators (feedback); agents never see them.
    """
    with open_vault(vault_path, catch_up=False) as vault:
        records = [
            r
            for r in vault.ledger_records("search")
            if (not query_filter or query_filter.lower() in r["query"].lower())
            and (not since or r["time"] >= since)
        ][-limit:][::-1]

    def render(out: Any) -> None:
        from rich.table import Table

        table = Table(box=None, pad_edge=False)
        for column in ("handle", "time", "client", "query", "returned"):
            table.add_column(column, no_wrap=column in ("handle", "time"))
        for r in records:
            returned = ", ".join(x["memory_id"][:10] for x in r["results"]) or "-"
            table.add_row(
                r["id"], r["time"][:19].replace("T", " "), r["client"], r["query"], returned
            )
        out.print(table)

    emit(records, as_json, render)


COMMANDS = [search, ledger]
