"""What a failed torture run knew about each memory it names: for the failure message.

A problem like "agent-1: 01J… not found" says what went wrong, not when; a race is found
from the order of things. For each memory named, its commits (every ref, with the time in
seconds from the start of the run), beside the person's git operations in the same clock.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from tests.harness.agents import Shared
from tests.harness.consistency import git

_ID = re.compile(r"\b[0-9A-HJKMNP-TV-Z]{26}\b")
MEMORIES_SHOWN = 4


def timeline(vault: Path, shared: Shared, problems: list[str], started_wall: float) -> str:
    """The commits of up to MEMORIES_SHOWN memories named in problems, and the person's
    git operations, as lines of `+seconds what`."""
    named = list(dict.fromkeys(m for p in problems for m in _ID.findall(p)))[:MEMORIES_SHOWN]
    if not named:
        return ""
    offset = time.time() - time.monotonic()  # monotonic + offset = wall time
    lines = []
    with shared.lock:
        windows = list(shared.windows)
    for window in windows:
        end = "running" if window.end is None else f"{window.end + offset - started_wall:+.2f}"
        lines.append((window.start + offset - started_wall, f"person: {window.name} until {end}"))
    for memory_id in named:
        log = git(
            vault, "log", "--all", "--format=%ct %h %s", f"--grep=Memory-Id: {memory_id}",
            check=False,
        )  # fmt: skip
        for entry in log.splitlines():
            stamp, rest = entry.split(" ", 1)
            lines.append((int(stamp) - started_wall, f"{memory_id[-6:]}: {rest}"))
    return "\n".join(f"{at:+8.2f}  {what}" for at, what in sorted(lines))
