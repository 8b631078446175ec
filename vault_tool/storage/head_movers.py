"""A person's git that moves HEAD (processes.HEAD_MOVERS: a merge, a checkout, a stash, a
rebase, ...) reads HEAD, then writes git's index, the folder and HEAD later, without holding
git's index lock all along. A commit of the vault's landing in between is lost by it: a
merge that read HEAD before it writes an index without the new file (`git status`: `D` and
`??`) and `git merge --abort` then fails for good. So a write waits such a git out before it
places a file (a merge refuses "local changes would be overwritten") and asks again right
before HEAD moves; it refuses (vault_busy, naming the command) if one runs on.

The last look comes after the write's objects and the branch's new value are synced
(commits.py, refs.py); a git begun after HEAD moved reads the new HEAD and git's index
before the write's entries reach it, and refuses as beside any other git. What is left
is git's own race: one that starts between that look and the rename that moves the
branch (well under a millisecond) reads the old HEAD, as beside another `git commit`.
"""

from __future__ import annotations

from pathlib import Path

from vault_tool.errors import VaultBusy
from vault_tool.storage.git import Backoff
from vault_tool.storage.processes import HEAD_MOVERS, git_command, git_processes

# How long a write waits for a git that moves HEAD to end (they take a second or less).
GIT_WAIT_SECONDS = 10.0


class HeadMoving(Exception):
    """A git that moves HEAD began while a commit was being made: made again once it ends."""


def moving_git(root: Path) -> list[int]:
    """Pids of the gits moving HEAD in the vault now (none where /proc cannot tell)."""
    return [pid for pid in git_processes(root, HEAD_MOVERS) if pid != 0]


def no_moving_git(root: Path) -> None:
    """Raise HeadMoving if a git that moves HEAD runs in the vault (asked under git's index
    lock, right before HEAD moves: the commit is made again once it has ended)."""
    if moving_git(root):
        raise HeadMoving


def waiting() -> Backoff:
    """A wait for gits that move HEAD, one per write however often it waits."""
    return Backoff(GIT_WAIT_SECONDS)


def wait_out_moving_git(root: Path, wait: Backoff | None = None) -> None:
    """Return once no git that moves HEAD runs in the vault; VaultBusy naming it if one
    still runs when the wait expires."""
    wait = wait or waiting()
    while running := moving_git(root):
        if wait.expired:
            raise VaultBusy(
                f"`{git_command(running[0])}` has been running in the vault's repository for "
                f"{GIT_WAIT_SECONDS:g} s; the vault commits nothing while git moves HEAD",
                hint="retry once it has finished (nothing was written)",
            )
        wait.pause()
