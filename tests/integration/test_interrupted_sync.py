"""A `vault-tool sync` killed inside its merge: whichever process notices what it left (a
running vault's next write, its watcher, the next sync) undoes the merge, nothing is
committed as a person's hand edit, the next sync makes the merge again, and doctor tells
the stopped sync's merge from a merge a person began.

The sync is a real process, killed by git at a chosen point (tests/sync_kills.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import sync_kills
from tests.cli_support import invoke
from tests.clones import fact, memory_args, team
from tests.helpers import eventually, git
from vault_tool.engine.vault import Vault
from vault_tool.storage.processes import HEAD_MOVERS, git_processes
from vault_tool.watcher import Watcher

RECORD = Path(".git") / "vault-tool" / "sync-merge"


def _apart(tmp_path: Path, titles: tuple[str, ...] = ("Alpha report",)) -> tuple[Path, Path]:
    """Two clones: A's memories pushed, B with a commit of its own (a sync must merge)."""
    tmp_path.mkdir(exist_ok=True)
    _, (a_path, b_path) = team(tmp_path)
    with Vault.open(a_path) as a:
        for title in titles:
            a.remember(memory_args(title, f"# {title}\n\na\n", [fact("a", "wrote", title)], []))
        assert a.team.sync().status == "synced"
    with Vault.open(b_path) as b:
        b.remember(memory_args("From B", "# From B\n\nb\n", [fact("b", "wrote", "this")], []))
    return a_path, b_path


def _killed(b_path: Path, point: str, tmp_path: Path) -> None:
    armed = sync_kills.arm(b_path, point, tmp_path / "kills")
    done = sync_kills.sync(b_path)
    assert done.returncode == -9, done.stdout + done.stderr
    assert not armed.exists()
    # The killed sync's git goes on for a moment (its hook ran inside it): until it has
    # ended, the undo answers "retry" (vault_busy), as it should; the test waits it out.
    eventually(lambda: not git_processes(b_path.resolve(), HEAD_MOVERS | {b"commit", b"add"}))


@pytest.mark.parametrize("next_step", ["write", "sync"])
def test_a_sync_killed_before_its_merge_commit_is_undone_by_a_running_vault(
    tmp_path: Path, next_step: str
):
    _, b_path = _apart(tmp_path)
    with Vault.open(b_path, client="server") as b:  # a server, open all along
        before = git(b_path, "rev-parse", "HEAD")
        _killed(b_path, "commit", tmp_path)
        assert (b_path / ".git" / "MERGE_HEAD").exists() and (b_path / RECORD).exists()
        if next_step == "write":
            made = b.remember(memory_args("After", "# After\n\nc\n", [fact("c", "is", "d")], []))
            assert made["status"] == "created"
            assert git(b_path, "rev-parse", "HEAD^") == before
        outcome = b.team.sync()
        assert outcome.status == "synced" and outcome.merge == "merge", outcome
        assert b.search({"query": "alpha report"})["selected_hits"]
    assert not (b_path / ".git" / "MERGE_HEAD").exists() and not (b_path / RECORD).exists()
    assert git(b_path, "status", "--porcelain") == ""
    assert "Hand edit" not in git(b_path, "log", "--format=%s")


def test_a_sync_killed_inside_git_merge_is_undone_and_never_taken_in_as_hand_edits(
    tmp_path: Path,
):
    a_path, b_path = _apart(tmp_path, ("From A one", "From A two"))
    with Vault.open(b_path, client="server") as b:
        before = git(b_path, "rev-parse", "HEAD")
        watcher = Watcher(b).start()
        try:
            eventually(watcher.ready.is_set, timeout=30)
            _killed(b_path, "checkout", tmp_path)
            # What git's merge wrote before it died is undone by the watcher's look at it.
            eventually(
                lambda: (
                    not (b_path / RECORD).exists()
                    and git(b_path, "status", "--porcelain", "--untracked-files=all") == ""
                ),
                timeout=30,
                what="the stopped sync's merge to be undone",
            )
            assert git(b_path, "rev-parse", "HEAD") == before
            assert not (b_path / ".git" / "index.lock").exists()
            outcome = b.team.sync()
            assert outcome.status == "synced" and outcome.commits_in == 2, outcome
        finally:
            watcher.stop()
    log = git(b_path, "log", "--format=%s%n%b")
    assert "Hand edit" not in log
    assert git(a_path, "rev-parse", "HEAD") in git(b_path, "rev-list", "HEAD").split()


def test_a_sync_killed_inside_a_fast_forward_is_undone_by_the_next_sync(tmp_path: Path):
    _, (a_path, b_path) = team(tmp_path)
    with Vault.open(a_path) as a:
        for title in ("Ahead one", "Ahead two"):
            a.remember(memory_args(title, f"# {title}\n\na\n", [fact("a", "wrote", title)], []))
        a.team.sync()
    with Vault.open(b_path, client="server") as b:
        before = git(b_path, "rev-parse", "HEAD")
        _killed(b_path, "checkout", tmp_path)
        assert git(b_path, "rev-parse", "HEAD") == before
        outcome = b.team.sync()
        assert outcome.merge == "fast-forward" and outcome.commits_in == 2, outcome
    assert git(b_path, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(b_path, "rev-parse", "HEAD") == git(a_path, "rev-parse", "HEAD")


def test_doctor_tells_a_stopped_syncs_merge_from_a_persons(tmp_path: Path):
    _, b_path = _apart(tmp_path / "stopped")
    _killed(b_path, "commit", tmp_path)
    said = invoke("doctor", "--vault", b_path, "--json")
    assert "`vault-tool sync` was stopped" in said.stdout, said.stdout
    assert "git merge --continue" not in said.stdout
    assert invoke("sync", "--vault", b_path).exit_code == 0  # undone, and merged again

    _, person = _apart(tmp_path / "person")
    git(person, "fetch", "-q", "origin")
    git(person, "merge", "-q", "--no-ff", "--no-commit", "origin/main")  # a person's merge
    said = invoke("doctor", "--vault", person, "--json")
    assert "git merge --continue" in said.stdout, said.stdout
    assert "`vault-tool sync` was stopped" not in said.stdout
