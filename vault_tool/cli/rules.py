"""Rules and work state at the terminal, as the extended tools give them: `vault-tool rules
add|list|confirm` and `vault-tool state get|set`."""

from __future__ import annotations

import json
from typing import Any

import click

from vault_tool.cli.output import emit, open_vault, shown_in_markup, vault_options
from vault_tool.errors import InvalidInput


@click.group()
def rules() -> None:
    """The rules agents follow: each a memory of type rule, a file in git (docs/rules.md)."""


@rules.command("add")
@click.argument("then")
@click.option("--when", metavar="SITUATION", help="When it applies [default: always].")
@click.option(
    "--scope",
    type=click.Choice(("everywhere", "project", "situation")),
    default="everywhere",
    show_default=True,
)
@click.option("--scope-name", metavar="NAME", help="The project or situation of the scope.")
@click.option(
    "--evidence", "evidence", multiple=True, metavar="MEMORY_ID", help="A memory it rests on."
)
@vault_options
def add_rule(
    then: str,
    when: str | None,
    scope: str,
    scope_name: str | None,
    evidence: tuple[str, ...],
    vault_path: str | None,
    as_json: bool,
) -> None:
    """Add the rule THEN (what to do) as one commit; an identical rule is not added twice."""
    with open_vault(vault_path) as vault:
        result = vault.rules.add(
            then,
            when=when,
            scope=scope,
            scope_name=scope_name,
            evidence=evidence,
            client="cli",
        )

    def render(out: Any) -> None:
        if result["status"] == "unchanged":
            out.print(f"An identical rule is there already: {shown_in_markup(result['id'])}")
        else:
            out.print(
                f"Added rule {shown_in_markup(result['id'])} at {shown_in_markup(result['path'])}"
            )

    emit(result, as_json, render)


@rules.command("list")
@click.option("--project", metavar="NAME", help="Only the rules that apply in this project.")
@click.option("--limit", "-n", type=click.IntRange(1, 100), default=50, show_default=True)
@click.option("--offset", type=click.IntRange(0, 10000), default=0, help="Skip this many.")
@vault_options
def list_rules(
    project: str | None, limit: int, offset: int, vault_path: str | None, as_json: bool
) -> None:
    """The rules in force, oldest first; [re-check] marks one whose evidence changed since
    it was last confirmed."""
    with open_vault(vault_path) as vault:
        result = vault.rules.listing(project, limit=limit, offset=offset)

    def render(out: Any) -> None:
        from vault_tool.engine.rules import sentence, where

        if not result["rules"]:
            out.print("No rules (vault-tool rules add THEN).")
        for rule in result["rules"]:
            said, applies = shown_in_markup(sentence(rule)), shown_in_markup(where(rule))
            out.print(f"· {said}  [dim]\\[{applies}][/dim]")
            about = f"{rule['id']} · added {rule['added']} · confirmed {rule['confirmed']}"
            out.print(f"  [dim]{shown_in_markup(about)}[/dim]")
            if rule["recheck"]:
                out.print(f"  [yellow]re-check: {shown_in_markup(rule['recheck'])}[/yellow]")
        more = f" (--offset {result['next_offset']} for more)" if result["has_more"] else ""
        out.print(f"[dim]{len(result['rules'])} of {result['total']} rules{more}[/dim]")

    emit(result, as_json, render)


@rules.command("confirm")
@click.argument("rule_id", metavar="ID")
@vault_options
def confirm_rule(rule_id: str, vault_path: str | None, as_json: bool) -> None:
    """Record that rule ID was re-checked: its confirmed date and its evidence's versions
    become today's (one commit)."""
    with open_vault(vault_path) as vault:
        result = vault.rules.confirm(rule_id, client="cli")
    emit(result, as_json, lambda out: out.print(f"Confirmed {shown_in_markup(rule_id)}"))


@click.group()
def state() -> None:
    """Work state: named lists per project, state/<project>/<name>.yaml (docs/rules.md)."""


@state.command("get")
@click.argument("name")
@click.option("--project", metavar="NAME", help="[default: the project of this folder]")
@vault_options
def state_get(name: str, project: str | None, vault_path: str | None, as_json: bool) -> None:
    """Print list NAME's items, one a line (objects as JSON)."""
    with open_vault(vault_path) as vault:
        result = vault.work_state.read(name, project)

    def render(out: Any) -> None:
        if not result["exists"]:
            out.print(f"No list {shown_in_markup(result['path'])} yet.")
        for item in result["items"]:
            text = item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)
            out.print(f"- {text}", markup=False)

    emit(result, as_json, render)


@state.command("set")
@click.argument("name")
@click.argument("items", nargs=-1)
@click.option(
    "--json-items",
    metavar="JSON",
    help='The whole list as a JSON array instead of ITEMS: \'["ship docs", {"done": false}]\'.',
)
@click.option("--project", metavar="NAME", help="[default: the project of this folder]")
@vault_options
def state_set(
    name: str,
    items: tuple[str, ...],
    json_items: str | None,
    project: str | None,
    vault_path: str | None,
    as_json: bool,
) -> None:
    """Replace list NAME with ITEMS (each a string), as one commit; no ITEMS empties it."""
    values: Any = list(items)
    if json_items is not None:
        if items:
            raise click.UsageError("give ITEMS or --json-items, not both")
        try:
            values = json.loads(json_items)
        except json.JSONDecodeError as problem:
            raise InvalidInput(
                f"--json-items: not JSON ({problem.msg} at character {problem.pos})",
                hint="send a JSON array, for example '[\"ship docs\"]'",
                field="--json-items",
            ) from None
    with open_vault(vault_path) as vault:
        result = vault.work_state.write(name, values, project, client="cli")

    def render(out: Any) -> None:
        where = shown_in_markup(result["path"])
        if result["status"] == "unchanged":
            out.print(f"Unchanged {where}: it already holds these {result['items']} items")
            return
        before = "new" if result["replaced"] is None else f"was {result['replaced']} items"
        out.print(f"Saved {where}: {result['items']} items ({before}), {result['version_id'][:10]}")

    emit(result, as_json, render)


COMMANDS = [rules, state]
