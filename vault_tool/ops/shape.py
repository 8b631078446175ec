"""Imports that keep a folder's shape: each note at its own path, its links resolved.

A person's folder of notes (an Obsidian vault, say) comes in as it is: every note at its
path under a prefix, so its id is that path and every `[[wikilink]]` that named it by file
name or path still does. Identity is the path: a note already at its path is not imported
again, and a different note there is never overwritten.
"""

from __future__ import annotations

from typing import Any

from vault_tool.core import ids
from vault_tool.core.links import aliases_of
from vault_tool.core.memory import Memory
from vault_tool.engine.vault import Vault
from vault_tool.errors import InvalidInput
from vault_tool.ops.importers import Item
from vault_tool.ops.importers.links import Names, report_links

_PREFIX_HINT = "give a folder inside the vault, such as notes or imported/obsidian"


def check_prefix(prefix: str | None) -> str:
    """The folder under which imported notes keep their paths ("" for the vault's top)."""
    if not prefix:
        return ""
    folder = prefix.strip().rstrip("/")
    parts = folder.split("/")
    if folder.startswith("/") or ".." in parts:
        problem: str | None = "must be a folder inside the vault"
    elif any(not part or part.startswith(".") for part in parts):
        problem = "may not name a hidden folder or an empty one"
    elif "\\" in folder or not ids.PATH_ID_RE.match(folder):
        problem = 'holds a character a memory id cannot hold (\\ : * ? " < > |)'
    else:
        problem = ids.path_problem(folder)
    if problem:
        raise InvalidInput(f"--prefix: {prefix!r} {problem}", hint=_PREFIX_HINT, field="prefix")
    return folder


def why_not_placed(vault: Vault, memory: Memory, item: Item, taken: set[str]) -> str | None:
    """Why a kept note cannot go at its path, or None (it goes there, with that id)."""
    path = item.path_hint or item.label
    if path in taken:
        return f"{path} is also the path of another note of this import"
    if not ids.is_memory_path(path):
        return (
            f"{path} is not a path the vault reads as a memory (a name ending in .md, not the "
            "top README.md, no dot or editor-backup names); rename it or give --prefix"
        )
    problem = ids.path_problem(path)
    if problem:
        return problem
    if not ids.PATH_ID_RE.match(ids.path_id(path)) or "\\" in path:
        return 'its name holds a character a memory id cannot hold (\\ : * ? " < > |)'
    doc = vault.at_path(path)
    if doc is not None:
        if any(same.path == path for same in vault.same_content(memory)):
            return f"already in the vault: {doc.memory_id} ({path}) has the same content"
        return (
            f"{path} is in the vault with different content; an import never overwrites "
            "a note (edit it there, or import under another --prefix)"
        )
    holder = vault.find(memory.id) if memory.id else None
    if holder is not None:
        return f"already in the vault: a memory with id {memory.id} is at {holder.path}"
    if not vault.is_free(path, taken):
        return f"{path} is taken by a file the vault has not taken in"
    return None


def add_links(vault: Vault, placed: list[tuple[Item, dict[str, Any]]]) -> int:
    """Give each imported entry its links and the id each resolves to; the number of links
    that resolve to nothing."""
    imported = {
        entry["path"]: (entry["title"], aliases_of(item.memory.extra)) for item, entry in placed
    }
    ids_at = {entry["path"]: entry["memory_id"] for _, entry in placed}
    names = Names(imported, vault.notes_named)

    def id_of(path: str) -> str:
        doc = vault.at_path(path)
        return ids_at.get(path) or (doc.memory_id if doc else ids.path_id(path))

    unresolved = 0
    for item, entry in placed:
        entry["links"] = list(report_links(item.links, entry["path"], names, id_of))
        unresolved += sum(1 for link in entry["links"] if link["resolves_to"] == "unresolved")
    return unresolved
