"""Debouncing a folder's events: the paths handed out once the folder's burst of events is over."""

from __future__ import annotations

import time
from collections.abc import Callable

# A file that never goes quiet (a log someone appends to) is still taken in this often.
MAX_DELAY_SECONDS = 5.0


class Debouncer:
    """Paths that had events, handed out together once the folder has been quiet for
    `quiet` seconds.

    An editor saves in bursts (write, rename, chmod); taking a file in after the burst reads
    it once, whole. A person's one change may be many files (a rename in Obsidian rewrites
    every link to the note; a `sed` edits many notes): all that settled in one quiet period
    is handed out at once, so it is taken in (and committed) as one. Time comes from
    `clock`, so a test can step it.
    """

    def __init__(self, quiet: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.quiet = quiet
        self.clock = clock
        self._pending: dict[str, tuple[float, float]] = {}  # path -> (first, last) event time

    def __len__(self) -> int:
        return len(self._pending)

    def note(self, path: str) -> None:
        """An event for path: the quiet period starts again."""
        now = self.clock()
        first = self._pending.get(path, (now, now))[0]
        self._pending[path] = (first, now)

    def due(self) -> list[str]:
        """Every pending path once none had an event for the quiet period; while events go
        on, those pending too long, with those quiet themselves. Now no longer pending."""
        now = self.clock()
        if not self._pending:
            return []
        if now - max(last for _, last in self._pending.values()) >= self.quiet:
            due = list(self._pending)
        elif any(now - first >= MAX_DELAY_SECONDS for first, _ in self._pending.values()):
            # Something never goes quiet (a log appended to): the rest waits no longer.
            due = [
                p
                for p, (first, last) in self._pending.items()
                if now - last >= self.quiet or now - first >= MAX_DELAY_SECONDS
            ]
        else:
            return []
        for path in due:
            del self._pending[path]
        return due

    def again(self, paths: list[str]) -> None:
        """Paths that could not be taken in: pending again, as if their event came now."""
        now = self.clock()
        for path in paths:
            self._pending.setdefault(path, (now, now))
