"""Indexes held in memory: a segment of documents, and a throwaway searcher over them.

Whoosh's RamStorage keeps a writer's temporary files in `<tmp>/MAIN.tmp`, one folder
for every process on the machine: a writer that finishes removes it under another one's
feet (which reads as a damaged index), and a file of that name stops them all. These
keep their temporary files in memory too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

from whoosh.filedb.filestore import RamStorage


class MemoryStorage(RamStorage):
    """A RamStorage whose temporary storage is in memory as well."""

    def temp_storage(self, name: str | None = None) -> RamStorage:
        return MemoryStorage()


_schema: Any = None


def _index() -> Any:
    from vault_tool.search.documents import whoosh_schema

    global _schema
    _schema = _schema or whoosh_schema()  # (made once per process)
    return MemoryStorage().create_index(_schema)


def segment_of(documents: list[dict[str, Any]]) -> Any:
    """A reader of one segment in memory holding these documents (documents.py's), its
    posting blocks not compressed (a write's segment has a block for each of its ~150
    words, and nothing is saved by compressing one posting)."""
    from whoosh.codec.whoosh3 import W3Codec

    ix = _index()
    writer = ix.writer(codec=W3Codec(compression=0))
    for document in documents:
        writer.add_document(**document)
    writer.commit(merge=False)
    return ix.reader()


@contextlib.contextmanager
def scratch_searcher(documents: Iterable[dict[str, Any]]) -> Iterator[Any]:
    """A searcher over a throwaway in-memory index of these documents (documents.py's)."""
    ix = _index()
    writer = ix.writer()
    for document in documents:
        writer.add_document(**document)
    writer.commit()
    with ix.searcher() as searcher:
        yield searcher
