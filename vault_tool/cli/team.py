"""A vault shared through a git remote: remote, sync, and the merge driver git calls."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from vault_tool.cli.output import emit, open_vault, shown, shown_in_markup, vault_options
from vault_tool.core.redact import redact_tree


@click.group()
def remote() -> None:
    """The git remotes a team's vault syncs with (`git remote`, as vault-tool sees it)."""


@remote.command("add")
@click.argument("name")
@click.argument("url")
@vault_options
def remote_add(name: str, url: str, vault_path: str | None, as_json: bool) -> None:
    """Add a remote: a bare repository's path, or a forge's URL (ssh or https).

    Then `vault-tool sync` fetches from it, merges, and pushes to it. Credentials are
    git's own (ssh keys, a credential helper): vault-tool never asks for a password.
    """
    with open_vault(vault_path, catch_up=False) as vault:
        vault.team.add_remote(name, url)
    url = redact_tree(url)  # (a token in it stays in .git/config, not on the screen)
    emit({"name": name, "url": url}, as_json, lambda out: out.print(
        f"Added remote {shown_in_markup(name)} ({shown_in_markup(url)}): "
        "`vault-tool sync` syncs with it."
    ))  # fmt: skip


@remote.command("list")
@vault_options
def remote_list(vault_path: str | None, as_json: bool) -> None:
    """List the remotes, name and URL."""
    with open_vault(vault_path, catch_up=False) as vault:
        listed = vault.team.remotes()

    def render(out: Any) -> None:
        if not listed:
            out.print("No remote yet: add one with `vault-tool remote add origin URL`.")
        width = max(map(len, listed), default=0)
        for name, url in listed.items():
            out.print(f"{shown_in_markup(name.ljust(width))}  {shown_in_markup(url)}")

    emit([{"name": n, "url": u} for n, u in listed.items()], as_json, render)


@click.command()
@click.option(
    "--remote",
    "remote_name",
    metavar="NAME",
    help="The remote to sync with (default: the branch's upstream, else the only one).",
)
@vault_options
def sync(remote_name: str | None, vault_path: str | None, as_json: bool) -> None:
    """Fetch the remote's branch, merge it, push: one line of status.

    Merges keep every commit (version ids stay good); memory files merge fact by fact
    (docs/team.md). A push rejected because the remote moved is fetched, merged and
    pushed again, a few times with a pause; nothing is ever force-pushed. An unreachable
    remote is not an error: the line says so (status `offline`, exit code 0) and writes
    go on. A merge only a person can finish exits 6 and names the files.
    """
    with open_vault(vault_path) as vault:  # (a fresh clone's index is filled first)
        outcome = vault.team.sync(remote_name)
    emit(outcome.to_dict(), as_json, lambda out: out.print(shown_in_markup(outcome.line())))


@click.command(
    "merge-driver",
    # Only `--help`: a path git hands over as `-h….md` must never print the help.
    context_settings={"ignore_unknown_options": True, "help_option_names": ["--help"]},
)
@click.argument("base", type=click.Path(path_type=Path))
@click.argument("ours", type=click.Path(path_type=Path))
@click.argument("theirs", type=click.Path(path_type=Path))
@click.argument("marker_size", type=int)
@click.argument("path")
def merge_driver(base: Path, ours: Path, theirs: Path, marker_size: int, path: str) -> None:
    """The merge driver git runs for memory files: `-- %O %A %B %L %P`.

    Registered in .git/config by init and by every open of the vault; `.gitattributes`
    names it for `*.md`. Writes the merge into OURS; exit 0 when merged, 1 when a body
    holds conflict markers (git then stops the merge as for any conflict).
    """
    from vault_tool.storage.merge_driver import run

    try:
        code = run(base, ours, theirs, marker_size, path)
    except Exception as problem:  # git must get an exit code, and ours untouched
        click.echo(f"vault-tool merge-driver: {shown(path)}: {shown(problem)}", err=True)
        code = 2
    raise click.exceptions.Exit(code)


@click.command(
    "textconv",
    hidden=True,  # git runs it, not a person or an agent
    context_settings={"ignore_unknown_options": True, "help_option_names": ["--help"]},
)
@click.argument("file", type=click.Path(path_type=Path))
def textconv(file: Path) -> None:
    """The diff driver git runs on one side of a memory file's diff: `-- FILE`.

    Prints the file's meaning as lines (type, title, key, tags, each entity, each fact
    with its validity, supersedes, expires_at, other keys), a blank line, then its body,
    so `git diff`, `git log -p` and `git show` show a changed fact as one changed line. A
    note without front matter prints as it is, as does a file that does not parse.
    Registered as diff.vault-tool.textconv by init and every open of the vault;
    `.gitattributes` names it for `*.md`. `git log -p --no-textconv` shows the raw files.
    """
    from vault_tool.cli.textconv import run

    raise click.exceptions.Exit(run(["--", str(file)]))


COMMANDS = (remote, sync, merge_driver, textconv)
