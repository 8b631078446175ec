"""A vault's health: verify, doctor, gc."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import click

from vault_tool.cli.choices import FiniteRange
from vault_tool.cli.output import (
    emit,
    open_vault,
    pasteable,
    progress_callback,
    shown,
    vault_options,
)
from vault_tool.errors import UNHEALTHY

_MARKS = {"ok": "[green]✓[/green]", "warn": "[yellow]![/yellow]", "fail": "[red]✗[/red]"}


@contextlib.contextmanager
def _checkup(vault_path: str | None) -> Iterator[Any]:
    from vault_tool.checks.checkup import Checkup
    from vault_tool.storage.config import resolve_vault_path

    with Checkup(resolve_vault_path(vault_path)) as checkup:
        yield checkup


@click.command()
@click.option(
    "--files",
    "files_only",
    is_flag=True,
    help="Check only the files (each parses, holds no conflict markers, has its own id and "
    "key): no index needed, for a hook or a CI job on a fresh clone.",
)
@vault_options
@click.pass_context
def verify(ctx: click.Context, files_only: bool, vault_path: str | None, as_json: bool) -> None:
    """Compare the files, the index and git, and list every disagreement.

    Files on disk but not indexed, indexed but gone from disk, indexed with other bytes
    than the file's, indexed with another version than git's last commit of the file,
    differing from the last commit, tracked in git but missing, moved and not committed
    (the new file carries on the missing one: the same id, or the same content), files
    that do not parse, files holding merge conflict markers (committed by a merge, or
    left by one that stopped), duplicate ids and keys. It only looks: nothing is
    repaired, the index is not caught up first (`vault-tool reindex` and `vault-tool
    commit` repair). With --files, only the files are read (a clone has no index until a
    command builds it), so a hook or a CI job can check a merge made anywhere, a forge's
    web UI included. Exit code 0 when all agree, 8 when anything disagrees.
    """
    from vault_tool.checks import files_only as files_module
    from vault_tool.checks import verify as verify_module

    check = files_module.verify_files if files_only else verify_module.verify
    with _checkup(vault_path) as checkup:
        report = check(checkup, progress_callback("Checking files"))
    result = report.to_dict()

    def render(out: Any) -> None:
        what = f"{report.files} file" + ("" if report.files == 1 else "s")
        if report.healthy and files_only:
            out.print(f"{_MARKS['ok']} Every memory file parses and has its own id ({what}).")
            return
        if not files_only:
            what += f", {report.indexed} indexed, {report.committed} committed"
        if report.healthy:
            out.print(f"{_MARKS['ok']} Files, index and git agree ({what}).")
            return
        width = max(len(i.kind) for i in report.issues)
        for issue in report.issues:
            line = f":{issue.line}" if issue.line else ""
            where = f"{issue.kind:<{width}}  {shown(issue.path)}{line}"
            out.print(f"{where}  {issue.detail}", markup=False)
        out.print(f"{_MARKS['fail']} {len(report.issues)} disagreements ({what}).")
        for kind in dict.fromkeys(i.kind for i in report.issues):
            out.print(f"  [bold]{kind}[/bold]: {verify_module.FIXES[kind]}", highlight=False)

    emit(result, as_json, render)
    if not report.healthy:
        ctx.exit(UNHEALTHY)


@click.command()
@vault_options
@click.pass_context
def doctor(ctx: click.Context, vault_path: str | None, as_json: bool) -> None:
    """Check everything that can make a vault unhealthy, and say how to fix each.

    Settings, git (branch, who commits), whether git merges memory files with vault-tool's
    merge driver, the index (present, schema version, segments), files that do not parse
    (file, line, reason, fix), bodies a merge committed with conflict markers, values a
    merge set aside (`merge_conflicts`) to review, ids and keys two files share,
    uncommitted hand edits (a moved file is one row), index drift (see `verify`), stale
    git locks, the vault's write lock and who holds it, interrupted writes, and which
    process leads the watcher with its last heartbeat. It only looks.

    The verdict: unhealthy when a check fails (a fault: a damaged or drifted index, a
    stale lock, an interrupted write, a file that cannot be taken in, a shared id); needs
    attention when one only warns (something to do, such as hand edits waiting for
    `vault-tool commit` while no watcher runs, or a body a merge left in conflict); else
    healthy. Exit code 0 when healthy or when it
    needs attention (--json `verdict` says which), 8 when unhealthy.
    """
    from vault_tool.checks import doctor as doctor_module

    with _checkup(vault_path) as checkup:
        report = doctor_module.doctor(checkup, progress=progress_callback("Checking files"))
    result = report.to_dict()

    def render(out: Any) -> None:
        for check in report.checks:
            out.print(f"{_MARKS[check.status]} [bold]{check.name}[/bold]: {check.summary}")
            if check.status == "ok":
                continue
            for row in check.details[:50]:
                if "reason" in row:
                    line = f":{row['line']}" if row.get("line") else ""
                    out.print(f"    {shown(row['path'])}{line}  {row['reason']}", markup=False)
                    if row.get("fix") and row["fix"] not in check.fix:
                        out.print(f"      fix: {pasteable(row['fix'])}", markup=False)
                elif "path" in row:
                    out.print(f"    {shown(row['path'])}", markup=False)
                elif "entry" in row:
                    paths = ", ".join(shown(p) for p in row["paths"])
                    out.print(f"    {row['entry']}: {row['subject']} ({paths})", markup=False)
            if len(check.details) > 50:
                out.print(f"    ... and {len(check.details) - 50} more (see --json)")
            if check.fix:
                out.print(f"    [dim]fix:[/dim] {pasteable(check.fix)}", highlight=False)
        failing = [c.name for c in report.checks if c.status == "fail"]
        warning = [c.name for c in report.checks if c.status == "warn"]
        if failing:
            out.print(f"\nThe vault is unhealthy: {', '.join(failing)}.")
        elif warning:
            out.print(f"\nThe vault needs attention: {', '.join(warning)}.")
        else:
            out.print("\nThe vault is healthy.")

    emit(result, as_json, render)
    if not report.healthy:
        ctx.exit(UNHEALTHY)


@click.command()
@click.option(
    "--ledger-older-than",
    "older_than",
    type=FiniteRange(0, 36500),
    metavar="DAYS",
    help="Also drop search records older than DAYS that no feedback refers to.",
)
@vault_options
def gc(older_than: float | None, vault_path: str | None, as_json: bool) -> None:
    """Compact the ledger, merge the index into one segment, and pack git's objects.

    The ledger loses only torn lines (left by a crash mid-write), and with
    --ledger-older-than also old search records nobody gave feedback on. Then `git gc`
    and `git commit-graph write --reachable --changed-paths`. Memories and their
    history are never changed. Prints sizes before and after.
    """
    from vault_tool.ops import gc as gc_module

    with open_vault(vault_path) as vault:
        report = gc_module.collect(
            vault, older_than_days=older_than, progress=progress_callback("Collecting garbage")
        )
    result = report.to_dict()

    def render(out: Any) -> None:
        from rich.table import Table

        table = Table("", "Before", "After", box=None)
        for name, before in report.before.items():
            after = report.after.get(name, 0)
            if name.endswith("_bytes"):
                table.add_row(name.removesuffix("_bytes"), _size(before), _size(after))
            else:
                table.add_row(name.replace("_", " "), str(before), str(after))
        out.print(table)
        ledger = report.ledger
        out.print(
            f"Ledger: {ledger.kept} records kept in {ledger.files} files; dropped "
            f"{ledger.torn_dropped} torn lines and {ledger.old_searches_dropped} old "
            f"searches; salvaged {ledger.salvaged} records."
        )

    emit(result, as_json, render)


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


COMMANDS = [verify, doctor, gc]
