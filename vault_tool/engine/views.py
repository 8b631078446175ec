"""Views over the memories that the extended profile's tools give (server/extended.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vault_tool.core import ids
from vault_tool.engine import deletions, fact_history, reads
from vault_tool.search.index import Index
from vault_tool.storage.store import Store


@dataclass(frozen=True)
class Views:
    """A timeline around a memory; the facts about a subject, with both of their times."""

    _store: Store
    _index: Index

    def timeline(self, memory_id: str, before: int = 5, after: int = 5) -> dict[str, Any]:
        """The memories updated just before and after this one, oldest first."""
        doc = deletions.require(self._index, self._store, ids.check_memory_id(memory_id))
        return reads.timeline(self._index, doc, before, after)

    def facts_about(self, asked: fact_history.Asked) -> list[dict[str, Any]]:
        """Every fact about a subject, current ones unless asked for all (fact_history.py)."""
        return fact_history.facts_about(self._store, self._index, asked)
