"""The lookups operator verbs (ops/) make through the vault: a memory by id, path, key or
content; the notes a link names; the files and what may be written where.

A part of Vault (it is the one door): kept apart only to keep each module to one job.
"""

from __future__ import annotations

from typing import Any

from vault_tool.core.memory import Memory, fingerprint, parse
from vault_tool.core.projects import Projects
from vault_tool.engine import deletions
from vault_tool.engine.writer import Writer
from vault_tool.errors import NotFound, VaultBusy, VaultError
from vault_tool.search import links
from vault_tool.search.documents import Indexed
from vault_tool.search.index import Index
from vault_tool.storage.store import Store


class Lookups:
    """Vault's lookups; Vault supplies the store, the index and the writer."""

    _store: Store
    _index: Index
    _writer: Writer
    projects: Projects

    def find(self, memory_id: str) -> Indexed | None:
        """The indexed memory with this id, or None."""
        return self._index.by_id(memory_id)

    def project_of(self, memory_id: str) -> str | None:
        """The project (core/projects.py) of the memory a tool would find by this id: by id
        or by path, live or deleted (then as its last version said); None if there is none."""
        try:
            found = deletions.live_or_deleted(self._index, self._store, memory_id)
        except (NotFound, VaultBusy):
            return None
        if isinstance(found, Indexed):
            return self.projects.of(found.record["semantic_delta"].get("project"), found.path)
        last = found.last_version and self._store.repo.show_file(found.last_version, found.path)
        try:
            declared = parse(last.decode("utf-8"), found.path).project if last else None
        except (VaultError, UnicodeDecodeError):
            declared = None  # (a last version no one could read: its folder decides)
        return self.projects.of(declared, found.path)

    def at_path(self, path: str) -> Indexed | None:
        """The indexed memory of this file, or None."""
        return self._index.by_path(path)

    def with_key(self, key: str) -> list[Indexed]:
        """Indexed memories whose key is this one."""
        return self._index.find("key", key)

    def same_content(self, memory: Memory) -> list[Indexed]:
        """Indexed memories with this memory's type, title and content."""
        return self._index.find(
            "fingerprint", fingerprint(memory.memory_type, memory.title, memory.body)
        )

    def notes_named(self, name: str) -> list[str]:
        """Paths of the indexed notes a link's prefixed name finds (see core/links.py)."""
        return self._index.read(lambda searcher: links.paths_named(searcher, name))

    def indexed(self) -> list[tuple[str, str, dict[str, Any]]]:
        """(path, memory id, semantic delta) of every indexed memory."""
        return self._index.deltas()

    def memory_paths(self) -> list[str]:
        """Every memory file in the folder, sorted."""
        return sorted(path for path, _ in self._store.iter_memory_paths())

    def read_file(self, path: str) -> bytes | None:
        """A memory file's bytes (refusing paths that leave the vault), None if missing."""
        return self._store.read_bytes(path)

    def committed_file(self, path: str) -> bytes | None:
        """A file's bytes, refused with VersionConflict while it has an uncommitted hand edit."""
        return self._writer.committed_bytes(path)

    def is_free(self, path: str, taken: set[str] | frozenset[str] = frozenset()) -> bool:
        """Whether a new memory may be written at path (nothing there, nothing indexed)."""
        return self._writer.is_free(path, taken)

    def path_for(self, memory: Memory, taken: set[str] | frozenset[str] = frozenset()) -> str:
        """Where a new memory goes: <type>/<YYYY-MM>/<slug>.md, unique in the vault."""
        return self._writer.path_for(memory, taken)
