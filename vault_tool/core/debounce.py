"""Debouncing a folder's events: each path handed out once its burst of events is over."""

from __future__ import annotations

import time
from collections.abc import Callable

# A file that never goes quiet (a log someone appends to) is still taken in this often.
MAX_DELAY_SECONDS = 5.0


class Debouncer:
    """Paths that had events, each handed out once quiet for `quiet` seconds.

    An editor saves in bursts (write, rename, chmod); taking a file in after the burst reads
    it once, whole. Time comes from `clock`, so a test can step it.
    """

    def __init__(self, quiet: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.quiet = quiet
        self.clock = clock
        self._pending: dict[str, tuple[float, float]] = {}  # path -> (first, last) event time

    def __len__(self) -> int:
        return len(self._pending)

    def note(self, path: str) -> None:
        """An event for path: its quiet period starts again."""
        now = self.clock()
        first = self._pending.get(path, (now, now))[0]
        self._pending[path] = (first, now)

    def due(self) -> list[str]:
        """The paths quiet for long enough or pending too long, now no longer pending."""
        now = self.clock()
        due = [
            p
            for p, (first, last) in self._pending.items()
            if now - last >= self.quiet or now - first >= MAX_DELAY_SECONDS
        ]
        for path in due:
            del self._pending[path]
        return due

    def again(self, paths: list[str]) -> None:
        """Paths that could not be taken in: pending again, as if their event came now."""
        now = self.clock()
        for path in paths:
            self._pending.setdefault(path, (now, now))
