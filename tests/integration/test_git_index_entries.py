"""A write leaves git's index as a person's git can use it: no intent-to-add entry stays
behind, so `git stash` and `git merge` (which stashes first) keep working. An intent-to-add
entry is what `git commit -- <new file>` needs; with one in the index, git 2.39 refuses
`git stash` ("Entry not uptodate. Cannot merge") and `git merge` ("fatal: stash failed").
Every repository and hook here is real."""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path

import pytest

from tests.helpers import create_args, git
from vault_tool.engine.vault import Vault
from vault_tool.errors import VaultError

NOTE = "---\nmemory_type: note\ntitle: Kept by hand\n---\n# Kept by hand\n\nTyped.\n"


def refusing_hook(path: Path) -> None:
    """A pre-commit hook that refuses every commit (a linter that fails, say)."""
    hook = path / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\necho 'refused by the hook' >&2\nexit 1\n")
    hook.chmod(0o755)


def stash(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", "stash", "push", "-m", "a person's stash"], cwd=path, capture_output=True, text=True
    )


def a_tracked_edit(path: Path) -> None:
    """Something for the person to stash: a tracked file of theirs, edited."""
    (path / "todo.txt").write_text("one\n")
    git(path, "add", "todo.txt")
    git(path, "commit", "-qm", "My todo list", "--", "todo.txt")
    (path / "todo.txt").write_text("one\ntwo\n")


@pytest.mark.parametrize("how", ["hand edit", "tool write"])
def test_a_commit_the_hook_refuses_leaves_no_intent_to_add_entry(vault_path: Path, how: str):
    a_tracked_edit(vault_path)
    refusing_hook(vault_path)
    before = git(vault_path, "rev-parse", "HEAD")
    with Vault.open(vault_path) as vault:
        if how == "hand edit":
            (vault_path / "notes").mkdir()
            (vault_path / "notes" / "kept.md").write_text(NOTE)
            with contextlib.suppress(VaultError):  # refused or reported: nothing committed
                vault.commit_hand_edits()
        else:
            with pytest.raises(VaultError):
                vault.remember(create_args("Refused by the hook"))
    assert git(vault_path, "rev-parse", "HEAD") == before

    # The index holds what it held before: the person's tracked file, no new entry.
    assert git(vault_path, "ls-files", "--", "notes", "decision") == ""
    stashed = stash(vault_path)
    assert stashed.returncode == 0, stashed.stdout + stashed.stderr
    assert (vault_path / "todo.txt").read_text() == "one\n"
