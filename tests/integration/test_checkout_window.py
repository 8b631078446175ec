"""A write never lands in the instant a person's git checkout (or reset, or fast-forward)
has written git's index of the other commit and not yet moved HEAD: it waits until HEAD has
moved (a moment; an index that stays so for CHECKOUT_WAIT_SECONDS is a person's own state),
then commits there. Before, it committed on the old branch and staged its file into
the new branch's index; back on the old branch, git's index lacked a committed file, and
`git merge --abort` refused for good ("Untracked working tree file ... would be overwritten").

The window is held open by hand: `git read-tree -u --reset` writes the index (and files) of
the other branch as a checkout does before it moves HEAD, and a live git process stands for
the checkout that has not finished. Real repository, real git."""

from __future__ import annotations

import contextlib
import logging
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import create_args, eventually, git
from vault_tool.engine.vault import Vault
from vault_tool.errors import VaultBusy
from vault_tool.storage import index_lock
from vault_tool.storage.index_tree import whole_tree
from vault_tool.storage.store import Store


@pytest.fixture
def side(vault: Vault) -> str:
    return _make_side(vault)


def _make_side(vault: Vault) -> str:
    """A branch `side` with one commit of a person's note more than main; main checked out."""
    root = vault.root
    vault.remember(create_args("Ana owns the billing service"))
    git(root, "switch", "-q", "-c", "side")
    (root / "person.md").write_text("---\nmemory_type: note\ntitle: Kept\n---\n# Kept\n\nYes.\n")
    git(root, "add", "person.md")
    git(root, "commit", "-q", "-m", "A person's note")
    git(root, "switch", "-q", "main")
    return git(root, "rev-parse", "side")


@pytest.fixture
def live_git(vault: Vault) -> Iterator[subprocess.Popen]:
    """A git process working in the vault (the checkout that has not moved HEAD yet)."""
    process = subprocess.Popen(
        ["git", "hash-object", "--stdin"], cwd=vault.root, stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    yield process
    process.kill()
    process.wait()


def _checkout_midway(root: Path, branch: str) -> None:
    """What `git checkout branch` has done just before it moves HEAD."""
    git(root, "read-tree", "-u", "--reset", branch)
    assert whole_tree((root / ".git" / "index").read_bytes()) == bytes.fromhex(
        git(root, "rev-parse", f"{branch}^{{tree}}")
    )
    assert git(root, "symbolic-ref", "HEAD") == "refs/heads/main"


def test_a_write_in_a_checkouts_window_waits_and_commits_where_head_lands(
    vault: Vault, side: str, live_git: subprocess.Popen, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(index_lock, "CHECKOUT_WAIT_SECONDS", 120.0)  # (the test moves HEAD)
    root = vault.root
    main_before = git(root, "rev-parse", "main")
    _checkout_midway(root, side)
    answers: list[dict] = []
    writer = threading.Thread(
        target=lambda: answers.append(vault.remember(create_args("Bo runs the deploys")))
    )
    with _logged("vault_tool.storage.commits") as said:
        writer.start()
        # Until the write is either done (on the old branch) or waits for the checkout.
        eventually(lambda: not writer.is_alive() or any("waiting" in line for line in said))
    # The checkout finishes: HEAD moves, then its process ends.
    git(root, "symbolic-ref", "HEAD", "refs/heads/side")
    live_git.communicate(b"")
    writer.join(timeout=60)
    assert not writer.is_alive() and answers
    assert git(root, "rev-parse", "main") == main_before
    assert git(root, "rev-parse", "side~1") == side
    assert git(root, "rev-parse", "side") == answers[0]["version_id"]
    assert git(root, "status", "--porcelain") == ""


def test_a_window_that_stays_open_is_waited_out_then_taken_for_the_persons_own_state(
    vault: Vault, side: str, live_git: subprocess.Popen, monkeypatch: pytest.MonkeyPatch
):
    """A checkout moves HEAD a moment after its index: an index that stays another commit's
    (a person's `git read-tree`, say) holds a write back only CHECKOUT_WAIT_SECONDS."""
    monkeypatch.setattr(index_lock, "CHECKOUT_WAIT_SECONDS", 0.05)
    root = vault.root
    main_before = git(root, "rev-parse", "main")
    _checkout_midway(root, side)
    with _logged("vault_tool.storage.commits") as said:
        made = vault.remember(create_args("Bo runs the deploys"))
    assert any("waiting" in line for line in said)
    assert git(root, "rev-parse", "main~1") == main_before
    assert git(root, "rev-parse", "main") == made["version_id"]


def test_a_soft_reset_with_no_git_running_does_not_hold_writes_back(vault: Vault, side: str):
    root = vault.root
    git(root, "reset", "-q", "--soft", side)  # HEAD moves, the index keeps main's tree whole
    side_tree = bytes.fromhex(git(root, "rev-parse", "side^{tree}"))
    assert whole_tree((root / ".git" / "index").read_bytes()) not in (None, side_tree)
    made = vault.remember(create_args("Bo runs the deploys"))
    assert git(root, "rev-parse", "HEAD~1") == side
    assert git(root, "rev-parse", "HEAD") == made["version_id"]
    # What the reset left staged stays staged: the person's note, which main does not have.
    assert git(root, "diff", "--cached", "--name-status") == "D\tperson.md"


@contextlib.contextmanager
def _logged(name: str) -> Iterator[list[str]]:
    """The messages a logger gives from now on (at INFO and above)."""
    said: list[str] = []
    handler = logging.Handler(logging.INFO)
    handler.emit = lambda record: said.append(record.getMessage())  # type: ignore[method-assign]
    logger = logging.getLogger(name)
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield said
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def test_a_merge_that_has_written_its_conflicts_but_not_its_merge_head_refuses_the_write(
    vault: Vault, side: str
):
    """git merge writes the index with its conflicts, lets the index lock go, then writes
    MERGE_HEAD: a write taking the lock in between sees no merge in progress by git's files,
    and must still not commit (before, `git merge --abort` then refused: "not uptodate")."""
    root = vault.root
    person = root / "person.md"
    git(root, "switch", "-q", "-c", "other", "main")
    person.write_text("---\nmemory_type: note\ntitle: Kept\n---\n# Kept\n\nNo.\n")
    git(root, "add", "person.md")
    git(root, "commit", "-q", "-m", "The other side")
    git(root, "switch", "-q", "main")
    git(root, "merge", "-q", "other")  # (main had no person.md: a clean fast-forward)
    conflicted = subprocess.run(["git", "merge", "side"], cwd=root, capture_output=True)
    assert conflicted.returncode != 0 and (root / ".git" / "MERGE_HEAD").exists()
    for name in ("MERGE_HEAD", "MERGE_MSG", "MERGE_MODE"):  # the instant before git writes them
        (root / ".git" / name).unlink(missing_ok=True)
    head, index = git(root, "rev-parse", "HEAD"), (root / ".git" / "index").read_bytes()
    store = Store.open(root)  # (its index lock, taken as a commit takes it)
    try:
        with pytest.raises(VaultBusy, match="unmerged paths"), store.commits._index_locked():
            pass
    finally:
        store.close()
    assert git(root, "rev-parse", "HEAD") == head
    assert (root / ".git" / "index").read_bytes() == index
    assert not (root / ".git" / "index.lock").exists()
