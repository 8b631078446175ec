"""Walking the vault's folder: the one definition of which files are the vault's to read."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from vault_tool.storage.repo_state import NESTED_MARKERS


def files_under(root: Path, top: str | None = None) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Every regular file under root (relative path, entry), without following symlinks and
    skipping dot entries (.git, .vault, .obsidian, .trash) and nested repositories or vaults
    (their files are their own). FIFOs and devices are skipped: reading one could block.
    With top (a folder's path relative to root), only the files of that folder, as a walk
    of root would list them."""
    stack = [root / top if top else root]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        if folder != root and any(e.name in NESTED_MARKERS for e in entries):
            continue
        for entry in entries:
            if entry.name.startswith(".") or entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
            elif entry.is_file(follow_symlinks=False):
                yield Path(entry.path).relative_to(root).as_posix(), entry
