"""Crashes: the short crash harness, and one regression test per fault it found.

The harness (tests/harness/crash.py) kills real writer, server, CLI, watcher and sync
processes with SIGKILL, alone or with their git children, or has a writer end itself or
fail at an injected fault, and checks the vault after each.
The tests after it pin down each bug the harness found, without randomness.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness import crash
from tests.helpers import create_args, eventually, git
from vault_tool.engine.vault import Vault
from vault_tool.errors import VaultBusy, VaultUnavailable
from vault_tool.storage.git import blob_sha
from vault_tool.storage.store import Store

# Every process kind, each killed alone and with its process group (git children too),
# the writer with one injected fault (tests/faults.py) at a random step of its writes, and
# a sync killed by git inside its merge (writing the folder; before its commit) and at a
# random moment.
PLAN = [
    ("faults", False),
    ("writer", True),
    ("watcher", True),
    ("writer", False),
    ("server", True),
    ("watcher", False),
    ("cli", True),
    ("writer", True),
    ("watcher", True),
    ("server", False),
    ("writer", False),
    ("cli", False),
    ("faults", True),
    ("watcher", True),
    ("faults", False),
    ("sync@checkout", True),
    ("sync@commit", True),
    ("sync@moment", False),
]


def test_processes_killed_at_random_moments_lose_no_acknowledged_write(vault_path: Path):
    report = crash.run(vault_path, len(PLAN), seed=7, plan=PLAN, max_run=0.8)

    counts = report.counts
    assert counts["cycles"] == len(PLAN)
    assert counts["acknowledged_writes"] > 0 and counts["hand_edits"] > 0, counts
    assert sum(report.faults.values()) == 3, (report.faults, report.unfired)
    assert report.sync_kills["checkout"] == report.sync_kills["commit"] == 1, report.unfired
    failures = {k: counts[k] for k in crash.COUNTERS[3:] if counts[k]}
    assert failures == {}, "\n".join(report.problems[:20])


# --- regressions found by the harness ------------------------------------------------------


def test_a_file_committed_with_plain_git_after_indexing_gets_that_commit_as_version(
    vault_path: Path,
):
    # Also what a watcher killed between its commit and its index update leaves behind.
    (vault_path / "notes").mkdir()
    (vault_path / "notes" / "a.md").write_text("# A note\n\nTyped by hand.\n")
    with Vault.open(vault_path) as vault:
        assert vault.read("notes/a")["version_id"] == git(vault_path, "rev-parse", "HEAD")
    git(vault_path, "add", "notes/a.md")
    git(vault_path, "commit", "-q", "-m", "My own commit")

    with Vault.open(vault_path) as vault:
        assert vault.read("notes/a")["version_id"] == git(vault_path, "rev-parse", "HEAD")


@pytest.mark.parametrize("lock", ["HEAD.lock", "index.lock"])
def test_a_lock_left_by_a_killed_git_is_removed_and_the_write_goes_through(
    vault_path: Path, lock: str
):
    (vault_path / ".git" / lock).write_bytes(b"")
    with Vault.open(vault_path) as vault:
        result = vault.remember(create_args())
    assert result["status"] == "created"
    assert not (vault_path / ".git" / lock).exists()
    assert git(vault_path, "status", "--porcelain") == ""


def test_a_lock_held_by_a_live_git_is_waited_for_and_never_removed(vault_path: Path):
    config = vault_path / ".vault" / "config.toml"
    config.write_text(config.read_text().replace("= 30", "= 3"))
    git(vault_path, "commit", "-q", "-m", "Shorter lock timeout", "--", ".vault/config.toml")
    lock = vault_path / ".git" / "HEAD.lock"
    lock.write_bytes(b"")
    # A git that lives (waiting on its stdin) in the vault: the lock may be its own.
    owner = subprocess.Popen(
        ["git", "hash-object", "--stdin"],
        cwd=vault_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )
    try:
        with Vault.open(vault_path) as vault, pytest.raises(VaultBusy) as caught:
            vault.remember(create_args())
        assert "HEAD.lock" in caught.value.message
        assert lock.exists()
    finally:
        owner.communicate(b"")
    assert git(vault_path, "status", "--porcelain") == ""


def _hook(vault_path: Path, name: str, script: str) -> Path:
    """Install a git hook that runs once (it leaves a flag file behind)."""
    flag = vault_path.parent / f"{name}.ran"
    hook = vault_path / ".git" / "hooks" / name
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f'#!/bin/sh\n[ -e "{flag}" ] && exit 0\ntouch "{flag}"\n{script}\n')
    hook.chmod(0o755)
    return flag


def test_a_commit_that_loses_the_race_for_head_is_made_again_on_the_new_head(
    vault_path: Path,
):
    # Another git moves HEAD while our commit runs: git refuses our ref update.
    flag = _hook(
        vault_path,
        "commit-msg",
        (
            'new=$(git commit-tree "HEAD^{tree}" -p HEAD -m "Someone else")\n'
            'git update-ref HEAD "$new"'
        ),
    )
    with Vault.open(vault_path) as vault:
        result = vault.remember(create_args())
    assert flag.exists()
    assert result["status"] == "created"
    assert result["version_id"] == git(vault_path, "rev-parse", "HEAD")
    assert git(vault_path, "log", "-1", "--format=%s", "HEAD^") == "Someone else"
    assert git(vault_path, "status", "--porcelain") == ""


# A person's plain `git commit`, begun while our write has put its new file in git's index
# and not moved HEAD yet, and tried again until git lets it through (in the background: git
# waits for its hook, and the hook's environment names our locked copy of the index).
PERSON_COMMITS = """cd "{vault}" && (unset GIT_INDEX_FILE; for i in $(seq 200); do
  git commit -q -m "My own change" && exit 0; sleep 0.05; done) > /dev/null 2>&1 &"""


def test_a_new_memory_is_never_swept_into_the_persons_own_commit(vault_path: Path):
    (vault_path / "mine.txt").write_text("my own work\n")
    git(vault_path, "add", "mine.txt")
    flag = _hook(vault_path, "post-index-change", PERSON_COMMITS.format(vault=vault_path))
    with Vault.open(vault_path) as vault:
        result = vault.remember(create_args())
    assert flag.exists()
    assert result["status"] == "created"
    eventually(lambda: "My own change" in git(vault_path, "log", "--format=%s"), timeout=30)
    own = git(vault_path, "log", "-1", "--format=%H", "--grep", "My own change")
    assert git(vault_path, "show", "--format=", "--name-only", own) == "mine.txt"
    assert (
        git(vault_path, "log", "-1", "--format=%H", "--", result["path"]) == (result["version_id"])
    )
    assert git(vault_path, "status", "--porcelain") == ""


def test_a_hand_edit_is_committed_as_checked_even_if_saved_again_mid_commit(
    vault_path: Path,
):
    note = vault_path / "notes" / "n.md"
    note.parent.mkdir()
    good = b"# A good note\n\nAll there.\n"
    note.write_bytes(good)
    # The person's editor truncates the file to save it while our commit runs.
    flag = _hook(vault_path, "post-index-change", f': > "{note}"')
    with Vault.open(vault_path, catch_up=False) as vault:
        vault.sync_paths(["notes/n.md"])
        assert flag.exists() and note.read_bytes() == b""
        assert git(vault_path, "show", "HEAD:notes/n.md") == good.decode().strip()
        # The index holds what was committed; the folder, the half-saved file: until that
        # is taken in, a read says so instead of serving bytes the folder no longer has.
        with pytest.raises(VaultBusy, match="changed since the search index read it"):
            vault.read("notes/n")
        # The half-saved file is seen as changed again, and refused: it is empty.
        vault.sync_paths(["notes/n.md"])
        assert "notes/n.md" in vault.problems()
        assert "All there." in vault.read("notes/n")["content_md"]
    assert git(vault_path, "log", "--format=%s").count("Hand edit") == 1


def _interrupted_write(vault_path: Path) -> None:
    data = b"# Renamed before the crash\n\nNot committed yet.\n"
    (vault_path / "notes").mkdir()
    (vault_path / "notes" / "x.md").write_bytes(data)
    journal = vault_path / ".vault" / "run" / "journal"
    journal.mkdir()
    (journal / "1-99999.json").write_text(
        '{"message": "Create note: x", "entries": [{"path": "notes/x.md", '
        f'"tmp": "notes/.x.md.vault-tmp-0", "blob": "{blob_sha(data)}", "title": "x"}}]}}'
    )


def test_a_failed_repair_leaves_no_git_helper_running(vault_path: Path):
    _interrupted_write(vault_path)
    index = vault_path / ".git" / "index"
    index.write_bytes(index.read_bytes()[:-7])  # damaged: the open cannot repair, and fails
    with pytest.raises(VaultUnavailable):
        Store.open(vault_path)
    assert _git_children() == []
    index.unlink()
    git(vault_path, "reset", "-q")
    Store.open(vault_path).close()
    assert git(vault_path, "log", "-1", "--format=%s").startswith("Repair: commit interrupted")


def test_a_repair_git_cannot_make_yet_waits_for_the_next_open(vault_path: Path):
    config = vault_path / ".vault" / "config.toml"
    config.write_text(config.read_text().replace("= 30", "= 1"))
    git(vault_path, "commit", "-q", "-m", "Shorter lock timeout", "--", ".vault/config.toml")
    _interrupted_write(vault_path)
    (vault_path / ".git" / "HEAD.lock").write_bytes(b"")
    owner = subprocess.Popen(
        ["git", "hash-object", "--stdin"],
        cwd=vault_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )
    try:
        Store.open(vault_path).close()  # (git's lock is held: the repair waits)
        assert [c for pid, c in _git_children() if pid != owner.pid] == []
    finally:
        owner.communicate(b"")
    assert "Repair" not in git(vault_path, "log", "-1", "--format=%s")
    (vault_path / ".git" / "HEAD.lock").unlink()
    Store.open(vault_path).close()
    assert git(vault_path, "log", "-1", "--format=%s").startswith("Repair: commit interrupted")


def _git_children() -> list[tuple[int, str]]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == os.getpid() and fields[0] != "Z" and command.startswith("git"):
            found.append((int(entry.name), command))
    return found


def test_a_note_made_and_removed_before_any_commit_leaves_git_clean(vault_path: Path):
    notes = vault_path / "notes"
    notes.mkdir()
    (notes / "indexed.md").write_text("# Indexed, never committed\n")
    (notes / "staged.md").write_text("# Staged by a commit that was killed\n")
    with Vault.open(vault_path, catch_up=False) as vault:
        vault.catch_up()
        git(vault_path, "add", "notes/staged.md")
        (notes / "indexed.md").unlink()
        (notes / "staged.md").unlink()
        vault.sync_paths(["notes/indexed.md"])
        vault.take_in_offline_changes()
        assert vault.at_path("notes/indexed.md") is None
        assert vault.at_path("notes/staged.md") is None
    assert git(vault_path, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(vault_path, "log", "--format=%s") == "Initialize vault"


def test_the_harness_runs_as_a_script(tmp_path: Path):
    out = tmp_path / "report.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.harness.crash",
            "--cycles",
            "1",
            "--vault",
            str(tmp_path / "vault"),
            "--json",
            str(out),
        ],
        cwd=Path(__file__).parents[2],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert '"cycles": 1' in out.read_text()
