"""A team's first steps, from a fresh clone: the merge driver outlives the Python that
registered it, doctor says a fresh clone's index is yet to be built, an unreachable remote
is named by what git said about it, and conflict markers name the sides. Real git, bare
remote, real index."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.clones import clone, fact, memory_args, staging_on_both, team, update_args
from tests.helpers import git
from vault_tool.checks import doctor as doctor_module
from vault_tool.checks.checkup import Checkup
from vault_tool.engine.vault import Vault
from vault_tool.storage import merge_setup


def _pull(path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A person's plain `git pull` (no vault-tool opens the clone first)."""
    return subprocess.run(
        ["git", "pull", "--no-rebase", "--no-edit"],
        cwd=path,
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )


def _edited_on_both(tmp_path: Path, ours: str, theirs: str) -> tuple[Path, Path, dict]:
    """Two clones; one memory whose body's line each clone changed (A's change is pushed)."""
    a_path, b_path, made = staging_on_both(tmp_path)
    with Vault.open(b_path, client="agent-b") as b:
        b.remember(update_args(made, b, body=lambda old: old.replace("k3s.", ours)))
    with Vault.open(a_path, client="agent-a") as a:
        a.remember(update_args(made, a, body=lambda old: old.replace("k3s.", theirs)))
        a.team.sync()
    return a_path, b_path, made


def test_a_recreated_virtual_environment_does_not_break_a_plain_git_pull(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    _, (a_path, _) = team(tmp_path)
    # The clone is opened by a Python that is then removed (its virtual environment made
    # anew elsewhere); the vault-tool on PATH is the new one.
    old = tmp_path / "old-venv" / "bin" / "python"
    old.parent.mkdir(parents=True)
    old.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    old.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(old))
    b_path = clone(tmp_path / "remote.git", tmp_path / "member-b")
    monkeypatch.undo()
    assert str(old) in git(b_path, "config", "merge.vault-tool.driver")
    with Vault.open(a_path, client="agent-a") as a:
        made = a.remember(
            memory_args("Staging", "# Staging\n\nk3s.\n", [fact("staging", "runs_on", "k3s")], [])
        )
        a.team.sync()
    git(b_path, "pull", "--quiet", "--no-edit")
    with Vault.open(b_path, client="agent-b") as b:
        b.remember(
            update_args(made, b, facts=lambda old: [*old, fact("staging", "owned_by", "Ben")])
        )
    with Vault.open(a_path, client="agent-a") as a:
        a.remember(update_args(made, a, facts=lambda old: [*old, fact("staging", "costs", "40")]))
        a.team.sync()
    (tmp_path / "old-venv" / "bin" / "python").unlink()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    pulled = _pull(b_path, env)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    text = (b_path / made["path"]).read_text()
    assert "owned_by" in text and "costs" in text and "<<<<<<<" not in text


def test_the_driver_says_how_to_fix_it_when_no_vault_tool_can_be_found(tmp_path: Path):
    _, b_path, _ = _edited_on_both(tmp_path, "k3s on arm.", "k3s on x86.")
    # Registered by a Python since removed, and no vault-tool on git's PATH.
    gone = tmp_path / "gone" / "python"
    git(b_path, "config", "merge.vault-tool.driver", merge_setup.driver_command(str(gone)))
    env = {**os.environ, "PATH": "/usr/bin:/bin"}
    pulled = _pull(b_path, env)
    assert pulled.returncode != 0
    said = pulled.stdout + pulled.stderr
    assert "no vault-tool" in said and "open the vault with vault-tool" in said


def test_doctor_in_a_fresh_clone_says_the_index_will_be_built(tmp_path: Path):
    remote, _ = team(tmp_path, members=1)
    fresh = tmp_path / "fresh"
    subprocess.run(["git", "clone", "--quiet", str(remote), str(fresh)], check=True)
    with Checkup(fresh) as checkup:
        report = doctor_module.doctor(checkup)
    (index,) = [c for c in report.checks if c.name == "index"]
    assert index.status == "warn"
    assert "built" in index.summary
    assert report.verdict != "unhealthy"


def test_an_unreachable_remote_is_named_by_what_git_said_about_it(tmp_path: Path):
    _, (a_path,) = team(tmp_path, members=1)
    git(a_path, "remote", "set-url", "origin", str(tmp_path / "nowhere.git"))
    with Vault.open(a_path, client="agent-a") as a:
        outcome = a.team.sync()
    assert outcome.status == "offline"
    assert "does not appear to be a git repository" in outcome.reason
    assert "Please make sure" not in outcome.reason


def test_conflict_markers_name_each_side_by_its_branch_and_writer(tmp_path: Path):
    _, b_path, made = _edited_on_both(tmp_path, "k3s on arm.", "k3s on x86.")
    pulled = _pull(b_path, os.environ.copy())
    assert pulled.returncode == 1
    body = (b_path / made["path"]).read_text()
    assert "<<<<<<< main (agent-b)" in body, body
    assert ">>>>>>> origin/main (agent-a)" in body, body
    assert "ours:" not in body and "theirs:" not in body
