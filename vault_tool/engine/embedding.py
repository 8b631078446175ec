"""Keeping the dense index (search/dense.py) in step with the search index, in the background.

Searches never wait for it: until a memory has its vector, ranking uses its words alone
(dense.ready_for says which have one). A write, a hand edit or a rebuild calls nudge();
after a short pause the worker compares each indexed memory's blob with the blob its
vector was made from, and embeds only the memories that are new or changed (stop() is
heard between two chunks; what is done is kept). Memories gone from the index lose their
vectors once a pass has seen the whole index (not while it is being rebuilt or caught up:
it may then lack memories it will hold again).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable

from vault_tool.search.dense import DenseIndex, text_of
from vault_tool.search.index import Index

log = logging.getLogger(__name__)

# Writes come in bursts (a batch, a pull): one pass after the burst.
PAUSE_SECONDS = 0.5


def index_entries(index: Index) -> list[tuple[str, str, Callable[[], str]]]:
    """(memory_id, blob, text) of every indexed memory, the text read from the index only
    when called (only a new or changed memory's is). A memory id held by two files is
    taken from the one with the smallest path, as Index.by_id does."""

    def columns(searcher) -> dict[str, tuple[str, str]]:
        reader = searcher.reader()
        if reader.doc_count_all() == 0:
            return {}  # (an empty index's reader has no columns)
        path, memory_id, blob = (
            reader.column_reader(name) for name in ("path", "memory_id", "blob")
        )
        found: dict[str, tuple[str, str]] = {}
        for d in reader.all_doc_ids():
            known = found.get(memory_id[d])
            if known is None or path[d] < known[0]:
                found[memory_id[d]] = (path[d], blob[d])
        return found

    def text_at(path: str) -> Callable[[], str]:
        def read() -> str:
            fields = index.read(lambda searcher: searcher.document(path=path))
            return text_of(json.loads(fields["record"])) if fields else ""

        return read

    return [
        (memory_id, blob, text_at(path))
        for memory_id, (path, blob) in sorted(index.read(columns).items())
    ]


class EmbeddingWorker:
    """One background thread that embeds what the search index holds and the dense index
    lacks."""

    def __init__(
        self,
        index: Index,
        dense: DenseIndex,
        *,
        pause: float = PAUSE_SECONDS,
        every: float | None = None,
        leading: Callable[[], bool] = lambda: True,
    ) -> None:
        self.index = index
        self.dense = dense
        self._pause = pause
        self._every = every  # (also a pass this often without a nudge; None: only nudged)
        self._leading = leading  # (one process of many on a vault embeds: the leader)
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._thread: threading.Thread | None = None

    @property
    def pending(self) -> int:
        """Memories being embedded now (0 when idle; 1 while a pass is due but not begun)."""
        return self.dense.pending or (0 if self._idle.is_set() else 1)

    def start(self) -> EmbeddingWorker:
        """Start the thread, and a first pass."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="embedding", daemon=True)
            self._thread.start()
        self.nudge()
        return self

    def nudge(self) -> None:
        """Something may have changed in the index: make a pass soon."""
        self._idle.clear()
        self._wake.set()

    def wait_until_idle(self, timeout: float) -> bool:
        """Wait for the passes asked for so far; whether they ended within timeout."""
        return self._idle.wait(timeout)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop after the chunk being embedded, keeping what is done (the thread is a
        daemon: a pass cut short by the process's end loses what it had not written)."""
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def catch_up(self) -> int:
        """One pass, now, in the caller's thread: how many memories were embedded."""
        entries = index_entries(self.index)
        # Memories gone from the index lose their vectors only when it holds all it will.
        complete = not self.index.behind()
        return self.dense.update(entries, complete=complete, stopping=self._stopping.is_set)

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._wake.wait(self._every)
            if self._stopping.wait(self._pause):
                break
            self._wake.clear()
            try:
                if self._leading():
                    self.catch_up()
            except Exception:  # the vectors are only a cache; searches rank by words meanwhile
                log.warning(
                    "embedding the memories failed; retrying at the next change", exc_info=True
                )
            if not self._wake.is_set():
                self._idle.set()
