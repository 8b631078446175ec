"""What a failed torture run knew, in one clock: for the failure message.

A problem like "agent-1: 01J… not found" says what went wrong, not when; a race is found
from the order of things. In seconds from the start of the run: the person's git
operations, the commits of each memory the problems name (on every ref), and the servers'
warnings (a log `git clean -xfd` removed is gone: its warnings are not shown).
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
    """Lines of `+seconds what`, for a run with problems ("" for one without)."""
    if not problems:
        return ""
    named = list(dict.fromkeys(m for p in problems for m in _ID.findall(p)))[:MEMORIES_SHOWN]
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
    for log in sorted((vault / ".vault" / "run").glob("server.log*")):
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            if " WARNING " in line and (at := _logged_at(line)) is not None:
                lines.append((at - started_wall, f"log: {line[24:220]}"))
    return "\n".join(f"{at:+8.2f}  {what}" for at, what in sorted(lines))


def _logged_at(line: str) -> float | None:
    """The wall time of a server.log line (`2026-12-01 18:10:03,123 ...`, local time)."""
    try:
        stamp = time.strptime(line[:19], "%Y-%m-%d %H:%M:%S")
        return time.mktime(stamp) + int(line[20:23]) / 1000
    except ValueError:
        return None
