"""The retrieval ledger: one JSON Lines record per query search, and feedback records.

Records live in .vault/ledger/<YYYY-MM>.jsonl on this machine (not in git). Each record is
one append under a file lock, so a crashed process loses at most the record it was writing.
The fsync that protects against power loss is batched: it runs within FSYNC_DELAY seconds
of a write (and at close), which keeps a disk flush off every search.
Each record has a handle (`id`) that only operator commands see; search results never
carry it. A query (and every string of its controls) is redacted before it is recorded:
an agent that searches for a pasted token must not leave it on disk.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vault_tool.core import redact, stages
from vault_tool.core.ids import new_id
from vault_tool.errors import InvalidInput, NotFound
from vault_tool.storage import durable
from vault_tool.storage.durable import in_remade_folder, write_all

log = logging.getLogger(__name__)

FSYNC_DELAY = 0.2
# Feedback has a file of its own: searches read it, and it changes far less often.
FEEDBACK_FILE = "feedback.jsonl"


class Ledger:
    """Append and read the retrieval ledger of one vault."""

    def __init__(self, root: Path) -> None:
        self.dir = root / ".vault" / "ledger"
        self._unsynced: set[Path] = set()
        self._guard = threading.Lock()
        self._judgements: list[tuple[str, int, str]] = []
        self._judgements_key: tuple[int, int] | None = None

    @stages.timed("ledger")
    def record_search(
        self,
        *,
        query: str,
        controls: dict[str, Any],
        hits: list[dict[str, Any]],
        total_matches: int,
        client: str,
    ) -> str:
        """Append the record of one query search; returns its handle."""
        record = {
            "type": "search",
            "id": new_id(),
            "time": _now(),
            "client": client,
            "query": redact.redact_text(query, "query")[0],
            "controls": redact.redact_tree(controls),
            "total_matches": total_matches,
            "results": [
                {
                    "rank": rank,
                    "memory_id": hit["memory_id"],
                    "version_id": hit["version_id"],
                    "score": hit["score"],
                }
                for rank, hit in enumerate(hits, 1)
            ],
        }
        try:
            self._append(record)
        except OSError as problem:  # a full disk: the search still answers, unrecorded
            log.warning("the search was not recorded in the ledger: %s", problem)
        return record["id"]

    def feedback(
        self, handle: str, helpful: list[str], unhelpful: list[str], who: str
    ) -> dict[str, Any]:
        """Record an operator's judgement of the results of the search with this handle."""
        search = self.search_record(handle)
        if search is None:
            raise NotFound(
                f"no search record has handle {handle}",
                hint="pick a handle from `vault-tool ledger`",
            )
        returned = {r["memory_id"] for r in search["results"]}
        for memory_id in [*helpful, *unhelpful]:
            if memory_id not in returned:
                raise InvalidInput(
                    f"{memory_id} was not among the results of search {handle}",
                    hint=f"judge only what it returned: {', '.join(sorted(returned)) or 'nothing'}",
                )
        both = set(helpful) & set(unhelpful)
        if both:
            raise InvalidInput(
                f"{sorted(both)[0]} is marked both helpful and unhelpful",
                hint="mark each memory once",
            )
        if not helpful and not unhelpful:
            raise InvalidInput("nothing to record", hint="give --helpful ID or --unhelpful ID")
        record_id = self._record_feedback(search, helpful, unhelpful, who)
        return {
            "feedback_id": record_id,
            "search_id": handle,
            "query": search["query"],
            "helpful": helpful,
            "unhelpful": unhelpful,
        }

    def _record_feedback(
        self, search: dict[str, Any], helpful: list[str], unhelpful: list[str], who: str
    ) -> str:
        record = {
            "type": "feedback",
            "id": new_id(),
            "time": _now(),
            "client": who,
            "search_id": search["id"],
            "query": search["query"],
            "helpful": helpful,
            "unhelpful": unhelpful,
        }
        self._append(record, FEEDBACK_FILE)
        return record["id"]

    def search_record(self, handle: str) -> dict[str, Any] | None:
        """The search record with this handle, or None."""
        return next((r for r in self.records("search") if r["id"] == handle), None)

    def judgements(self) -> list[tuple[str, int, str]]:
        """(memory_id, +1 helpful / -1 unhelpful, the query it was judged for), oldest first.

        Read once and kept until the feedback file changes: every search consults it.
        """
        path = self.dir / FEEDBACK_FILE
        try:
            stat = path.stat()
        except FileNotFoundError:
            return []
        key = (stat.st_mtime_ns, stat.st_size)
        if self._judgements_key != key:
            judged = []
            for record in self.records("feedback"):
                judged += [(m, 1, record["query"]) for m in record["helpful"]]
                judged += [(m, -1, record["query"]) for m in record["unhelpful"]]
            self._judgements, self._judgements_key = judged, key
        return self._judgements

    def records(self, kind: str | None = None) -> Iterator[dict[str, Any]]:
        """Every record, oldest first; a torn last line (crash mid-write) is skipped."""
        if not self.dir.is_dir():
            return
        for path in sorted(self.dir.glob("*.jsonl")):
            with path.open(encoding="utf-8") as lines:
                for line in lines:
                    try:
                        record = json.loads(line)
                    except ValueError:
                        continue
                    if kind is None or record.get("type") == kind:
                        yield record

    def _append(self, record: dict[str, Any], name: str | None = None) -> None:
        path = self.dir / (name or f"{record['time'][:7]}.jsonl")
        line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT
        fd = in_remade_folder(self.dir, lambda: os.open(path, flags, 0o600))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            size = os.fstat(fd).st_size
            # A crash mid-append leaves a torn last line; start on a fresh line so that only
            # the torn record is lost, never this one.
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = b"\n" + line
            write_all(fd, line, path)
        finally:
            os.close(fd)
        with self._guard:
            self._unsynced.add(path)
        _SYNCER.due(self)

    def flush(self) -> None:
        """fsync every ledger file written since the last flush."""
        _SYNCER.done(self)
        with self._guard:
            paths, self._unsynced = self._unsynced, set()
        for path in paths:
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                continue  # removed since (`git clean -xfd`): nothing of it left to sync
            try:
                durable.os_fsync(fd)
            except OSError as problem:  # runs on a timer thread: say so, never die of it
                log.warning("could not sync the ledger file %s: %s", path.name, problem)
            finally:
                os.close(fd)


