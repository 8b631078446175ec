"""Reading other tools' memories into Memory values, one module per kind of source.

Pure apart from reading the source: nothing here touches a vault. Each reader returns the
items it could convert (with notes on what changed on the way in) and the items it skipped,
with the reason; items.prepare() makes an item a valid memory file. transfer.py checks the
items against a vault and writes them. docs/import-export.md describes every mapping.
"""

from __future__ import annotations

import posixpath
from pathlib import Path

from vault_tool.errors import InvalidInput
from vault_tool.ops.importers import jsonl, markdown, source_history
from vault_tool.ops.importers.items import (
    Item,
    Progress,
    Skipped,
    Source,
    Unusable,
    prepare,
)

FORMATS = ("markdown", "basic-memory", "kg-jsonl", "jsonl")

__all__ = [
    "FORMATS",
    "Item",
    "Progress",
    "Skipped",
    "Source",
    "Unusable",
    "prepare",
    "read_source",
]


def read_source(path: Path, fmt: str, progress: Progress | None = None, prefix: str = "") -> Source:
    """Read PATH in one of FORMATS. Raises InvalidInput if PATH is the wrong kind of thing.

    markdown notes keep their paths, under prefix (a folder of the vault, "" for its top)."""
    if fmt not in FORMATS:
        raise InvalidInput(
            f"--format: unknown format {fmt!r}", hint=f"use one of: {', '.join(FORMATS)}"
        )
    if not path.exists():
        raise InvalidInput(
            f"PATH: {path} does not exist", hint="give the folder or file to import", field="path"
        )
    if fmt in ("kg-jsonl", "jsonl"):
        if not path.is_file():
            raise InvalidInput(
                f"PATH: {path} is not a file; --format {fmt} reads one JSON Lines file",
                hint="give the .jsonl file itself",
                field="path",
            )
        lines = jsonl.read_lines(path)
        if fmt == "kg-jsonl":
            return jsonl.read_kg_jsonl(lines, path.name, progress)
        return jsonl.read_export_jsonl(lines, path.name, progress)
    files = list(markdown.markdown_files(path))
    ignored = [
        Skipped(label, "not a Markdown file; not imported")
        for label in (markdown.other_files(path) if path.is_dir() else ())
    ]
    source = _read_folder(path, fmt, files, progress, prefix)
    source.ignored = ignored
    return source


def _read_folder(
    path: Path, fmt: str, files: list[tuple[str, Path]], progress: Progress | None, prefix: str
) -> Source:
    if fmt == "markdown":
        folder = path if path.is_dir() else path.parent
        history = source_history.commit_dates(folder)
        source = markdown.read_markdown(files, progress, history)
        for item in source.items:
            item.path_hint = posixpath.join(prefix, item.label) if prefix else item.label
        return source
    return markdown.read_basic_memory(files, path.stem if path.is_file() else path.name, progress)
