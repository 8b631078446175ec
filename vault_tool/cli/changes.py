"""Reviewing changes in meaning: `review`, and the renderers any command shows a review with.

A review (Vault.review's data) is shown three ways from the same data: the terminal, JSON,
and Markdown to paste into a pull request or an issue. Both texts lead with a header, the
flags and every fact that changed, one line each, so a reviewer sees what a session changed
in its first screen; each memory's whole change follows, grouped by client. show_review()
is the one entry point (a revert's dry run prints its plan through it).
"""

from __future__ import annotations

import re
from typing import Any

import click

from vault_tool.cli.output import Moment, emit, open_vault, shown, vault_options
from vault_tool.core import printable

KIND_STYLE = {
    "created": "green",
    "updated": "yellow",
    "moved": "cyan",
    "deleted": "red",
    "restored": "magenta",
}
SIGN_STYLE = {"+": "green", "-": "red", "~": "yellow"}


@click.command()
@click.argument("range", required=False, metavar="[RANGE]")
@click.option("--since", type=Moment(), help="Only commits from this date or time on.")
@click.option("--until", type=Moment(), help="Only commits up to this date or time.")
@click.option("--client", metavar="NAME", help="Only commits of this client (an agent, cli).")
@click.option("--memory", metavar="ID", help="Only this memory's changes.")
@click.option("--markdown", is_flag=True, help="Print Markdown for a pull request or an issue.")
@vault_options
def review(
    range: str | None,
    since: str | None,
    until: str | None,
    client: str | None,
    memory: str | None,
    markdown: bool,
    vault_path: str | None,
    as_json: bool,
) -> None:
    """What a range of commits changed in meaning, memory by memory.

    RANGE is a git range (`origin/main..HEAD`, `HEAD~20..`, a sha); without one, the
    filters alone choose the commits, and with neither, the commits not yet pushed. For
    each memory: created, updated, moved, deleted or restored; facts added, removed and
    changed (a new object or validity is one change); entities added, dropped or
    re-glossed; tags, type, title, key, supersedes, expiry; the body as a word diff; and
    flags: a person's note rewritten by an agent, a fact contradicting a current one, a
    secret redacted, values a merge set aside, a deleted memory others link to.
    """
    with open_vault(vault_path) as vault:
        result = vault.review(range, since=since, until=until, client=client, memory=memory)
    show_review(result, as_json=as_json, markdown=markdown)


def show_review(data: dict[str, Any], *, as_json: bool, markdown: bool = False) -> None:
    """Print a review (Vault.review's data) as JSON, Markdown or for the terminal."""
    if markdown and not as_json:
        click.echo(markdown_text(data), nl=False)
        return
    emit(data, as_json, lambda out: render_terminal(data, out))


# --- what both texts say ---------------------------------------------------------------------


def summary(data: dict[str, Any]) -> str:
    """One line: how many memories, commits, clients, fact changes and flags."""
    clients = ", ".join(f"{name} ({n})" for name, n in data["clients"].items())
    memories = len(data["memories"])
    return (
        f"{memories} {'memory' if memories == 1 else 'memories'} changed in "
        f"{data['commits']} commit(s){f' by {clients}' if clients else ''}: "
        f"{data['facts_changed']} fact change(s), {data['flags']} flag(s)"
    )


def fact_text(fact: dict[str, Any]) -> str:
    """A fact as a phrase with its validity: 'Ana owns billing (valid from 2026-03-01)'."""
    text = f"{fact['subject']} {fact['predicate']} {fact['object']}"
    bounds = [f"from {fact['valid_from']}"] if fact.get("valid_from") else []
    bounds += [f"until {fact['valid_until']}"] if fact.get("valid_until") else []
    return f"{text} (valid {' '.join(bounds)})" if bounds else text


def fact_lines(entry: dict[str, Any]) -> list[tuple[str, str]]:
    """(sign, text) for each fact the memory's change added, removed or changed."""
    facts = entry["changes"].get("facts", {})
    lines = [("+", fact_text(f)) for f in facts.get("added", [])]
    lines += [("-", fact_text(f)) for f in facts.get("removed", [])]
    for change in facts.get("changed", []):
        was, now = fact_text(change["before"]), fact_text(change["after"])
        lines.append(("~", f"{was} -> {now}"))
    return lines


