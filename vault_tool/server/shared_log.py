"""A log file that several processes append to and rotate: the servers of one vault share
`.vault/run/server.log` and `audit.jsonl`.

logging's RotatingFileHandler assumes it is the file's only writer. Each process rotates
when its own stream has grown past the limit, so three servers rotate one file three times
over (overwriting the backups), and one renames a file another has just renamed away
(FileNotFoundError, printed to stderr mid-call). Here the size is the file's own, a
rotation happens under an flock of the log's folder and only if the file is still over
the limit once the lock is held, and a process whose file was rotated or removed under it
(`git clean -xfd`) follows the new one. Both files are private to their owner (0600), and
server.log's lines have their secrets redacted (RedactingFormatter).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import logging.handlers
import os
from collections.abc import Iterator
from pathlib import Path


class SharedRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """RotatingFileHandler for a file other processes append to and rotate as well, through
    its public hooks: shouldRollover measures the file, doRollover rotates under the lock."""

    def __init__(self, path: Path, max_bytes: int, backups: int) -> None:
        _create_private(str(path))
        # delay: the file is opened by the first line, after _create_private made it 0600.
        super().__init__(
            path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8", delay=True
        )
        self._pending = 0  # the size of the line being written, for doRollover's look again

    def shouldRollover(self, record: logging.LogRecord) -> bool:
        """Whether appending record takes the file (whoever wrote it) past the limit; first
        the file the path names now is followed, if another process rotated this one's
        away or removed it."""
        self._follow()
        line = len(f"{self.format(record)}{self.terminator}".encode(errors="replace"))
        self._pending = line
        size = _size(self.baseFilename)
        return self.maxBytes > 0 and size > 0 and size + line > self.maxBytes

    def doRollover(self) -> None:
        """Rotate under an flock of the log's folder, and only if the file is still over the
        limit once the lock is held (no other process rotated it meanwhile)."""
        with _rotation_lock(os.path.dirname(self.baseFilename)):
            if _size(self.baseFilename) + self._pending > self.maxBytes:
                super().doRollover()
        self._follow()

    def _follow(self) -> None:
        """Let go of the file this process has open when the path names another one now (or
        none: `git clean -xfd` removes .vault/run with the log in it); the next line opens
        the one named, made first, private to its owner."""
        try:
            named = os.stat(self.baseFilename)
        except FileNotFoundError:
            named = None
        if self.stream is not None:
            opened = os.fstat(self.stream.fileno())
            if named is not None and (named.st_ino, named.st_dev) == (opened.st_ino, opened.st_dev):
                return
            self.stream.close()
            self.stream = None  # (FileHandler.emit opens the file again)
        if named is None:
            _create_private(self.baseFilename)


def _create_private(path: str) -> None:
    """Make the log file, if it is not there, private to its owner (0600), as the ledger
    is: a log names the person's files."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.fchmod(fd, 0o600)  # (another process's line may have made it a moment before)
    finally:
        os.close(fd)


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0


@contextlib.contextmanager
def _rotation_lock(folder_path: str) -> Iterator[None]:
    folder = os.open(folder_path, os.O_RDONLY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        yield
    finally:
        os.close(folder)  # (closing the descriptor lets go of the flock)


class RedactingFormatter(logging.Formatter):
    """A log line with every secret in it redacted (core/redact.py): what is kept out of git
    is kept out of the log too, whichever name or message carries it (a file's name, an
    error quoting one)."""

    def format(self, record: logging.LogRecord) -> str:
        from vault_tool.core.redact import redact_text

        return redact_text(super().format(record), "log")[0]
