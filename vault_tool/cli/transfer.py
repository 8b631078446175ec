"""Moving memories in and out: import, export."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from vault_tool.cli.choices import NamedChoice
from vault_tool.cli.output import emit, open_vault, progress_callback, vault_options

IMPORT_FORMATS = ("markdown", "basic-memory", "kg-jsonl", "jsonl")
EXPORT_FORMATS = ("jsonl", "kg-jsonl")


@click.command("import")
@click.argument("path", metavar="PATH")
@click.option(
    "--format",
    "fmt",
    type=NamedChoice(IMPORT_FORMATS),
    required=True,
    help="markdown: a folder of Markdown notes (Obsidian-style front matter, #tags). "
    "basic-memory: a Basic Memory folder (observations and relations become entities and "
    "facts). kg-jsonl: the MCP memory server's memory.jsonl. jsonl: a `vault-tool export`.",
)
@click.option(
    "--prefix",
    metavar="FOLDER",
    help="markdown: put the notes under this folder of the vault [default: its top].",
)
@click.option(
    "--dry-run", is_flag=True, help="Show the diff of what would be written; write nothing."
)
@vault_options
def import_(
    path: str,
    fmt: str,
    prefix: str | None,
    dry_run: bool,
    vault_path: str | None,
    as_json: bool,
) -> None:
    """Import memories from PATH as one commit ("Import <n> memories from <name>").

    markdown notes keep their folders and file names (under --prefix), so their ids are
    their paths and their [[wikilinks]] still resolve; their bodies are not changed.
    Memories already in the vault are skipped, so running the same import again changes
    nothing. Secrets are redacted before anything is written. The report lists what was
    imported (with each note's wikilinks and the id each resolves to), what was skipped
    and why, and what was redacted. A note's dates come from its front matter (`created`,
    `date`, `updated`, `modified`), else from the source folder's git history, else from the
    file's time. Empty notes and files that are not Markdown are not imported. Exits 9 if
    anything was skipped for a reason other than being in the vault already (--json gives
    the whole report). Every field mapping is in docs/import-export.md of the source.
    """
    from vault_tool.errors import IMPORT_SKIPPED, InvalidInput
    from vault_tool.ops.transfer import import_source, left_out

    source = Path(path).expanduser()
    if prefix is not None and fmt != "markdown":
        raise InvalidInput(
            f"--prefix: applies to --format markdown only, not {fmt}",
            hint="leave --prefix out: the other formats place memories by type and date, or "
            "at their exported paths",
            field="prefix",
        )
    if not source.exists():
        raise InvalidInput(
            f"PATH: {path} does not exist", hint="give the folder or file to import", field="path"
        )
    with open_vault(vault_path) as vault:
        report = import_source(
            vault,
            source,
            fmt,
            dry_run=dry_run,
            progress=progress_callback("Reading " + path),
            prefix=prefix,
        )

    def render(out: Any) -> None:
        if dry_run and report.get("diff"):
            out.print(report["diff"], markup=False, end="")
        imported = report["counts"]["imported"]
        if dry_run:
            out.print(f"Would import {imported} of {_total(report)}; nothing was written.")
        elif report["version_id"]:
            out.print(f"{report['subject']} ({report['version_id'][:10]}).", markup=False)
        else:
            out.print(f"Nothing to import from {path}; no commit.", markup=False)
        _print_list(out, "Skipped", [f"{s['item']}: {s['reason']}" for s in report["skipped"]])
        _print_list(
            out,
            "Redacted",
            [
                f"{r['item']}: {r['count']} {r['kind']} in {r['field']}"
                for r in report["redactions"]
            ],
            style="yellow",
        )
        _print_list(out, "Notes", [f"{n['item']}: {n['note']}" for n in report["notes"]])
        unresolved = [
            f"{entry['item']}: {link['link']}"
            for entry in report["imported"]
            for link in entry.get("links", ())
            if link["resolves_to"] == "unresolved"
        ]
        _print_list(out, "Unresolved links", unresolved, style="yellow")
        if report["ignored"]:
            count = len(report["ignored"])
            files = "file" if count == 1 else "files"
            out.print(f"Not Markdown, not imported: {count} {files} (listed with --json).")

    emit(report, as_json, render)
    if left_out(report):
        click.get_current_context().exit(IMPORT_SKIPPED)


@click.command("export")
@click.option(
    "--format",
    "fmt",
    type=NamedChoice(EXPORT_FORMATS),
    default="jsonl",
    show_default=True,
    help="jsonl: every memory with id, path, semantic delta, content and dates (import it "
    "back with --format jsonl). kg-jsonl: entities and facts as the MCP memory server's graph.",
)
@click.option(
    "--output",
    "-o",
    metavar="FILE",
    type=click.Path(dir_okay=False, writable=True),
    help="Write to FILE instead of standard output.",
)
@vault_options
def export(fmt: str, output: str | None, vault_path: str | None, as_json: bool) -> None:
    """Export the vault as JSON Lines, to standard output or --output FILE.

    Without --output the lines themselves are the output (with or without --json); with
    --output, a summary is printed (as JSON with --json).
    """
    from vault_tool.ops.transfer import export_lines

    with open_vault(vault_path) as vault:
        lines = export_lines(vault, fmt, progress=progress_callback("Exporting"))
        if output is None:
            for line in lines:
                sys.stdout.write(line + "\n")
            return
        count = 0
        target = Path(output)
        partial = target.with_name(f".{target.name}.partial")
        with partial.open("w", encoding="utf-8", newline="\n") as out_file:
            for line in lines:
                out_file.write(line + "\n")
                count += 1
        partial.replace(target)  # a half-written export never replaces a good one
    summary = {"format": fmt, "output": str(target), "lines": count}
    emit(summary, as_json, lambda out: out.print(f"Wrote {count} lines ({fmt}) to {target}."))


def _total(report: dict[str, Any]) -> str:
    counts = report["counts"]
    total = counts["imported"] + counts["skipped"]
    return f"{total} {'item' if total == 1 else 'items'}"


def _print_list(out: Any, heading: str, lines: list[str], style: str = "") -> None:
    if not lines:
        return
    out.print(f"{heading} ({len(lines)}):", style=style or None)
    for line in lines:
        out.print(f"  {line}", markup=False, style=style or None)


COMMANDS = [import_, export]
