"""Setting a vault up: `init`."""

from __future__ import annotations

import shlex

import click

from vault_tool.cli.output import (
    emit,
    program,
    progress_callback,
    shown_in_markup,
    vault_options,
)


@click.command()
@click.argument("path", required=False, type=click.Path(file_okay=False))
@click.option("--sample", is_flag=True, help="Fill the new vault with the bundled sample memories.")
@click.option(
    "--nested",
    is_flag=True,
    help="Make the vault a repository of its own even inside another git repository.",
)
@vault_options
def init(
    path: str | None, sample: bool, nested: bool, vault_path: str | None, as_json: bool
) -> None:
    """Make a folder a vault: a new one, or a folder of notes you already have, in place.

    PATH defaults to --vault, then $VAULT_TOOL_VAULT, then the current folder. An existing
    folder (an Obsidian vault, say) is adopted as it is: no note is rewritten. If it is a git
    repository its history is kept and one commit adds the vault's own files (a note holding
    a secret is kept out of search: it is in git's history, and `vault-tool doctor` says how
    to purge it); if not, a new repository's first commit holds the vault's files and every
    note, except a note that holds a secret (it stays out of git; `vault-tool doctor` lists
    it). Any Markdown file is
    a memory: its title comes from front matter `title`, else an H1 it opens with, else its
    file name. Not memories, and left as they are: the folders Obsidian's settings name for
    templates, what `.vaultignore` (gitignore syntax) or git ignores, and the root README.md
    (a line `!/README.md` in `.vaultignore` makes it a note). A folder inside another git
    repository is refused unless --nested or that repository ignores it (its .gitignore
    lists the folder). With --sample the new vault gets a small
    engineering team's memories, each in its own commit. Works without a global git identity
    (it then commits as vault-tool).
    """
    from vault_tool.engine.vault import Vault
    from vault_tool.ops.sample import create_sample_vault
    from vault_tool.storage.config import resolve_vault_path

    root = resolve_vault_path(path or vault_path)
    adopted: dict = {}
    if sample:
        create_sample_vault(root, progress_callback("Writing sample memories"), nested=nested)
    else:
        adopted = Vault.create(root, nested=nested)
    held_back = adopted.get("held_back", {})
    with Vault.open(root, catch_up=False) as vault:
        report = vault.catch_up(progress=progress_callback("Indexing"))
        # A repository's notes are committed already: one holding a secret is kept out of
        # search, and its secret is in the history (doctor says how to purge it).
        in_git = {p for p, kind in report.kept.items() if kind == "secret" and p not in held_back}
        result = {
            "vault": str(root),
            "memories": vault.count(),
            "version_id": vault.head(),
            "kept_git_history": adopted.get("kept_git_history", False),
            "held_back": held_back,
            "secrets_in_git": {p: report.problems[p]["reason"] for p in sorted(in_git)},
            "unreadable": {
                p: e["reason"]
                for p, e in report.problems.items()
                if p not in held_back and p not in in_git
            },
            "attachments_left_out": adopted.get("other_files", 0),
            # Notes the folder's rules say are no memories (storage/left_out.py), and why.
            "left_out": adopted.get("left_out", {}),
            "readme": adopted.get("readme"),
        }

    def render(out):  # type: ignore[no-untyped-def]
        count = result["memories"]
        noun = "memory" if count == 1 else "memories"
        how = "; its git history is kept" if result["kept_git_history"] else ""
        out.print(f"Created vault at [bold]{shown_in_markup(root)}[/bold] with {count} {noun}{how}")
        for title, found in (
            ("Not committed", "held_back"),
            ("Not searchable", "secrets_in_git"),
            ("Not readable", "unreadable"),
        ):
            for rel, why in sorted(result[found].items()):
                out.print(f"  {title}: {shown_in_markup(rel)}: {shown_in_markup(why)}")
        if result["left_out"]:
            out.print(f"  {_left_out_line(result['left_out'])}; they stay as they are")
        if result["readme"]:
            out.print(
                f"  {result['readme']} is the folder's readme, not a memory "
                "(a line `!/README.md` in .vaultignore makes it one)"
            )
        if result["attachments_left_out"]:
            out.print(
                f"  {result['attachments_left_out']} files that are not notes (attachments) are"
                " not in git: `git add` them if you want them versioned."
            )
        if result["secrets_in_git"]:
            out.print(
                "Secrets are in this repository's history: remove them from the files, rotate "
                "them and purge the history (`vault-tool doctor` says how)."
            )
        if result["held_back"] or result["unreadable"]:
            out.print("Fix those files; `vault-tool doctor` lists them with the fix.")
        again = f"{program()} search WORDS --vault {shlex.quote(str(root))}"
        out.print(f"Next: [bold]{shown_in_markup(again)}[/bold]")

    emit(result, as_json, render)


def _left_out_line(left_out: dict[str, str]) -> str:
    """`N notes left out: 2 in the Obsidian templates folder (...), 1 ignored by git`."""
    reasons: dict[str, int] = {}
    for why in left_out.values():
        reasons[why] = reasons.get(why, 0) + 1
    noun = "note" if len(left_out) == 1 else "notes"
    parts = ", ".join(f"{n} {shown_in_markup(why)}" for why, n in sorted(reasons.items()))
    return f"{len(left_out)} {noun} left out: {parts}"


COMMANDS = [init]
