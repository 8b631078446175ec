"""The vault's ontology: entities, predicates, and renaming or merging them across the vault."""

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

DRY_RUN_HELP = "Show the diff of every file it would rewrite, and write nothing."


@click.command()
@click.option("--kind", metavar="KIND", help="Only entities of this kind (person, service, ...).")
@click.option("--homonyms", is_flag=True, help="Only names that resolve to more than one entity.")
@vault_options
def entities(kind: str | None, homonyms: bool, vault_path: str | None, as_json: bool) -> None:
    """Entities the memories name, with their kinds, glosses and mention counts.

    Mentions are resolved as search resolves them: the same name (case and accents
    aside), the same kind, and glosses that share words. Two people called Ana with
    unrelated glosses are two entities; --homonyms lists such names.
    """
    from vault_tool.ops import ontology

    with open_vault(vault_path) as vault:
        found = ontology.list_entities(vault, kind=kind, homonyms=homonyms)

    def render(out: Any) -> None:
        if not found:
            out.print("No entities." if not homonyms else "No name stands for two entities.")
            return
        from rich.table import Table

        table = Table("Name", "Kind", "Mentions", "Memories", "Glosses", box=None)
        for entity in found:
            glosses = "\n".join(
                f"{shown_in_markup(g['gloss'])} (×{g['mentions']})" for g in entity["glosses"]
            )
            table.add_row(
                shown_in_markup(entity["name"]),
                shown_in_markup(entity["kind"]),
                str(entity["mentions"]),
                str(entity["memories"]),
                glosses,
            )
        out.print(table)

    emit({"entities": found}, as_json, render)


@click.command()
@vault_options
def predicates(vault_path: str | None, as_json: bool) -> None:
    """Predicates the facts use, with how many facts and memories use each."""
    from vault_tool.ops import ontology

    with open_vault(vault_path) as vault:
        found = ontology.list_predicates(vault)

    def render(out: Any) -> None:
        if not found:
            out.print("No facts.")
            return
        from rich.table import Table

        table = Table("Predicate", "Facts", "Memories", box=None)
        for row in found:
            table.add_row(
                shown_in_markup(row["predicate"]), str(row["facts"]), str(row["memories"])
            )
        out.print(table)

    emit({"predicates": found}, as_json, render)


@click.command("rename-entity")
@click.argument("old")
@click.argument("new")
@click.option("--kind", metavar="KIND", help="Rename only the entity of this kind.")
@click.option(
    "--gloss-contains",
    metavar="TEXT",
    help="Rename only the entity with a gloss containing TEXT (picks one of homonyms).",
)
@click.option("--dry-run", is_flag=True, help=DRY_RUN_HELP)
@vault_options
def rename_entity(
    old: str,
    new: str,
    kind: str | None,
    gloss_contains: str | None,
    dry_run: bool,
    vault_path: str | None,
    as_json: bool,
) -> None:
    """Rename entity OLD to NEW in every memory that mentions it, as one commit.

    Facts that name OLD name NEW. Titles and bodies are left as written; files that do
    not mention OLD are not touched. If OLD names several entities (see `entities
    --homonyms`), pick one with --kind or --gloss-contains. A file with an uncommitted
    hand edit refuses the whole rename (exit 3).
    """
    from vault_tool.ops import ontology

    with open_vault(vault_path) as vault:
        rewrite = ontology.plan_rename_entity(
            vault,
            old,
            new,
            kind=kind,
            gloss_contains=gloss_contains,
            progress=progress_callback("Reading memories"),
        )
        result = ontology.apply(vault, rewrite, dry_run=dry_run)
    emit(result, as_json, lambda out: _render_rewrite(out, result))


@click.command("merge-entity")
@click.argument("name")
@click.option("--into", "into", required=True, metavar="TARGET", help="The entity to keep.")
@click.option("--kind", metavar="KIND", help="Merge only the entity NAME of this kind.")
@click.option(
    "--gloss-contains", metavar="TEXT", help="Merge only the entity NAME whose gloss has TEXT."
)
@click.option("--into-kind", metavar="KIND", help="Keep only the entity TARGET of this kind.")
@click.option(
    "--into-gloss-contains", metavar="TEXT", help="Keep the entity TARGET whose gloss has TEXT."
)
@click.option("--dry-run", is_flag=True, help=DRY_RUN_HELP)
@vault_options
def merge_entity(
    name: str,
    into: str,
    kind: str | None,
    gloss_contains: str | None,
    into_kind: str | None,
    into_gloss_contains: str | None,
    dry_run: bool,
    vault_path: str | None,
    as_json: bool,
) -> None:
    """Merge entity NAME into entity TARGET in every memory that mentions NAME, as one commit.

    Each mention of NAME takes TARGET's name, kind and most used gloss; facts follow.
    A memory that names both keeps TARGET's declaration. Use it for duplicates
    ("A. Lima" into "Ana Lima") and for homonyms that are one thing after all.
    """
    from vault_tool.ops import ontology

    with open_vault(vault_path) as vault:
        rewrite = ontology.plan_merge_entity(
            vault,
            name,
            into,
            kind=kind,
            gloss_contains=gloss_contains,
            into_kind=into_kind,
            into_gloss_contains=into_gloss_contains,
            progress=progress_callback("Reading memories"),
        )
        result = ontology.apply(vault, rewrite, dry_run=dry_run)
    emit(result, as_json, lambda out: _render_rewrite(out, result))


@click.command("rename-predicate")
@click.argument("old")
@click.argument("new")
@click.option("--dry-run", is_flag=True, help=DRY_RUN_HELP)
@vault_options
def rename_predicate(
    old: str, new: str, dry_run: bool, vault_path: str | None, as_json: bool
) -> None:
    """Rename predicate OLD to NEW (snake_case) in every fact that uses it, as one commit."""
    from vault_tool.ops import ontology

    with open_vault(vault_path) as vault:
        rewrite = ontology.plan_rename_predicate(
            vault, old, new, progress=progress_callback("Reading memories")
        )
        result = ontology.apply(vault, rewrite, dry_run=dry_run)
    emit(result, as_json, lambda out: _render_rewrite(out, result))


def _render_rewrite(out: Any, result: dict[str, Any]) -> None:
    if not result["paths"]:
        out.print("Nothing to change.")
        return
    if result["dry_run"]:
        from rich.text import Text

        for line in result["diff"].splitlines():
            style = ""
            if line.startswith(("+++", "---")):
                style = "bold"
            elif line.startswith("+"):
                style = "green"
            elif line.startswith("-"):
                style = "red"
            elif line.startswith("@@"):
                style = "cyan"
            out.print(Text(line, style=style))
        subject = shown_in_markup(repr(result["subject"]))
        out.print(
            f"[dim]Dry run: would commit {shown_in_markup(subject)}; nothing was written.[/dim]"
        )
        return
    subject = shown_in_markup(result["subject"])
    out.print(f"{shown_in_markup(subject)}  [dim]commit {result['version_id'][:10]}[/dim]")
    for path in result["paths"]:
        out.print(f"  {path}", markup=False)


COMMANDS = [entities, predicates, rename_entity, merge_entity, rename_predicate]
