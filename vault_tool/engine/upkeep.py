"""Housekeeping: index segments merged, git's objects packed, and what both hold."""

from __future__ import annotations

from dataclasses import dataclass

from vault_tool.search.index import MERGE_AT_SEGMENTS, Index
from vault_tool.storage.store import Store


@dataclass(frozen=True)
class Upkeep:
    """A vault's housekeeping (Vault.upkeep): what `vault-tool gc` and an idle watcher do."""

    _store: Store
    _index: Index

    def merge_when_idle(self) -> bool:
        """Merge index segments if there are many; True if done, VaultBusy if a writer holds
        the lock for more than a moment (the caller tries again later)."""
        if self._index.segment_count() <= MERGE_AT_SEGMENTS and not self._index.flush_due():
            return False
        with self._store.write_lock(timeout=0.05):
            self._index.merge_segments()  # (and the journal of recent writes flushed)
        return True

    def optimize(self) -> bool:
        """Merge the whole index into one segment (writers wait); False if it is one already."""
        if self._index.segment_count() <= 1 and not self._index.pending_writes():
            return False
        with self._store.write_lock():
            self._index.optimize()
        return True

    def pack_history(self) -> None:
        """Pack git's objects and write the commit-graph that keeps `git log -- PATH` fast."""
        self._store.pack()

    def storage_counts(self) -> dict[str, int]:
        """git's object counts (`git count-objects -v`) and the index's segment count."""
        return {**self._store.object_counts(), "index_segments": self._index.segment_count()}
