"""Import into a vault as one commit, and export a vault as JSON Lines.

The importers package turns a source into Memory values; this module checks them against the
vault (already there? id or path taken? key in use?), gives each an id and a path, and writes
them all with Vault.apply_plan: one commit, `Import <n> memories from <source>`. Export reads
the files (the source of truth), not the index. docs/import-export.md describes the formats.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from vault_tool.core import changelog, ids, redact
from vault_tool.core.ids import is_memory_path
from vault_tool.core.memory import Memory, fingerprint, first_h1, normalize_body, parse
from vault_tool.core.times import utc_now
from vault_tool.engine.vault import Vault
from vault_tool.engine.writer import Planned
from vault_tool.errors import InvalidInput, UnparseableFile
from vault_tool.ops import importers, shape
from vault_tool.ops.importers import Item, Progress
from vault_tool.ops.knowledge_graph import kg_graph

IMPORT_CLIENT = "import"
EXPORT_FORMATS = ("jsonl", "kg-jsonl")


def import_source(
    vault: Vault,
    path: Path,
    fmt: str,
    *,
    dry_run: bool = False,
    progress: Progress | None = None,
    prefix: str | None = None,
) -> dict[str, Any]:
    """Import PATH in format fmt as one commit; a report of what was imported and skipped.

    markdown notes keep their paths under prefix (see ops/shape.py)."""
    folder = shape.check_prefix(prefix)
    source = importers.read_source(path, fmt, progress, prefix=folder)
    name = redact.redact_text(path.name or str(path), "source")[0]
    report: dict[str, Any] = {
        "source": str(path),
        "format": fmt,
        "dry_run": dry_run,
        "version_id": None,
        "imported": [],
        "skipped": [s.to_dict() for s in source.skipped],
        "ignored": [s.to_dict() for s in source.ignored],
        "redactions": [],
        "notes": [],
    }
    plan = _plan(vault, source.items, fmt, report)
    kept = _kept_entries(source.items, report)
    unresolved = shape.add_links(vault, kept) if kept else 0
    count = len(plan)
    subject = changelog.subject("import", memories=changelog.memories(count), source=name)
    report["subject"] = subject
    if plan:
        result = vault.apply_plan(plan, subject, client=IMPORT_CLIENT, dry_run=dry_run)
        report["version_id"] = result.version_id
        if dry_run:
            report["diff"] = result.diff
    report["counts"] = {
        "imported": len(report["imported"]),
        "skipped": len(report["skipped"]),
        "redacted": sum(r["count"] for r in report["redactions"]),
    }
    report["counts"]["left_out"] = len(left_out(report))
    if fmt == "markdown":
        report["counts"]["unresolved_links"] = unresolved
    # Labels, notes and skip reasons quote the source (file names, entity names): the
    # printed report holds no secret either.
    return redact.redact_tree(report)


def _plan(vault: Vault, items: list[Item], fmt: str, report: dict[str, Any]) -> list[Planned]:
    plan: list[Planned] = []
    seen: dict[str, str] = {}  # fingerprint or id -> label of the item that claimed it
    taken: set[str] = set()
    keys: set[str] = set()
    now = utc_now()
    for item in items:
        try:
            memory, redactions = importers.prepare(item)
        except importers.Unusable as problem:
            report["skipped"].append({"item": item.label, "reason": str(problem)})
            continue
        if item.keeps_shape:
            reason = shape.why_not_placed(vault, memory, item, taken)
        else:
            reason = _already_there(vault, memory, item, seen)
        if reason:
            report["skipped"].append({"item": item.label, "reason": reason})
            continue
        if memory.key and (memory.key in keys or vault.with_key(memory.key)):
            item.notes.append(f"key {memory.key!r} is already used; kept as imported_key")
            extra = {**memory.extra, "imported_key": memory.key}
            memory = memory.with_changes(key=None, extra=extra)
        memory = memory.with_changes(
            created=memory.created or now,
            updated=memory.updated or memory.created or now,
            source=memory.source or f"{IMPORT_CLIENT}/{fmt}",
        )
        if item.keeps_shape:
            path = item.path_hint or item.label
        else:
            memory, path = _place(vault, memory, item, taken)
        taken.add(path)
        if memory.key:
            keys.add(memory.key)
        seen[fingerprint(memory.memory_type, memory.title, memory.body)] = item.label
        seen[memory.id or ids.path_id(path)] = item.label
        plan.append(Planned(path, memory))
        report["imported"].append(
            {
                "item": item.label,
                "memory_id": memory.id or ids.path_id(path),
                "path": path,
                "title": memory.title,
                "memory_type": memory.memory_type,
                "created": memory.created,
                "updated": memory.updated,
            }
        )
        report["redactions"].extend({"item": item.label, **r} for r in redactions)
        report["notes"].extend({"item": item.label, "note": n} for n in item.notes)
    return plan


# Skips that lose nothing: what the item holds is in the vault already.
_PRESENT = ("already in the vault", "same type, title and content as")


def left_out(report: dict[str, Any]) -> list[dict[str, str]]:
    """The skipped items whose content is not in the vault (the import is incomplete)."""
    return [s for s in report["skipped"] if not s["reason"].startswith(_PRESENT)]


def _kept_entries(items: list[Item], report: dict[str, Any]) -> list[tuple[Item, dict[str, Any]]]:
    """Each imported item that keeps its shape, with its entry in the report."""
    entries = {entry["item"]: entry for entry in report["imported"]}
    return [(i, entries[i.label]) for i in items if i.keeps_shape and i.label in entries]


def _already_there(vault: Vault, memory: Memory, item: Item, seen: dict[str, str]) -> str | None:
    """Why memory is a duplicate (same type, title and content, or same id), or None."""
    hint = _path_hint(item)
    own_id = memory.id or (ids.path_id(hint) if hint else None)
    print_ = fingerprint(memory.memory_type, memory.title, memory.body)
    # Items with ids of their own are told apart by them: an exported vault may hold two
    # notes with the same text at two paths.
    if print_ in seen and not own_id:
        return f"same type, title and content as {seen[print_]} in this import"
    for doc in vault.same_content(memory):
        same = "has the same type, title and content"
        return f"already in the vault: {doc.memory_id} ({doc.path}) {same}"
    if own_id:
        if own_id in seen:
            return f"id {own_id} is also used by {seen[own_id]} in this import"
        doc = vault.find(own_id)
        if doc is not None:
            return f"already in the vault: a memory with id {own_id} is at {doc.path}"
    return None


def _place(vault: Vault, memory: Memory, item: Item, taken: set[str]) -> tuple[Memory, str]:
    """The memory with its final id, and its path: the exported one if it is free, else new."""
    hint = _path_hint(item)
    if item.path_hint and hint is None:
        item.notes.append(f"its exported path {item.path_hint!r} is not a usable vault path")
    free = hint is not None and vault.is_free(hint, taken)
    if hint is not None and free:
        return memory, hint  # without an id, a hand-made file keeps its path and so its id
    if hint is not None:
        item.notes.append(f"its exported path {hint} is taken; it gets a new path")
    if memory.id is None:
        memory = memory.with_changes(id=ids.new_id())
        if first_h1(memory.body) is None:  # now a file of the tool's, which begins with one
            memory = memory.with_changes(body=normalize_body(f"# {memory.title}\n\n{memory.body}"))
        if hint is not None:
            item.notes.append(
                f"it had the path-derived id {ids.path_id(hint)}; its new id is {memory.id}"
            )
    return memory, vault.path_for(memory, taken)


def _path_hint(item: Item) -> str | None:
    """The exported path, if it is a safe, secret-free memory path."""
    hint = item.path_hint
    if not hint or not is_memory_path(hint) or "\\" in hint or redact.find_secret_kinds(hint):
        return None
    if any(part in ("", ".", "..") for part in hint.split("/")):
        return None
    return hint if ids.PATH_ID_RE.match(ids.path_id(hint)) else None


# --- export -----------------------------------------------------------------------------


def export_records(vault: Vault, progress: Progress | None = None) -> Iterator[dict[str, Any]]:
    """One record per memory file, in path order: what `export --format jsonl` writes."""
    paths = vault.memory_paths()
    for done, path in enumerate(paths, 1):
        record = _record(vault, path)
        if record is not None:
            yield record
        if progress:
            progress(done, len(paths))


def _record(vault: Vault, path: str) -> dict[str, Any] | None:
    doc = vault.at_path(path)
    try:
        memory = parse((vault.read_file(path) or b"").decode("utf-8"), path)
    except (UnparseableFile, UnicodeDecodeError):
        memory = None  # a broken file: export its last good version, as search shows it
    if memory is None:
        if doc is None:
            return None
        stored = doc.record
        delta, body, extra = stored["semantic_delta"], stored["content_md"], {}
        created, updated, source = stored["created"], stored["updated"], stored["source"]
    else:
        delta, body, extra = memory.semantic_delta(), memory.body, memory.extra
        dated = doc.record if doc else {}
        created = memory.created or dated.get("created")
        updated = memory.updated or dated.get("updated")
        source = memory.source
    record = {
        "memory_id": (memory.id if memory else None) or (doc.memory_id if doc else None),
        "version_id": doc.version_id if doc else None,
        "path": path,
        "semantic_delta": delta,
        "content_md": body,
        "created": created,
        "updated": updated,
        "source": source,
    }
    record["memory_id"] = record["memory_id"] or ids.path_id(path)
    if extra:
        record["front_matter_extra"] = extra
    return record


def export_lines(vault: Vault, fmt: str, progress: Progress | None = None) -> Iterator[str]:
    """The vault as JSON Lines in fmt (jsonl or kg-jsonl), one line per string."""
    if fmt not in EXPORT_FORMATS:
        raise InvalidInput(
            f"--format: unknown export format {fmt!r}",
            hint=f"use one of: {', '.join(EXPORT_FORMATS)}",
        )
    if fmt == "jsonl":
        for record in export_records(vault, progress):
            yield json.dumps(record, ensure_ascii=False)
        return
    entities, relations = kg_graph(list(export_records(vault, progress)))
    for line in [*entities, *relations]:
        # Compact, as the MCP memory server writes its own file (JSON.stringify).
        yield json.dumps(line, ensure_ascii=False, separators=(",", ":"))
