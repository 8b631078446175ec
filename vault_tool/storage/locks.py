"""The vault's write lock: an flock on .git/vault-tool/write.lock that outlives its folder.

Two processes holding flocks on two different files once named write.lock would each
think it writes alone. So the file lives in git's own folder, which `git clean -xfd`
never touches (it removes .vault/run, machine state, where the lock once lay: a write
holding it let the next writer lock a new file). Should it still be removed, it is made
again when missing, and a lock won on a file since removed or replaced is let go and
taken again on the file now at the path. The kernel drops an flock when its holder dies,
so a crash never leaves it held.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

_FIRST_PAUSE = 0.001
_LONGEST_PAUSE = 0.05


class WriteLock:
    """An exclusive flock on one path, taken with a timeout; re-entrant within a process
    (the caller serialises its threads)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._depth = 0

    def acquire(self, timeout: float) -> bool:
        """Take the lock, waiting at most timeout seconds; False if it stayed held."""
        if self._fd is not None:
            self._depth += 1
            return True
        deadline = time.monotonic() + timeout
        pause = _FIRST_PAUSE
        while True:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except FileNotFoundError:
                continue  # the folder was removed again between the two calls: make it again
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                if time.monotonic() >= deadline:
                    return False
                time.sleep(pause)
                pause = min(pause * 2, _LONGEST_PAUSE)
                continue
            if _still_at(fd, self.path):
                self._fd, self._depth = fd, 1
                return True
            os.close(fd)  # removed or replaced while we waited for it: lock the one there now

    @property
    def first_taken(self) -> bool:
        """Whether the lock is held and not re-entered (its holder's outermost taking)."""
        return self._depth == 1

    def release(self) -> None:
        """Let the lock go (the outermost release of a re-entered lock)."""
        self._depth -= 1
        if self._depth == 0 and self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the file drops its flock


def _still_at(fd: int, path: Path) -> bool:
    """Whether the open file fd is the file at path now."""
    try:
        now = path.stat()
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino)
