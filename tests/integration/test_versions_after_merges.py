"""After merges, the version the index records for a file is one a write accepts: the walk
that finds many files' versions at once agrees with `git log -1 -- PATH`, and a version
naming another commit of the same bytes is as good as the current one."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.helpers import create_args, git
from vault_tool.engine.vault import Vault
from vault_tool.storage.store import Store


def _commit(root: Path, path: str, text: str, message: str, when: int) -> str:
    (root / path).write_text(text)
    stamp = f"{1_700_000_000 + when} +0000"
    env = {**os.environ, "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
    subprocess.run(["git", "add", "--", path], cwd=root, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", message], cwd=root, check=True, env=env)
    return git(root, "rev-parse", "HEAD")


def _merge(root: Path, branch: str, when: int) -> str:
    stamp = f"{1_700_000_000 + when} +0000"
    env = {**os.environ, "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
    merge = ["git", "merge", "-q", "--no-edit", branch]
    subprocess.run(merge, cwd=root, check=True, env=env)
    return git(root, "rev-parse", "HEAD")


def test_a_file_a_merge_kept_from_one_side_has_that_sides_version(vault_path: Path):
    path = "notes/plan.md"
    (vault_path / "notes").mkdir()
    _commit(vault_path, path, "# Plan\n\nv0\n", "v0", 1_000)
    git(vault_path, "checkout", "-qb", "side")
    side = _commit(vault_path, path, "# Plan\n\nside\n", "side", 2_000)
    git(vault_path, "checkout", "-q", "main")
    _commit(vault_path, path, "# Plan\n\nmain\n", "main, newer", 3_000)  # newer than side's
    # The person resolves the conflict by keeping the side's file as it was.
    subprocess.run(["git", "merge", "-q", "side"], cwd=vault_path, capture_output=True)
    _commit(vault_path, path, "# Plan\n\nside\n", "Merge side, keeping its plan", 4_000)
    store = Store.open(vault_path)
    try:
        assert git(vault_path, "log", "-1", "--format=%H", "--", path) == side
        assert store.last_commits({path}) == {path: side}
    finally:
        store.close()


def test_a_file_a_merge_made_of_both_sides_has_the_merge_as_its_version(vault_path: Path):
    path, other = "notes/plan.md", "notes/other.md"
    (vault_path / "notes").mkdir()
    _commit(vault_path, path, "# Plan\n\none\n\ntwo\n\nthree\n", "base", 1_000)
    git(vault_path, "checkout", "-qb", "side")
    _commit(vault_path, path, "# Plan\n\nONE\n\ntwo\n\nthree\n", "side", 2_000)
    git(vault_path, "checkout", "-q", "main")
    _commit(vault_path, path, "# Plan\n\none\n\ntwo\n\nTHREE\n", "main", 3_000)
    _commit(vault_path, other, "# Other\n", "later, elsewhere", 3_500)
    merge = _merge(vault_path, "side", 4_000)
    store = Store.open(vault_path)
    try:
        assert store.last_commits({path, other})[path] == merge
        assert git(vault_path, "log", "-1", "--format=%H", "--", path) == merge
    finally:
        store.close()


def test_an_agent_updates_with_the_version_it_read_when_two_commits_hold_those_bytes(
    vault_path: Path,
):
    with Vault.open(vault_path) as vault:
        made = vault.remember(create_args("Staging runs on k3s", "Since May."))
    path = made["path"]
    text = (vault_path / path).read_text()
    edited = text.replace("Since May.", "Since May, on three nodes.")
    git(vault_path, "checkout", "-qb", "side")
    _commit(vault_path, path, edited, "the same edit, on a branch", 40_000)
    git(vault_path, "checkout", "-q", "main")
    _commit(vault_path, path, edited, "the same edit, on main", 30_000)
    _merge(vault_path, "side", 41_000)  # both sides alike: the merge is neither's
    with Vault.open(vault_path) as vault:
        vault.reindex()
        read = vault.read(made["memory_id"])
        update = {
            "mode": "update",
            "memory_id": made["memory_id"],
            "expected_version_id": read["version_id"],
            "content_md": read["content_md"] + "\nA third paragraph.\n",
            "semantic_delta": read["semantic_delta"],
        }
        assert vault.remember(update)["status"] == "updated"
