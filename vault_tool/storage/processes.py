"""Who else works in the vault: git processes, holders of its lock files, the watcher's leader.

Everything here only looks (at /proc, at flocks tried without waiting, at the leader's
heartbeat file): the commit protocol asks before it takes over a lock a killed git left,
and verify and doctor ask to say who holds what.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import time
from pathlib import Path
from typing import Any

# How often the leading watcher rewrites its heartbeat; three missed beats and it counts as
# gone (frozen or hung if its process lives), and another process may take its lease.
HEARTBEAT_SECONDS = 1.0
STALE_SECONDS = 3 * HEARTBEAT_SECONDS


# git commands that read HEAD or the index, then write the index, the folder or HEAD later
# without holding git's index lock all along: a commit landing in between is thrown away by
# them or makes them fail half-way (a merge's index without the new file, `merge --abort`
# refused). `git pull` runs `git merge` or `git rebase` as a process of its own.
HEAD_MOVERS = frozenset(
    {b"am", b"checkout", b"cherry-pick", b"merge", b"rebase", b"reset", b"revert", b"stash",
     b"switch"}
)  # fmt: skip
CLEAN = frozenset({b"clean"})
# `git stash` commands that touch neither HEAD, the index nor the folder.
_STASH_LEAVING_HEAD = frozenset({b"list", b"show", b"create", b"store", b"drop", b"clear"})

# git's own options that take the next argument as their value (`git -C path merge`).
_OPTIONS_WITH_VALUE = frozenset(
    {b"-C", b"-c", b"--git-dir", b"--work-tree", b"--namespace", b"--super-prefix",
     b"--config-env"}
)  # fmt: skip


def git_processes(root: Path, commands: frozenset[bytes] | None = None) -> list[int]:
    """Pids of git processes working in the vault that may hold its locks ([0]: cannot tell);
    with commands (HEAD_MOVERS, CLEAN), only those running one of them in a way that
    changes something: not a dry run or an interactive clean (which may wait on a person),
    not a `reset` or `checkout` of paths only (`-- <paths>`: HEAD stays), not a `git
    stash list`.

    root must be resolved (config.find_vault resolves it): /proc reports resolved paths.

    A git started elsewhere with -C, --git-dir or --work-tree names the vault on its
    command line. GitPython's `git cat-file --batch` helpers (alive as long as a server
    runs) only read objects and never take a lock, so they do not count.
    """
    try:
        entries = os.scandir("/proc")
    except OSError:
        return [0]  # cannot tell: assume one lives
    found = []
    with entries:
        # Plain os calls: every write asks this, so it costs ~5 us a process.
        for entry in entries:
            if not entry.name.isdigit():
                continue
            pid_dir = f"/proc/{entry.name}"
            try:
                if not _read(f"{pid_dir}/comm").startswith(b"git"):
                    continue
                argv = _read(f"{pid_dir}/cmdline").split(b"\0")
                if b"cat-file" in argv or (commands is not None and not _runs(commands, argv)):
                    continue
                # The command line first: another user's cwd cannot be read, their argv can.
                if _names(argv, root) or _works_in(pid_dir, root):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def subcommand(argv: list[bytes]) -> tuple[bytes, list[bytes]]:
    """The git command a command line runs (b"" if none) and the arguments after it. The
    program is the first word named git (a script named git runs as `sh .../git ...`)."""
    names = [os.path.basename(arg) for arg in argv]
    start = next((n for n, name in enumerate(names) if name.startswith(b"git")), 0)
    if names and names[start].startswith(b"git-"):  # (git's helpers run as git-<command>)
        return names[start][4:], argv[start + 1 :]
    rest = iter(range(start + 1, len(argv)))
    for n in rest:
        if argv[n] in _OPTIONS_WITH_VALUE:
            next(rest, None)
        elif not argv[n].startswith(b"-"):
            return argv[n], argv[n + 1 :]
    return b"", []


def git_command(pid: int) -> str:
    """`git <command>` that pid runs (its arguments left out: they may hold a secret)."""
    try:
        command = subcommand(_read(f"/proc/{pid}/cmdline").split(b"\0"))[0]
    except OSError:
        return "a git command"
    return f"git {command.decode('utf-8', 'replace')}".strip()


def _runs(commands: frozenset[bytes], argv: list[bytes]) -> bool:
    command, options = subcommand(argv)
    if command not in commands:
        return False
    if command == b"clean":
        short = [o for o in options if o.startswith(b"-") and not o.startswith(b"--")]
        asks = {b"--dry-run", b"--interactive"} & set(options)
        return not asks and not any(b"n" in o or b"i" in o for o in short)
    if command in (b"reset", b"checkout"):
        return b"--" not in options
    if command == b"stash":  # (`list` and `show` may sit in a pager for as long as one reads)
        return not options or options[0] not in _STASH_LEAVING_HEAD
    return True


def _read(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 1 << 16)
    finally:
        os.close(fd)


def _names(argv: list[bytes], root: Path) -> bool:
    """Whether a command line names the vault or a path in it (-C, --git-dir=, ...), by any
    alias: each absolute path in it is resolved, as the kernel resolves a cwd."""
    for arg in argv:
        if os.fsencode(root) in arg:
            return True
        value = arg.split(b"=", 1)[1] if arg.startswith(b"--") and b"=" in arg else arg
        if value.startswith(b"/") and _within(Path(os.path.realpath(os.fsdecode(value))), root):
            return True
    return False


def _works_in(pid_dir: str, root: Path) -> bool:
    return _within(Path(os.readlink(f"{pid_dir}/cwd")), root)  # (the kernel's resolved path)


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def flock_held(path: Path) -> bool:
    """Whether another open file holds an flock on path (tried without waiting)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False  # no lock file: nobody ever locked it
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def flock_holder(path: Path) -> int | None:
    """The pid that holds an flock on path, from /proc/locks (Linux); None if none shows."""
    try:
        st = path.stat()
        locks = Path("/proc/locks").read_text()
    except OSError:
        return None
    wanted = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in locks.splitlines():
        parts = line.split()
        # "1: FLOCK  ADVISORY  WRITE 12345 fe:00:2146339 0 EOF"; blocked waiters have "->".
        if len(parts) >= 6 and parts[1] == "FLOCK" and parts[5] == wanted:
            with contextlib.suppress(ValueError):
                return int(parts[4])
    return None


def alive(pid: int) -> bool:
    """Whether a process with this pid exists (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def command_of(pid: int) -> str:
    """A process's command line on one line (at most 120 characters), for messages."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "unknown command"
    return re.sub(r"\s+", " ", raw.replace(b"\0", b" ").decode("utf-8", "replace")).strip()[:120]


def leader_record(run_dir: Path) -> dict[str, Any] | None:
    """The last heartbeat record the watcher's leader wrote, live or not; None if none."""
    try:
        info = json.loads((run_dir / "leader.json").read_text())
        int(info["pid"])
        float(info.get("heartbeat", 0))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return info


def live_leader(run_dir: Path) -> dict[str, Any] | None:
    """The leader's heartbeat record if a live process leads this vault's watching."""
    info = leader_record(run_dir)
    if info is None or not alive(int(info["pid"])):
        return None
    fresh = time.time() - float(info.get("heartbeat", 0)) < STALE_SECONDS
    return info if fresh else None
