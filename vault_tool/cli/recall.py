"""Views over the memories at the terminal, as the extended tools give them: timeline, facts."""

from __future__ import annotations

from typing import Any

import click

from vault_tool.cli.output import emit, open_vault, shown_in_markup, vault_options


@click.command()
@click.argument("memory_id", required=False)
@click.option("--query", "-q", metavar="WORDS", help="Anchor on the best hit of WORDS instead.")
@click.option("--before", type=click.IntRange(0, 20), default=5, show_default=True)
@click.option("--after", type=click.IntRange(0, 20), default=5, show_default=True)
@vault_options
def timeline(
    memory_id: str | None,
    query: str | None,
    before: int,
    after: int,
    vault_path: str | None,
    as_json: bool,
) -> None:
    """The memories updated just before and after MEMORY_ID (or the best hit of --query),
    oldest first, the anchor marked with >. Dismissed and expired memories are left out."""
    if (memory_id is None) == (query is None):
        raise click.UsageError("give a MEMORY_ID or --query WORDS (one of them)")
    with open_vault(vault_path) as vault:
        result = vault.views.timeline(memory_id, query, before=before, after=after)

    def render(out: Any) -> None:
        for entry in result["entries"]:
            mark = ">" if entry["anchor"] else " "
            title = shown_in_markup(entry["title"])
            about = f"{entry['memory_type']} · {shown_in_markup(entry['memory_id'])}"
            out.print(f"{mark} {entry['updated'][:10]}  [bold]{title}[/bold]  [dim]{about}[/dim]")
        out.print(f"[dim]{result['earlier']} earlier and {result['later']} later not shown[/dim]")

    emit(result, as_json, render)


@click.command()
@click.argument("subject")
@click.option("--predicate", "-p", metavar="NAME", help="Only facts with this predicate.")
@click.option(
    "--as-of", "as_of", metavar="DAY", default="today", help="Current on DAY (YYYY-MM-DD, 7d)."
)
@click.option(
    "--all",
    "include_superseded",
    is_flag=True,
    help="Also facts that ended, were taken out of their memory, or were superseded.",
)
@click.option("--limit", "-n", type=click.IntRange(1, 100), default=20, show_default=True)
@click.option("--offset", type=click.IntRange(0, 10000), default=0, help="Skip this many facts.")
@vault_options
def facts(
    subject: str,
    predicate: str | None,
    as_of: str,
    include_superseded: bool,
    limit: int,
    offset: int,
    vault_path: str | None,
    as_json: bool,
) -> None:
    """What the vault states about SUBJECT (an entity's name), each fact with its memory,
    its valid time and the commit that asserted it (and retracted it, with --all): the
    fact_history tool of the extended profile. Current facts, as of today or --as-of."""
    with open_vault(vault_path) as vault:
        result = vault.views.facts(
            subject,
            predicate=predicate,
            as_of=as_of,
            include_superseded=include_superseded,
            limit=limit,
            offset=offset,
        )

    def render(out: Any) -> None:
        if not result["facts"]:
            out.print(f"No fact about {shown_in_markup(subject)} as of {result['as_of']}.")
            return
        for fact in result["facts"]:
            said = f"{fact['subject']} {fact['predicate']} {fact['object']}"
            valid = ""
            if fact.get("valid_from") or fact.get("valid_until"):
                valid = f" ({fact.get('valid_from') or '…'} to {fact.get('valid_until') or '…'})"
            asserted = ((fact["asserted"] or {}).get("date") or "")[:10] or "not committed yet"
            out.print(f"· {shown_in_markup(said)}{valid}  [dim]{fact['status']}[/dim]")
            where = f"{shown_in_markup(fact['title'])} · asserted {asserted}"
            if fact["retracted"]:
                where += f" · taken out {fact['retracted']['date'][:10]}"
            out.print(f"  [dim]{where}[/dim]")
        more = f" (--offset {result['next_offset']} for more)" if result["has_more"] else ""
        out.print(f"[dim]{len(result['facts'])} of {result['total']} facts{more}[/dim]")

    emit(result, as_json, render)


@click.command()
@click.option("--max-chars", type=click.IntRange(200, 50000), default=8000, show_default=True)
@click.option("--days", "recent_days", type=click.IntRange(1, 90), default=7, show_default=True)
@click.option("--facts", "max_facts", type=click.IntRange(0, 100), default=20, show_default=True)
@click.option("--project", metavar="NAME", help="Only its memories and the rules that apply there.")
@vault_options
def context(
    max_chars: int,
    recent_days: int,
    max_facts: int,
    project: str | None,
    vault_path: str | None,
    as_json: bool,
) -> None:
    """The block an agent starts a session with (the session_context tool of the extended
    profile): rules, pinned memories, current facts, and the memories updated in the last
    --days, by day, cut to --max-chars; of every project, or of --project."""
    with open_vault(vault_path) as vault:
        result = vault.views.session_context(
            max_chars=max_chars, recent_days=recent_days, max_facts=max_facts, project=project
        )

    def render(out: Any) -> None:
        out.print(result["block"] or "No rules, pinned or recent memories.", markup=False)
        cut = ", cut to --max-chars" if result["truncated"] else ""
        size = f"{result['chars']} characters, ~{result['tokens_estimate']} tokens{cut}"
        out.print(f"[dim]{size}[/dim]")

    emit(result, as_json, render)


COMMANDS = [context, timeline, facts]
