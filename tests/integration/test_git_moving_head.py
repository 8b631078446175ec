"""A person's git that reads HEAD, then writes the index and moves HEAD later without holding
git's index lock all along (a merge, a checkout, a stash, a rebase): a commit landing in
between is lost by it or breaks it (seen in the torture: a merge whose index lacked an
agent's new file, then `git merge --abort` refused for good). A write waits such a git out
before it places a file and again under git's index lock, and refuses (vault_busy, naming
it) if it runs on; nothing is written meanwhile."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import create_args, eventually, git
from vault_tool.engine import preconditions
from vault_tool.engine.vault import Vault
from vault_tool.errors import VaultBusy
from vault_tool.storage import head_movers, refs
from vault_tool.storage.changes import Placing
from vault_tool.storage.commits import Committer
from vault_tool.storage.index_lock import LockedIndex
from vault_tool.storage.objects import LooseObjects
from vault_tool.storage.processes import CLEAN, HEAD_MOVERS, _runs, git_processes, subcommand

# Stands for a `git merge` between reading HEAD and moving it: records HEAD when it starts
# and again when told to end (a real merge cannot be held there on purpose; this process
# looks like one where it counts: named git, `merge` its command, working in the vault).
HELD_MERGE = """#!/bin/sh
"$GIT" rev-parse HEAD > "$OUT/start"
while [ ! -e "$OUT/release" ]; do sleep 0.01; done
"$GIT" rev-parse HEAD > "$OUT/end"
"""


@contextlib.contextmanager
def held_merge(vault_path: Path, tmp_path: Path) -> Iterator[tuple[subprocess.Popen, Path]]:
    """The stand-in merge, running in the vault until `out/release` exists (then ended)."""
    stand_in = tmp_path / "bin" / "git"
    stand_in.parent.mkdir()
    stand_in.write_text(HELD_MERGE)
    stand_in.chmod(0o755)
    out = tmp_path / "out"
    out.mkdir()
    env = {"PATH": "/usr/bin:/bin", "GIT": shutil.which("git") or "git", "OUT": str(out)}
    argv = [str(stand_in), "merge", "--no-edit", "topic"]
    merge = subprocess.Popen(argv, cwd=vault_path, env=env)
    try:
        eventually(lambda: (out / "start").exists() and (out / "start").read_text())
        # (its forks count until they exec sleep: they are copies of it)
        eventually(lambda: git_processes(vault_path.resolve(), HEAD_MOVERS) == [merge.pid])
        yield merge, out
    finally:
        (out / "release").touch()
        try:
            merge.wait(timeout=30)
        finally:
            merge.kill()


def test_a_write_waits_until_a_git_moving_head_has_finished(
    vault: Vault, vault_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    asked = []
    moving_git = head_movers.moving_git
    monkeypatch.setattr(head_movers, "moving_git", lambda root: asked.append(1) or moving_git(root))
    made: dict = {}
    writer = threading.Thread(target=lambda: made.update(vault.remember(create_args("VPN"))))
    with held_merge(vault_path, tmp_path) as (merge, out):
        writer.start()
        # The merge ends once the write has either answered or asked three times whether a
        # git still moves HEAD: before the fix it answered without asking.
        eventually(lambda: made or len(asked) >= 3)
        (out / "release").touch()
        assert merge.wait(timeout=30) == 0
    writer.join(timeout=60)
    assert (out / "start").read_text() == (out / "end").read_text()  # no commit while it ran
    assert git(vault_path, "rev-parse", "HEAD") == made["version_id"]
    assert git(vault_path, "status", "--porcelain") == ""


# Where a commit takes time under git's index lock before HEAD moves: reading the files,
# syncing its objects, syncing the branch's new value. A merge beginning in any of them
# must be seen by the last look (seen in the torture, beside busy CPUs: a merge begun while
# the objects were synced, after the last look, read the old HEAD; `git merge --abort`
# then failed for good with "Entry ... not uptodate").
@pytest.mark.parametrize(
    ("owner", "step"),
    [(Committer, "_blobs"), (LooseObjects, "flush"), (refs._GitLock, "write")],
    ids=["reading the files", "syncing the objects", "syncing the branch"],
)
def test_a_git_moving_head_that_starts_while_a_commit_is_made_is_waited_out_too(
    vault: Vault,
    vault_path: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    owner: type,
    step: str,
):
    # The merge begins under git's index lock, after the write's first look (before it
    # placed its file): the look right before HEAD moves must see it, and git's index must
    # not get the write's files while it runs (a `git stash` reads the index without the
    # lock: it took a staged file of a commit not landed for the person's, and removed it).
    asked = []
    moving_git = head_movers.moving_git
    monkeypatch.setattr(head_movers, "moving_git", lambda root: asked.append(1) or moving_git(root))
    staged_while_moving = []
    publish = LockedIndex.publish

    def staged(self):
        staged_while_moving.append(bool(moving_git(vault_path.resolve())))
        return publish(self)

    monkeypatch.setattr(LockedIndex, "publish", staged)
    under_lock, merge_started = threading.Event(), threading.Event()
    original = getattr(owner, step)

    def merge_begins(self, *args, **kwargs):
        if not under_lock.is_set():
            under_lock.set()
            assert merge_started.wait(60)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(owner, step, merge_begins)
    made: dict = {}
    writer = threading.Thread(target=lambda: made.update(vault.remember(create_args("VPN"))))
    writer.start()
    try:
        assert under_lock.wait(60)
        asked.clear()
        with held_merge(vault_path, tmp_path) as (merge, out):
            merge_started.set()
            eventually(lambda: made or len(asked) >= 3)
            (out / "release").touch()
            assert merge.wait(timeout=30) == 0
    finally:
        merge_started.set()
        writer.join(timeout=60)
    assert (out / "start").read_text() == (out / "end").read_text()  # no commit while it ran
    assert git(vault_path, "rev-parse", "HEAD") == made["version_id"]
    assert git(vault_path, "status", "--porcelain") == ""
    assert staged_while_moving and True not in staged_while_moving


def test_a_write_refuses_while_a_git_moving_head_runs_on_and_writes_nothing(
    vault: Vault, vault_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(head_movers, "GIT_WAIT_SECONDS", 0.2)
    head = git(vault_path, "rev-parse", "HEAD")
    with held_merge(vault_path, tmp_path), pytest.raises(VaultBusy) as refused:
        vault.remember(create_args("Staging needs the VPN"))
    assert refused.value.message.startswith("`git merge` has been running")  # (not its options)
    assert "retry once it has finished" in refused.value.hint
    assert git(vault_path, "rev-parse", "HEAD") == head
    assert git(vault_path, "status", "--porcelain") == ""


def _call(mode: str, made: dict) -> dict:
    """An update or a delete of the memory made, at its version."""
    version = {"memory_id": made["memory_id"], "expected_version_id": made["version_id"]}
    if mode == "delete":
        return {"mode": "delete", **version}
    return {**create_args(body="She handed it over."), "mode": "update", **version}


@pytest.mark.parametrize("mode", ["update", "delete"])
@pytest.mark.parametrize("git_then", ["has detached HEAD", "still runs"])
def test_a_file_a_persons_git_removes_while_a_write_runs_makes_it_busy_not_a_conflict(
    vault: Vault,
    vault_path: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    git_then: str,
):
    # A checkout of an older commit begun after the write's first looks removes its file
    # before the write compares it (seen in the torture). "Removed by someone else" sends
    # an agent to read a memory that is only hidden; the answer is to retry.
    made = vault.remember(create_args("Ana owns the billing service"))
    call = _call(mode, made)
    compare = Placing._compare
    with contextlib.ExitStack() as stack:

        def git_removes_the_file_first(self, change, target, exists):
            if git_then == "has detached HEAD":
                git(vault_path, "checkout", "-q", "--detach", "HEAD~1")
            else:
                stack.enter_context(held_merge(vault_path, tmp_path))
                target.unlink()
            return compare(self, change, target, False)

        monkeypatch.setattr(Placing, "_compare", git_removes_the_file_first)
        with pytest.raises(VaultBusy) as refused:
            vault.remember(call)
    monkeypatch.undo()
    said, fix = {
        "has detached HEAD": ("HEAD is detached", "git switch main"),
        "still runs": ("`git merge` changed the vault's files", "retry once it has finished"),
    }[git_then]
    assert said in refused.value.message and fix in refused.value.hint
    if git_then == "has detached HEAD":
        git(vault_path, "switch", "-q", "main")
    else:
        git(vault_path, "checkout", "-q", "--", made["path"])
    assert git(vault_path, "rev-parse", "HEAD") == made["version_id"]
    assert git(vault_path, "status", "--porcelain") == ""
    assert vault.remember(call)["status"] in ("updated", "deleted")


def _made_and_updated(vault: Vault) -> dict:
    """A memory made and updated once: HEAD~1 holds its first version."""
    made = vault.remember(create_args("Ana owns the billing service"))
    return vault.remember({**_call("update", made), "content_md": "# Ana owns billing\n\nYes.\n"})


@pytest.mark.parametrize("mode", ["update", "delete"])
def test_a_checkout_begun_while_a_write_checks_its_version_makes_it_busy_not_a_conflict(
    vault: Vault, vault_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
):
    # Seen in the torture: a checkout of an older commit, begun after the write asked git's
    # state and before it compared versions, made the agent's current version look
    # outdated ("changed since ..."); the agent would merge into the older version.
    made = _made_and_updated(vault)
    writable_bytes = preconditions.writable_bytes

    def checkout_first(store, doc):
        git(vault_path, "checkout", "-q", "--detach", "HEAD~1")
        return writable_bytes(store, doc)

    monkeypatch.setattr(preconditions, "writable_bytes", checkout_first)
    with pytest.raises(VaultBusy, match="HEAD is detached"):
        vault.remember(_call(mode, made))
    monkeypatch.undo()
    git(vault_path, "switch", "-q", "main")
    assert vault.remember(_call(mode, made))["status"] in ("updated", "deleted")


@pytest.mark.parametrize("mode", ["update", "delete"])
def test_a_write_undone_leaves_the_file_a_persons_checkout_wrote_meanwhile(
    vault: Vault, vault_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
):
    # Seen in the torture: a checkout of an old commit checked the folder, then rewrote the
    # memory file after the write had placed its own; the write could not commit (HEAD
    # detached) and its undo put the old bytes back over the checkout's. The folder then
    # differed from the commit checked out, so `git checkout main` refused for good.
    made = _made_and_updated(vault)
    put_in_place = Placing.put_in_place

    def checkout_rewrites_the_file_after(self):
        put_in_place(self)
        git(vault_path, "checkout", "-q", "-f", "--detach", "HEAD~1")

    monkeypatch.setattr(Placing, "put_in_place", checkout_rewrites_the_file_after)
    with pytest.raises(VaultBusy, match="HEAD is detached"):
        vault.remember(_call(mode, made))
    monkeypatch.undo()
    assert git(vault_path, "status", "--porcelain") == ""  # the folder is the old commit's
    git(vault_path, "switch", "-q", "main")
    assert git(vault_path, "rev-parse", "HEAD") == made["version_id"]
    assert "Ana owns billing" in (vault_path / made["path"]).read_text()
    assert vault.remember(_call(mode, made))["status"] in ("updated", "deleted")


@pytest.mark.parametrize(
    ("argv", "command", "moves_head"),
    [
        (["git", "merge", "--no-edit", "topic"], "merge", True),
        (
            ["/usr/lib/git-core/git", "-C", "/v", "-c", "a=b", "--no-pager", "rebase"],
            "rebase",
            True,
        ),
        (["/bin/sh", "/tmp/bin/git", "checkout", "main"], "checkout", True),
        (["git", "checkout", "--", "notes/a.md"], "checkout", False),
        (["git", "reset", "--hard"], "reset", True),
        (["git", "reset", "--quiet", "--", "notes/a.md"], "reset", False),
        (["git", "stash"], "stash", True),
        (["git", "stash", "pop"], "stash", True),
        (["git", "stash", "list"], "stash", False),
        (["git", "status"], "status", False),
        (["git", "log", "--", "merge"], "log", False),
        (["git-upload-pack", "/v"], "upload-pack", False),
    ],
)
def test_which_command_lines_move_head(argv: list[str], command: str, moves_head: bool):
    line = [a.encode() for a in argv]
    assert subcommand(line)[0] == command.encode()
    assert _runs(HEAD_MOVERS, line) is moves_head
    assert _runs(CLEAN, line) is False
