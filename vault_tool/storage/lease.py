"""Leading a vault's watching as a lease: a heartbeat record that others may take when stale.

The record (.vault/run/leader.json: pid, client, since, heartbeat, token) is read and
replaced only under a brief flock of .vault/run/leader.lock, so claims and renewals are
one at a time. A process claims the lease when there is no record, its holder is dead, or
its heartbeat is STALE_SECONDS old (the holder is alive but frozen: SIGSTOPped, hung in a
read); a claim writes a new random token. The holder renews every HEARTBEAT_SECONDS and
asks held() before each commit of hand edits: a holder whose token was replaced has lost
the lease and stands down. An flock held for a leader's life, as before, could never be
taken from a frozen leader.

What the token fences: a deposed leader starts no commit once it has seen its token
replaced, and it looks before each one. A commit it had started before it froze may still
finish after the new leader took over; the vault's write lock keeps the two apart, and
intake commits a file only while it differs from HEAD, so no edit is committed twice and
none is lost (each commit takes the file's bytes as they are then).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from vault_tool.storage.durable import in_remade_folder, replace_text
from vault_tool.storage.processes import HEARTBEAT_SECONDS, STALE_SECONDS, alive, leader_record

__all__ = ["STALE_SECONDS", "Lease"]


class Lease:
    """One process's claim on leading the watching of a vault (its run folder)."""

    def __init__(self, run_dir: Path, client: str, clock: Callable[[], float] = time.time):
        self.run_dir = run_dir
        self.client = client
        self.clock = clock  # wall-clock seconds: heartbeats are compared across processes
        self.token: str | None = None
        self._since = 0.0

    def claim(self) -> bool:
        """Take the lease if it is free or stale; True if this process holds it now."""
        with self._locked():
            record = leader_record(self.run_dir)
            if record is not None and record.get("token") != self.token and self._live(record):
                return False
            self.token, self._since = secrets.token_hex(8), self.clock()
            self._write()
        return True

    def renew(self) -> bool:
        """Beat: refresh the heartbeat if the lease is still ours; False if it was taken."""
        with self._locked():
            if not self.held():
                self.token = None
                return False
            self._write()
        return True

    def held(self) -> bool:
        """Whether the lease is still ours (asked before each commit of hand edits).

        A record that is gone (the run folder removed) was not replaced by a claim, which
        always writes one: the lease is still ours, and the next beat writes it again.
        """
        record = leader_record(self.run_dir)
        if record is None and not (self.run_dir / "leader.json").exists():
            return self.token is not None
        return self._ours(record)

    def release(self) -> None:
        """Give the lease up, leaving a newer holder's record alone."""
        if self.token is None:
            return
        with contextlib.suppress(OSError), self._locked():  # (gone or read-only: it goes stale)
            if self._ours(leader_record(self.run_dir)):
                (self.run_dir / "leader.json").unlink()
        self.token = None

    def _ours(self, record: dict[str, Any] | None) -> bool:
        return self.token is not None and record is not None and record.get("token") == self.token

    def _live(self, record: dict[str, Any]) -> bool:
        fresh = self.clock() - float(record.get("heartbeat", 0)) < STALE_SECONDS
        return fresh and alive(int(record["pid"]))

    def _write(self) -> None:
        info = {
            "pid": os.getpid(),
            "client": self.client,
            "since": self._since,
            "heartbeat": self.clock(),
            "token": self.token,
        }
        replace_text(self.run_dir / "leader.json", json.dumps(info))

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """The brief flock around a read and a replace of the record.

        Held for microseconds; a process frozen inside them is waited for a beat, then
        gone on without: its late write at worst replaces a newer claim, whose holder then
        finds its token replaced at its next beat and stands down (one leader again).
        """
        # The run folder is machine state a person may remove (`git clean -xfd`): made again.
        lock = self.run_dir / "leader.lock"
        fd = in_remade_folder(self.run_dir, lambda: os.open(lock, os.O_RDWR | os.O_CREAT, 0o644))
        deadline = time.monotonic() + HEARTBEAT_SECONDS
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        break
                    time.sleep(0.01)
            yield
        finally:
            os.close(fd)
