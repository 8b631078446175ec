"""A write moves its branch in-process exactly as `git update-ref -m MSG refs/heads/B NEW
OLD` does (storage/refs.py): the same ref file, the same reflog lines of the branch and of
HEAD, packed refs read, git's locks respected; where git would do more (a
reference-transaction hook, a date from the environment) git's command runs. Real
repositories, real git."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers import create_args, git
from tests.integration.test_objects_in_process import git_commands
from vault_tool.engine.vault import Vault
from vault_tool.storage import refs


def _last_lines(root: Path) -> tuple[str, str]:
    logs = root / ".git" / "logs"
    return (
        (logs / "refs" / "heads" / "main").read_text().splitlines()[-1],
        (logs / "HEAD").read_text().splitlines()[-1],
    )


def _git_locks(root: Path) -> list[Path]:
    """git's lock files left in .git (the vault's own flock file is always there)."""
    return [p for p in (root / ".git").glob("**/*.lock") if "vault-tool" not in p.parts]


def test_the_ref_and_both_reflog_lines_are_the_ones_git_update_ref_writes(vault: Vault):
    root = vault.root
    before = git(root, "rev-parse", "HEAD")
    made = vault.remember(create_args("Ana owns the billing service"))
    ours = _last_lines(root)
    assert (root / ".git" / "refs" / "heads" / "main").read_text() == made["version_id"] + "\n"
    # The same move made again by git itself, at the same moment, by the same committer.
    git(root, "update-ref", "refs/heads/main", before, made["version_id"])
    when = ours[0].split("\t")[0].split("> ", 1)[1]
    subject = git(root, "log", "-1", "--format=%s", made["version_id"])
    subprocess.run(
        ["git", "update-ref", "-m", f"commit: {subject}", "refs/heads/main", made["version_id"],
         before],
        cwd=root, check=True, env={**os.environ, "GIT_COMMITTER_DATE": when},
    )  # fmt: skip
    assert _last_lines(root) == ours
    assert ours[0].startswith(f"{before} {made['version_id']} ")
    assert git(root, "reflog", "-1", "--format=%gs") == f"commit: {subject}"
    assert git(root, "fsck", "--strict", "--no-progress", "--no-dangling") == ""
    assert _git_locks(root) == []


def test_a_branch_only_packed_refs_name_is_read_there_and_written_loose(vault: Vault):
    root = vault.root
    vault.remember(create_args("Warm up"))
    git(root, "pack-refs", "--all")
    assert not (root / ".git" / "refs" / "heads" / "main").exists()
    with git_commands(vault) as ran:
        made = vault.remember(create_args("Bo runs the deploys"))
    assert ran == []
    assert git(root, "rev-parse", "main") == made["version_id"]
    assert git(root, "fsck", "--strict", "--no-progress", "--no-dangling") == ""


def test_a_reference_transaction_hook_has_git_move_the_branch_and_runs(vault_path: Path):
    hook = vault_path / ".git" / "hooks" / "reference-transaction"
    hook.write_text(f'#!/bin/sh\necho "$1" >> {vault_path / ".git" / "hook-ran"}\n')
    hook.chmod(0o755)
    with Vault.open(vault_path) as vault:
        vault.remember(create_args("Warm up"))
        with git_commands(vault) as ran:
            vault.remember(create_args("Bo runs the deploys"))
    assert "update-ref" in ran
    assert "committed" in (vault_path / ".git" / "hook-ran").read_text()


def test_a_branch_lock_a_git_holds_is_left_to_git(vault: Vault):
    root = vault.root
    vault.remember(create_args("Warm up"))
    lock = root / ".git" / "refs" / "heads" / "main.lock"
    lock.write_text("")
    repo = vault._store.repo
    real = repo.run

    def git_done_meanwhile(*args, **kwargs):  # the other git lets its lock go as ours starts
        if "update-ref" in args:
            lock.unlink(missing_ok=True)
        return real(*args, **kwargs)

    repo.run = git_done_meanwhile  # (git_commands wraps it, and removes both at its end)
    with git_commands(vault) as ran:
        made = vault.remember(create_args("Bo runs the deploys"))
    assert ran == ["update-ref"]
    assert git(root, "rev-parse", "main") == made["version_id"]
    assert _git_locks(root) == []


def test_a_branch_that_moved_under_its_lock_is_refused_and_keeps_its_value(vault: Vault):
    root = vault.root
    vault.remember(create_args("Warm up"))
    head = git(root, "rev-parse", "HEAD")
    parent = git(root, "rev-parse", "HEAD~1")
    with pytest.raises(Exception, match="moved meanwhile"):
        refs.move_branch(root / ".git", "main", parent, parent, b"A <a@b>", b"1 +0000", "x")
    assert git(root, "rev-parse", "HEAD") == head
    assert _git_locks(root) == []


@pytest.mark.parametrize(
    ("setting", "value"),
    [("core.logAllRefUpdates", "false"), ("extensions.refStorage", "reftable")],
)
def test_settings_git_reads_otherwise_leave_the_move_to_git(
    vault_path: Path, setting: str, value: str
):
    with Vault.open(vault_path) as vault:
        vault.remember(create_args("Warm up"))
        git(vault_path, "config", setting, value)
        assert not vault._store.commits.settings.refs_in_process()
        git(vault_path, "config", "--unset", setting)
        assert vault._store.commits.settings.refs_in_process()


def test_locks_a_killed_writer_left_are_removed_at_open_when_no_git_works(vault_path: Path):
    with Vault.open(vault_path) as vault:
        vault.remember(create_args("Warm up"))
    for lock in (vault_path / ".git" / "HEAD.lock", vault_path / ".git/refs/heads/main.lock"):
        lock.write_text("")
    with Vault.open(vault_path) as vault, git_commands(vault) as ran:
        made = vault.remember(create_args("Bo runs the deploys"))
    # Moved in-process (no lock was left to wait out); a new process reads git's settings.
    assert [name for name in ran if name not in ("config", "var")] == []
    assert git(vault_path, "rev-parse", "main") == made["version_id"]
    assert _git_locks(vault_path) == []


def test_a_lock_a_live_git_holds_is_not_removed_at_open(vault_path: Path):
    with Vault.open(vault_path) as vault:
        vault.remember(create_args("Warm up"))
    lock = vault_path / ".git" / "HEAD.lock"
    lock.write_text("")
    holder = subprocess.Popen(
        ["git", "hash-object", "--stdin"], cwd=vault_path, stdin=subprocess.PIPE
    )
    try:
        Vault.open(vault_path).close()
        assert lock.exists()
    finally:
        holder.communicate(b"")
        lock.unlink()