def detail_lines(entry: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(sign, what, text) for every part of a memory's change but its body."""
    changes = entry["changes"]
    lines = [(sign, "fact", text) for sign, text in fact_lines(entry)]
    entities = changes.get("entities", {})
    lines += [("+", "entity", _entity(e)) for e in entities.get("added", [])]
    lines += [("-", "entity", _entity(e)) for e in entities.get("dropped", [])]
    for change in entities.get("reglossed", []):
        was, now = change["before"], change["after"]
        lines.append(("~", "entity", f"{now['n']} re-glossed: {_gloss(was)} -> {_gloss(now)}"))
    for name in ("tags", "supersedes"):
        part = changes.get(name, {})
        lines += [("+", name[:-1] if name == "tags" else name, t) for t in part.get("added", [])]
        lines += [("-", name[:-1] if name == "tags" else name, t) for t in part.get("removed", [])]
    for name, values in changes.get("fields", {}).items():
        was, now = values["before"], values["after"]
        lines.append(("~", name, f"{_value(was)} -> {_value(now)}"))
    return lines


def _entity(entity: dict[str, Any]) -> str:
    return f"{entity['n']} ({_gloss(entity)})"


def _gloss(entity: dict[str, Any]) -> str:
    return f"{entity['kind']}: {entity['is']}"


def _value(value: Any) -> str:
    return "(none)" if value in (None, "", False) else str(value)


def heading(entry: dict[str, Any]) -> str:
    """`<type>: <title>`, as the changelog names a memory."""
    return f"{entry['memory_type']}: {entry['title']}"


def where(entry: dict[str, Any]) -> str:
    """The memory's id and path (its old path too, when it moved)."""
    path = f"{entry['old_path']} -> {entry['path']}" if entry.get("old_path") else entry["path"]
    versions = len(entry["versions"])
    merged = ", merged" if entry["merged"] else ""
    return f"{entry['memory_id']}, {path}, {versions} version(s){merged}"


def groups(data: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    """The memories grouped by the clients that changed them (in the review's order)."""
    found: dict[str, list[dict[str, Any]]] = {}
    for entry in data["memories"]:
        found.setdefault(", ".join(entry["clients"]), []).append(entry)
    return list(found.items())


# --- the terminal ------------------------------------------------------------------------------


def render_terminal(data: dict[str, Any], out: Any) -> None:
    """The review for a person at a terminal (rich markup; every value escaped)."""
    say = _markup
    out.print(f"[bold]Review of {say(data['range'])}[/bold]: {say(summary(data))}")
    if not data["memories"]:
        out.print("No memory changed in these commits.")
        return
    flagged = [(e, f) for e in data["memories"] for f in e["flags"]]
    if flagged:
        out.print("[bold red]Flags[/bold red]")
        for entry, flag in flagged:
            out.print(f"  [red]![/red] {say(heading(entry))}: {say(flag['message'])}")
    facts = [(e, line) for e in data["memories"] for line in fact_lines(e)]
    if facts:
        out.print("[bold]Facts[/bold]")
        for entry, (sign, text) in facts:
            style = SIGN_STYLE[sign]
            out.print(f"  [{style}]{sign}[/{style}] {say(text)}  [dim]{say(heading(entry))}[/dim]")
    for clients, entries in groups(data):
        out.print(f"[bold]{say(clients)}[/bold]")
        for entry in entries:
            style = KIND_STYLE.get(entry["kind"], "white")
            out.print(
                f"  [{style}]{entry['kind']}[/{style}] {say(heading(entry))}  "
                f"[dim]{say(where(entry))}[/dim]"
            )
            for sign, what, text in detail_lines(entry):
                style = SIGN_STYLE[sign]
                out.print(f"    [{style}]{sign}[/{style}] {what} {say(text)}")
            for span in entry["changes"].get("body", []):
                out.print(f"    body {span_text(span, TERMINAL_SPAN, _markup)}")
            if entry["kind"] != "deleted" and not entry["changes"]:
                out.print("    [dim]no change in meaning[/dim]")


# How a body span is written: (context, removed, added, how many more), each a format.
TERMINAL_SPAN = ("[dim]…{}[/dim]", "[red][-{}-][/red]", "[green]{{+{}+}}[/green]",
                 "[dim]… {} more change(s)[/dim]")  # fmt: skip
MARKDOWN_SPAN = ("…{}", "~~{}~~", "**{}**", "… {} more change(s)")


def span_text(span: dict[str, str], forms: tuple[str, ...], say: Any) -> str:
    """One changed span of a body (core/fact_diff.py's body_diff) in a text's forms."""
    if "more" in span:
        return forms[3].format(say(span["more"]))
    parts = [span["context"], span["removed"], span["added"]]
    return " ".join(
        form.format(say(part)) for form, part in zip(forms[:3], parts, strict=True) if part
    )


def _markup(value: Any) -> str:
    from rich.markup import escape

    return escape(shown(value))


# --- Markdown ----------------------------------------------------------------------------------

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>#|~])")


def md(value: Any) -> str:
    """A value as Markdown text: unsafe characters escaped, Markdown's own made literal (a
    title with `<b>` or `|` reads as written in a pull request, and breaks no table)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", printable.escape(value))


def markdown_text(data: dict[str, Any]) -> str:
    """The review as Markdown: a pull request's description, or an issue's."""
    lines = [f"## Memory review: {md(data['range'])}", "", md(summary(data)) + ".", ""]
    if not data["memories"]:
        return "\n".join([*lines, "No memory changed in these commits.", ""])
    flagged = [(e, f) for e in data["memories"] for f in e["flags"]]
    if flagged:
        lines += ["### Flags", ""]
        lines += [f"- **{md(heading(e))}**: {md(f['message'])}" for e, f in flagged]
        lines.append("")
    facts = [(e, line) for e in data["memories"] for line in fact_lines(e)]
    if facts:
        lines += ["### Facts", "", "| | fact | memory |", "|---|---|---|"]
        lines += [f"| {md(sign)} | {md(text)} | {md(heading(e))} |" for e, (sign, text) in facts]
        lines.append("")
    lines += ["### Memories", ""]
    for clients, entries in groups(data):
        lines += [f"#### {md(clients)}", ""]
        for entry in entries:
            lines.append(f"- **{entry['kind']}** {md(heading(entry))} ({md(where(entry))})")
            for sign, what, text in detail_lines(entry):
                lines.append(f"  - {md(sign)} {what} {md(text)}")
            for span in entry["changes"].get("body", []):
                lines.append(f"  - body: {span_text(span, MARKDOWN_SPAN, md)}")
            if entry["kind"] != "deleted" and not entry["changes"]:
                lines.append("  - no change in meaning")
        lines.append("")
    return "\n".join(lines)


COMMANDS = [review]
