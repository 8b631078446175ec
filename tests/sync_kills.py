"""Killing a real `vault-tool sync` at a chosen point of its merge, with its git children.

Not by timing: git itself stops the sync there, from a program it runs at that point.

- "checkout": a smudge filter (named for memory files in .git/info/attributes) kills the
  sync's whole process group at the second file git writes into the folder, so git's
  merge (or fast-forward) dies half-way through: one file of theirs written, git's index
  lock left, no MERGE_HEAD.
- "commit": a prepare-commit-msg hook (git runs it even under --no-verify) kills the
  group as git commits the merge: MERGE_HEAD and the merged folder are left, uncommitted.

Each point fires once (an armed flag file it removes), and only for a merge: the vault's
own commits and the repair's checkout pass through untouched. The sync runs in a session
of its own, so the kill never reaches the process that started it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

POINTS = ("checkout", "commit")

_FILTER = "vault-tool-crash-test"
# Passes every file through; once armed, the second file it is given ends the group.
_SMUDGE = """#!/bin/sh
if [ -e "{armed}" ]; then
  n=$(cat "{count}" 2>/dev/null || echo 0); n=$((n + 1)); echo "$n" > "{count}"
  if [ "$n" -ge 2 ]; then rm -f "{armed}"; kill -9 0; fi
fi
exec cat
"""
_PREPARE = """#!/bin/sh
[ -e "{armed}" ] || exit 0
[ -f "$(git rev-parse --git-dir)/MERGE_HEAD" ] || exit 0
rm -f "{armed}"
kill -9 0
"""


def arm(vault: Path, point: str, scratch: Path) -> Path:
    """Set up the kill at point; the flag file (gone once it has fired)."""
    scratch.mkdir(parents=True, exist_ok=True)
    armed, count = scratch / f"{point}.armed", scratch / f"{point}.count"
    count.unlink(missing_ok=True)
    git_dir = vault / ".git"
    if point == "checkout":
        script = scratch / "smudge.sh"
        script.write_text(_SMUDGE.format(armed=armed, count=count))
        _git(vault, "config", f"filter.{_FILTER}.smudge", f"sh {script}")
        attributes = git_dir / "info" / "attributes"
        line = f"*.md filter={_FILTER}\n"
        held = attributes.read_text() if attributes.exists() else ""
        if line not in held:
            attributes.write_text(held + ("\n" if held and not held.endswith("\n") else "") + line)
    elif point == "commit":
        hook = git_dir / "hooks" / "prepare-commit-msg"
        hook.parent.mkdir(exist_ok=True)
        hook.write_text(_PREPARE.format(armed=armed))
        hook.chmod(0o755)
    else:
        raise ValueError(point)
    armed.write_text("")
    return armed


def disarm(vault: Path) -> None:
    """Take every kill point out of the repository again."""
    git_dir = vault / ".git"
    (git_dir / "hooks" / "prepare-commit-msg").unlink(missing_ok=True)
    attributes = git_dir / "info" / "attributes"
    if attributes.exists():
        kept = [
            line for line in attributes.read_text().splitlines(keepends=True) if _FILTER not in line
        ]
        attributes.write_text("".join(kept))
    subprocess.run(
        ["git", "config", "--unset-all", f"filter.{_FILTER}.smudge"], cwd=vault, check=False
    )


def sync(vault: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`vault-tool sync` in a session of its own; its exit status is -9 if a point fired."""
    return subprocess.run(
        [sys.executable, "-m", "vault_tool", "sync", "--vault", str(vault)],
        env=env or os.environ.copy(),
        start_new_session=True,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _git(vault: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=vault, check=True, capture_output=True)
