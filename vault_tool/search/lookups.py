"""Lookups over the index: by id, path, key or fingerprint, and what catch-up compares."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from vault_tool.errors import NotFound, VaultBusy
from vault_tool.search.documents import Indexed
from vault_tool.search.stored import expiring_query

if TYPE_CHECKING:
    from whoosh.searching import Searcher

T = TypeVar("T")


class Lookups:
    """The index's lookups, over its read() (index.py)."""

    # Whether a rebuild or catch-up runs: the index may then lack files it will hold.
    behind: Callable[[], bool]

    def read(self, answer: Callable[[Any], T]) -> T:
        raise NotImplementedError

    def find(self, field: str, value: str) -> list[Indexed]:
        """Every document whose ID field equals value."""
        if not value:
            return []
        stored = self.read(lambda searcher: list(searcher.documents(**{field: value})))
        return [Indexed.from_stored(f) for f in stored]

    def by_id(self, memory_id: str) -> Indexed | None:
        """The memory with this id; for a duplicated id, the one with the smallest path."""
        found = sorted(self.find("memory_id", memory_id), key=lambda d: d.path)
        return found[0] if found else None

    def require(self, memory_id: str) -> Indexed:
        """The memory with this id; NotFound (naming the fix) if there is none, VaultBusy
        while the index is behind (its file may not have been read yet)."""
        doc = self.by_id(memory_id)
        if doc is not None:
            return doc
        if self.behind():
            raise VaultBusy(
                "memory_id: the search index is being rebuilt or caught up from the files "
                f"and does not hold {memory_id} yet",
                hint="retry in a moment (nothing was changed or lost)",
                field="memory_id",
            )
        raise NotFound(
            f"memory_id: no memory has id {memory_id}",
            hint="search with a query to find the memory and its current id",
            field="memory_id",
        )

    def by_path(self, path: str) -> Indexed | None:
        """The document of this file."""
        found = self.find("path", path)
        return found[0] if found else None

    def expired_by(self, moment: int) -> list[Indexed]:
        """Every memory whose expires_at (epoch seconds) is at or before moment."""
        due = expiring_query(moment)
        stored = self.read(lambda s: [s.stored_fields(d) for d in s.docs_for_query(due)])
        return [Indexed.from_stored(f) for f in stored]

    def deltas(self) -> list[tuple[str, str, dict[str, Any]]]:
        """(path, memory id, semantic delta) of every indexed memory.

        A list, read at once: the searcher's lock is held while it is read, and a caller
        working through the memories must not keep searches and writes waiting.
        """
        stored = self.read(lambda searcher: list(searcher.all_stored_fields()))
        return [
            (f["path"], f["memory_id"], json.loads(f["record"])["semantic_delta"]) for f in stored
        ]

    def states(self) -> dict[str, tuple[int, int, str]]:
        """path -> (mtime_ns, size, blob) of every indexed file: what catch-up compares."""
        return self.read(_states)

    def count(self) -> int:
        """Number of indexed files."""
        return self.read(lambda searcher: searcher.doc_count())


def _states(searcher: Searcher) -> dict[str, tuple[int, int, str]]:
    reader = searcher.reader()
    if reader.doc_count_all() == 0:
        return {}  # (an empty index's reader has no columns)
    path, mtime, size, blob = (
        reader.column_reader(name) for name in ("path", "mtime_ns", "size", "blob")
    )
    return {path[d]: (mtime[d], size[d], blob[d]) for d in reader.all_doc_ids()}
