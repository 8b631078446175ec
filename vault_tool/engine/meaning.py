"""The vault's dense signal (search/dense.py), when `[search] semantic = true` asks for it.

Opened lazily: a vault that does not ask for it never looks for the extra, and one that
asks without the extra installed ranks by words and says why once in the log (a search
must not fail for a missing optional package).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from vault_tool.search.index import Index

log = logging.getLogger(__name__)

# How often the background worker looks for memories without a vector, besides nudges.
LOOK_EVERY_SECONDS = 5.0


class Meaning:
    """The dense index of one open vault, or None when it is off or cannot be had."""

    def __init__(self, wanted: bool, index: Index) -> None:
        self.wanted = wanted
        self._index = index
        self._dense: Any = None
        self._tried = False
        self._lock = threading.Lock()

    @property
    def problem(self) -> str | None:
        """Why meaning is asked for and not used (None when it is used or not asked for)."""
        from vault_tool.search import dense

        if self.wanted and not dense.available():
            return "[search] semantic is on but the extra is not installed"
        return None

    def dense(self) -> Any:
        """The DenseIndex, opened on first use; None when off or unavailable."""
        if not self.wanted:
            return None
        with self._lock:
            if not self._tried:
                self._tried = True
                self._dense = self._open()
            return self._dense

    def _open(self) -> Any:
        from vault_tool.search import dense

        if not dense.available():
            log.warning(
                "%s: ranking by words only (pip install 'vault-tool[semantic]')", self.problem
            )
            return None
        try:
            return dense.DenseIndex.open(self._index.dir)
        except Exception:  # a cache: searches rank by words without it
            log.warning("the dense index could not be opened; ranking by words", exc_info=True)
            return None

    def worker(self, leading: Callable[[], bool]) -> Any:
        """A started background worker that keeps the vectors in step while leading() (one
        process of those serving a vault embeds), or None."""
        found = self.dense()
        if found is None:
            return None
        from vault_tool.engine.embedding import EmbeddingWorker

        worker = EmbeddingWorker(self._index, found, every=LOOK_EVERY_SECONDS, leading=leading)
        return worker.start()
