"""How often the processes that have a vault open asked for it to be synced with its remote.

Only the process that leads the watching syncs (server/background_sync.py): one sync per
clone, not one per server, and the leader may be a process that was given no sync setting
(`vault-tool watch`, a server started without --sync-every). So every process given one
records it here while it runs (.vault/run/sync-every/<pid>), and the leader syncs as often
as the most eager live process asks. A process that stops withdraws its request; one a
killed process left does not count (its pid is gone, or names another process now: the
record holds the process's start time too), and is removed by the next leader that looks.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from pathlib import Path

from vault_tool.storage.durable import replace_text
from vault_tool.storage.processes import alive

FOLDER = "sync-every"


def ask(run_dir: Path, seconds: float) -> None:
    """Record (again) that this process wants the vault synced every `seconds`."""
    record = {"pid": os.getpid(), "every": seconds, "started": _started(os.getpid())}
    replace_text(run_dir / FOLDER / str(os.getpid()), json.dumps(record))


def asking(run_dir: Path) -> bool:
    """Whether this process's request is recorded (`git clean -xfd` removes .vault/run)."""
    return (run_dir / FOLDER / str(os.getpid())).exists()


def withdraw(run_dir: Path) -> None:
    """Take this process's request back."""
    with contextlib.suppress(OSError):
        (run_dir / FOLDER / str(os.getpid())).unlink()


def requests(run_dir: Path, *, tidy: bool = True) -> list[dict]:
    """The live processes' requests ({pid, every, started}); a dead process's is removed
    (tidy=False: only left out, for doctor, which only looks)."""
    try:
        entries = list(os.scandir(run_dir / FOLDER))
    except OSError:
        return []
    found = []
    for entry in entries:
        try:
            record = json.loads(Path(entry.path).read_text())
            pid, every = int(record["pid"]), float(record["every"])
        except (OSError, ValueError, KeyError, TypeError):
            continue  # (being replaced, or not one of ours: left alone)
        if 0 < every < math.inf and alive(pid) and record.get("started") == _started(pid):
            found.append({**record, "every": every})
        elif tidy:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
    return found


def shortest(run_dir: Path) -> float:
    """The shortest period a live process asked for (0.0: none asked)."""
    return min((record["every"] for record in requests(run_dir)), default=0.0)


def _started(pid: int) -> int | None:
    """When a process started (clock ticks since boot, from /proc), telling it from a later
    process given the same pid; None where /proc cannot say."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return int(fields[19]) if len(fields) > 19 and fields[19].isdigit() else None
