"""Reading a file a person may be writing at that moment: whole, or not yet.

An editor that saves in place truncates the file and writes it again. A read that overlaps
can hold the start of one version and the end of another (a read runs until end of file, in
several calls), and such bytes often parse: a title and half a body. They must never be
committed.

A read is whole when the file's stat is the same before and after it, and the file last
changed longer before the read than a clock tick. File systems stamp mtime and ctime from a
coarse clock (a jiffy: up to 10 ms on Linux), so a rewrite to the same size within the tick of
the stat before leaves that stat as it was. This is git's "racily clean" file, answered as git
answers it: a file too new to tell is read again once it is old enough.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISREG

from vault_tool.core.memory import MAX_FILE_BYTES

# A change this close to a read may have been stamped with the same time as one during it:
# twice the coarsest clock tick Linux stamps files with (HZ=100).
RACY_NS = 20_000_000
RACY_SECONDS = RACY_NS / 1e9
CHUNK = 1 << 16
# The wall clock file times are stamped from (a test steps its own).
clock: Callable[[], int] = time.time_ns


@dataclass(frozen=True)
class Whole:
    """A file's bytes, read whole, and its stat while they were its content."""

    data: bytes
    stat: os.stat_result


class StillWritten(Exception):
    """The file changed while it was read, or changed too recently to tell: read it later."""


class TooLarge(Exception):
    """The file is larger than the reader's limit; it was not read."""

    def __init__(self, path: Path, size: int) -> None:
        super().__init__(f"{path}: {size} bytes")
        self.size = size


def read_whole(path: Path, limit: int = MAX_FILE_BYTES) -> Whole:
    """The file's bytes and stat, read whole; StillWritten if that cannot be told yet;
    TooLarge, unread, if it is more than limit bytes (a file larger than the memory
    free must not stop every other read).

    OSError as opening or reading raises it (FileNotFoundError: gone; ELOOP: a symlink,
    which is never followed). A file replaced by a rename meanwhile is read as it was
    before: a whole version, whose stale stat has the next look read the new one.
    """
    started = clock()
    # (O_NONBLOCK: a FIFO put in its place since it was listed must not block the open)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        before = os.fstat(fd)
        if not S_ISREG(before.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        if before.st_size > limit:
            raise TooLarge(path, before.st_size)
        chunks, want, read = [], before.st_size + 1, 0  # (one read, and one that finds the end)
        # (a file that grows as it is read is read no further than the limit: its stat
        # then differs, and the next look finds it too large)
        while read <= limit and (chunk := os.read(fd, want)):
            chunks.append(chunk)
            read += len(chunk)
            want = CHUNK
        after = os.fstat(fd)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if _identity(before) != _identity(after) or len(data) != after.st_size:
        raise StillWritten(str(path))
    if too_new(after, started, clock()):
        raise StillWritten(str(path))
    return Whole(data, after)


def too_new(stat: os.stat_result, started_ns: int, ended_ns: int) -> bool:
    """Whether the file's last change (its ctime: mtime can be set back) may share a clock
    tick with a read between these times. A change stamped well after the read is a clock
    that disagrees with ours (a network file system), which no waiting would settle."""
    changed = max(stat.st_mtime_ns, stat.st_ctime_ns)
    return started_ns - RACY_NS <= changed <= ended_ns + RACY_NS


def _identity(stat: os.stat_result) -> tuple[int, ...]:
    return (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
