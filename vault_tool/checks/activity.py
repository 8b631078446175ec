"""doctor's checks of who else is at work in the vault: git's locks, the vault's write lock,
interrupted writes, and the watcher's leader. They only look (processes.py probes without
taking anything) and wait for nobody for long.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path

from vault_tool.checks.checkup import Check, Checkup, count
from vault_tool.storage import sync_requests
from vault_tool.storage.processes import (
    HEARTBEAT_SECONDS,
    alive,
    command_of,
    flock_held,
    flock_holder,
    git_processes,
    leader_record,
    live_leader,
)

# How long doctor waits for the vault's write lock before saying who holds it.
WRITE_LOCK_PATIENCE = 1.0


def write_lock_holder(path: Path) -> int | None:
    """None if the write lock is free (or frees within WRITE_LOCK_PATIENCE); else the
    holder's pid (0 when /proc/locks does not say)."""
    deadline = time.monotonic() + WRITE_LOCK_PATIENCE
    while True:
        if not flock_held(path):
            return None
        if time.monotonic() >= deadline:
            return flock_holder(path) or 0
        time.sleep(0.05)


def check_git_locks(checkup: Checkup) -> Check:
    git_dir = checkup.root / ".git"
    locks = [git_dir / "index.lock", git_dir / "HEAD.lock", *git_dir.glob("refs/**/*.lock")]
    present = [lock for lock in locks if lock.exists()]
    if not present:
        return Check("git_locks", "ok", "no git lock files")
    running = git_processes(checkup.root)
    details = [
        {"path": lock.relative_to(checkup.root).as_posix(), "age_seconds": _age(lock)}
        for lock in present
    ]
    names = ", ".join(d["path"] for d in details)
    if running:
        return Check(
            "git_locks",
            "warn",
            f"{names} held by a running git (pid {', '.join(map(str, running))})",
            details,
            fix="wait for that git command to finish; the vault waits for it too",
        )
    return Check(
        "git_locks",
        "fail",
        f"stale {names}: no git process works in this vault (a crashed git left it)",
        details,
        fix=f"remove it: rm {' '.join(d['path'] for d in details)}",
    )


def check_write_lock(holder: int | None) -> Check:
    if holder is None:
        return Check("write_lock", "ok", "the vault's write lock is free")
    who = f"pid {holder} ({command_of(holder)})" if holder > 0 else "another process"
    return Check(
        "write_lock",
        "warn",
        f"the vault's write lock has been held for over {WRITE_LOCK_PATIENCE:g} s by {who}",
        [{"pid": holder if holder > 0 else None}],
        fix="a long import or reindex holds it while it runs; if that process hangs, stop it "
        "(the lock is released by the kernel when it exits, so it is never stale)",
    )


def check_journal(checkup: Checkup, holder: int | None) -> Check:
    journal = checkup.journal()
    if not journal:
        return Check("journal", "ok", "no interrupted writes")
    if holder is not None:
        return Check("journal", "ok", f"a write is in progress ({len(journal)} journal entries)")
    details = []
    for entry in journal:
        try:
            record = json.loads(entry.read_text(encoding="utf-8"))
            paths = [e["path"] for e in record.get("entries", [])]
            subject = str(record.get("message", "")).split("\n", 1)[0]
        except (OSError, ValueError, TypeError, KeyError):
            paths, subject = [], "(unreadable: the crash hit while it was written)"
        details.append({"entry": entry.name, "subject": subject, "paths": paths})
    return Check(
        "journal",
        "fail",
        f"{count(len(journal), 'interrupted write')} left in .vault/run/journal (a writer crashed)",
        details,
        fix="run `vault-tool commit` (opening the vault to write finishes or rolls back each "
        "interrupted write; a file a person edited since is left alone)",
    )


def check_watcher(checkup: Checkup) -> Check:
    info = leader_record(checkup.run_dir)
    pid = int(info["pid"]) if info is not None else 0
    beat = time.time() - float(info.get("heartbeat", 0)) if info is not None else 0.0
    lock_holder = flock_holder(checkup.run_dir / "leader.lock")
    if info is not None:
        details = [{**info, "heartbeat_age_seconds": round(beat, 1)}]
        if live_leader(checkup.run_dir) is not None:
            return Check(
                "watcher",
                "ok",
                f"pid {pid} ({info.get('client', '?')}) leads; last heartbeat {beat:.1f} s ago"
                + _sync_schedule(checkup),
                details,
            )
        if alive(pid):
            return Check(
                "watcher",
                "fail",
                f"pid {pid} leads the watching but its last heartbeat was {beat:.0f} s ago "
                f"(expected every {HEARTBEAT_SECONDS:g} s): it hangs",
                details,
                fix=f"stop process {pid}; another server or `vault-tool watch` takes over",
            )
        return Check(
            "watcher",
            "warn",
            f"the last leader (pid {pid}) died without standing down; nobody watches now",
            details,
            fix="start a server or `vault-tool watch`; it takes over at once",
        )
    if lock_holder:
        return Check(
            "watcher",
            "ok",
            f"pid {lock_holder} is taking up the watching (no heartbeat yet)",
            [{"pid": lock_holder}],
        )
    return Check(
        "watcher",
        "ok",
        "no process watches this vault: hand edits are taken in when a server or "
        "`vault-tool watch` starts, or by `vault-tool commit` (a `vault-tool serve` started "
        "by hand watches only once a client sends `initialize`)",
    )


def _sync_schedule(checkup: Checkup) -> str:
    """What the leader syncs on: the shortest period a live process asked, and who asked."""
    asked = sorted(sync_requests.requests(checkup.run_dir, tidy=False), key=lambda r: r["every"])
    if not asked:
        return ""
    pids = ", ".join(str(r["pid"]) for r in asked if r["every"] == asked[0]["every"])
    return f"; it syncs with the remote every {asked[0]['every']:g} s, as pid {pids} asked"


def _age(path: Path) -> float | None:
    with contextlib.suppress(OSError):
        return round(time.time() - path.stat().st_mtime, 1)
    return None
