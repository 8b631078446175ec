"""What this process itself just committed, so its watcher knows its own writes at a glance.

Every write of the tool ends in events for the file it wrote; the watcher used to check
each such file as a possible hand edit (is it indexed, is it what HEAD holds), which cost
more than the write. A commit made here records path -> blob; while HEAD is still the last
commit this process made, a file whose bytes have that blob is the one this process
committed, and indexed under the same lock: nothing to take in. Anything else (HEAD moved
by another process or a person, other bytes, a path not recorded) is checked as before,
so a person's edit right after a write is taken in like any other.

Only a commit of this process on another parent clears the record: asking with another
HEAD answers "not known" and keeps it, since HEAD moves before the commit is recorded and
another thread (the watcher) may ask in between.

The same record answers "which commit last changed this path" (a version_id, asked
before every update) without `git log`: in a row of commits all made here, the last one
that changed a path is the last one recorded for it.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterable

# Paths remembered at most (a large import commits thousands at once; older ones are
# simply checked the ordinary way).
PATHS_KEPT = 4096


class OwnCommits:
    """The paths and blobs of the commits this process made in a row, on its own HEAD."""

    def __init__(self, kept: int = PATHS_KEPT) -> None:
        self._kept = kept
        self._head: str | None = None
        self._blobs: OrderedDict[str, str | None] = OrderedDict()
        self._versions: OrderedDict[str, str] = OrderedDict()  # path -> last commit changing it
        self._mutex = threading.Lock()
        self.recognised = 0  # files found to be this process's own write (tests count them)

    def committed(
        self, parent: str | None, sha: str, blobs: dict[str, str | None], changed: set[str]
    ) -> None:
        """This process moved HEAD from parent to sha, setting these paths (None: removed),
        of which `changed` differ from parent (the others were there as they are)."""
        with self._mutex:
            if parent is None or parent != self._head:
                self._clear()  # HEAD had moved elsewhere: what was known may be stale
            self._head = sha
            for path, blob in blobs.items():
                _put(self._blobs, path, blob, self._kept)
            for path in changed:
                _put(self._versions, path, sha, self._kept)

    def holds(self, head: str | None, path: str, data: bytes | None) -> bool:
        """Whether path holding data (None: no file) is exactly what this process last
        committed there, HEAD being that commit still."""
        with self._mutex:
            if head is None or head != self._head or path not in self._blobs:
                return False
            ours = self._blobs[path] == (_blob_sha(data) if data is not None else None)
            self.recognised += ours
            return ours

    def version_of(self, head: str | None, path: str) -> str | None:
        """The last commit that changed path, if this process made it and every commit
        since (HEAD being the last of them); None: ask git."""
        with self._mutex:
            return self._versions.get(path) if head is not None and head == self._head else None

    def forget(self, paths: Iterable[str]) -> None:
        """Drop what says these files are taken in: something else takes them in (a hand
        edit, a catch-up). Versions stay: they are a fact of the commits, not the index."""
        with self._mutex:
            for path in paths:
                self._blobs.pop(path, None)

    def _clear(self) -> None:
        self._blobs.clear()
        self._versions.clear()
        self._head = None


def _blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _put(records: OrderedDict, path: str, value: str | None, kept: int) -> None:
    records[path] = value
    records.move_to_end(path)
    while len(records) > kept:
        records.popitem(last=False)
