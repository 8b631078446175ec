"""When the notes of an imported folder were written, by the git repository that holds it.

A folder that was cloned or copied has every file's modification time set to that day;
its history still knows when each note was first committed and last changed. Only reads
the source's repository (git log, git diff), never writes it. No repository, no git, or a
git that fails: no dates from here, and the files' times are used.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from vault_tool.core.times import normalize_timestamp

_TIMEOUT_SECONDS = 120


def commit_dates(root: Path) -> dict[str, tuple[str, str]]:
    """label (path relative to root) -> (first, last) author date of each file committed
    under root whose working copy is as last committed."""
    log = _git(
        root, "log", "--format=%x01%aI", "--name-only", "--relative", "--no-renames", "--", "."
    )
    if log is None:
        return {}
    dates: dict[str, tuple[str, str]] = {}
    for block in log.split("\x01")[1:]:
        stamp, _, names = block.partition("\n")
        try:
            when = normalize_timestamp(stamp.strip())
        except ValueError:
            continue
        for name in filter(None, (n.strip() for n in names.splitlines())):
            last = dates.get(name, (when, when))[1]  # newest first: the first seen is the last
            dates[name] = (when, last)
    changed = _git(root, "diff", "--name-only", "--relative", "HEAD", "--", ".") or ""
    for name in changed.splitlines():
        dates.pop(name.strip(), None)  # edited since its last commit: its file time says when
    return dates


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-c", "core.quotepath=off", *args],
            cwd=root,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None
