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
from typing import Any


class SharedRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """RotatingFileHandler for a file other processes append to and rotate as well."""

    def __init__(self, path: Path, max_bytes: int, backups: int) -> None:
        super().__init__(path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8")

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if self._over(record):
                with self._rotation_lock():
                    if self._over(record):  # (still: no other process rotated it meanwhile)
                        self.doRollover()
            logging.FileHandler.emit(self, record)
        except Exception:
            self.handleError(record)

    def _over(self, record: logging.LogRecord) -> bool:
        """Whether appending record takes the file (whoever wrote it) past the limit."""
        self._follow()
        size = os.fstat(self.stream.fileno()).st_size
        line = len(f"{self.format(record)}{self.terminator}".encode(errors="replace"))
        return self.maxBytes > 0 and size > 0 and size + line > self.maxBytes

    def _follow(self) -> None:
        """Open the file the path names now, if another process rotated this one's away."""
        if self.stream is None:
            self.stream = self._open()
            return
        try:
            named = os.stat(self.baseFilename)
        except FileNotFoundError:
            named = None
        opened = os.fstat(self.stream.fileno())
        if named is None or (named.st_ino, named.st_dev) != (opened.st_ino, opened.st_dev):
            self.stream.close()
            self.stream = self._open()

    def _open(self) -> Any:
        # (`git clean -xfd` removes .vault/run with the log in it: logging goes on in a new one)
        os.makedirs(os.path.dirname(self.baseFilename), exist_ok=True)
        # Private to its owner (0600), as the ledger is: a log names the person's files.
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        return open(fd, "a", encoding=self.encoding, errors=self.errors)

    @contextlib.contextmanager
    def _rotation_lock(self) -> Iterator[None]:
        folder = os.open(os.path.dirname(self.baseFilename), os.O_RDONLY)
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