class _Syncer:
    """One thread per process that flushes each ledger FSYNC_DELAY after its first unsynced
    write. (A timer thread per burst of searches cost a thread start every FSYNC_DELAY:
    ~0.1 ms on a quiet machine, several on a loaded one, on the search that started it.)"""

    def __init__(self) -> None:
        self._due: dict[Ledger, float] = {}  # ledger -> when its flush is due (monotonic)
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def due(self, ledger: Ledger) -> None:
        with self._wake:
            if ledger in self._due:
                return
            self._due[ledger] = time.monotonic() + FSYNC_DELAY
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="ledger-fsync", daemon=True)
                self._thread.start()
            self._wake.notify()

    def done(self, ledger: Ledger) -> None:
        with self._wake:
            self._due.pop(ledger, None)

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._due:
                    self._wake.wait()
                ledger, at = min(self._due.items(), key=lambda item: item[1])
                wait = at - time.monotonic()
                if wait > 0:
                    self._wake.wait(wait)
                    continue
                del self._due[ledger]
            try:
                ledger.flush()
            except Exception:  # this thread serves every ledger: it must not end
                log.exception("could not sync the ledger")
            del ledger  # (not kept alive until the next one is due)

    def forked(self) -> None:
        """In a forked child: the parent's thread and its lock are not this process's."""
        self.__init__()


_SYNCER = _Syncer()
os.register_at_fork(after_in_child=_SYNCER.forked)


def rewrite(fd: int, path: Path, data: bytes, *, in_place: bool) -> None:
    """Replace a ledger file's records with data: in place through fd (writers that hold
    the file open keep appending to it), or through a temp file renamed over it."""
    if in_place:
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        write_all(fd, data, path)
        os.fsync(fd)
        return
    tmp = path.with_name(f".{path.name}.gc-tmp")
    tmp_fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        write_all(tmp_fd, data, tmp)
        os.fsync(tmp_fd)
    finally:
        os.close(tmp_fd)
    os.replace(tmp, path)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
