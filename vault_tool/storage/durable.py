"""Writing files so that a crash leaves either the old bytes or the new ones, never a mix.

A new version is written to a temp file beside its target, fsynced, renamed over the target,
and the folder fsynced so the rename itself survives a power cut. Temp files carry
TMP_MARKER in their name: .gitignore hides them and the next open of the vault removes them.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

TMP_MARKER = ".vault-tmp-"


def temp_path(target: Path) -> Path:
    """A fresh hidden temp file name beside target."""
    return target.with_name(f".{target.name}{TMP_MARKER}{secrets.token_hex(4)}")


def write_durably(path: Path, data: bytes) -> None:
    """Write data to path and fsync it before returning."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:  # os.write may write less than asked (a signal, a large buffer)
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_text(path: Path, text: str) -> None:
    """Replace a small machine-local file (a record, a heartbeat) so no reader sees half of it.

    Not fsynced: these files are caches and notes the next start rebuilds, not memories.
    """
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def fsync_folder(folder: Path) -> None:
    """fsync a folder, so the renames and removals in it are on disk."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_empty_folders(folder: Path, root: Path) -> None:
    """Remove folder and its parents up to root while they are empty (undoing a mkdir)."""
    while folder != root and root in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def write_new(path: Path, text: str) -> None:
    """Write a text file (and its folders) unless it exists: a person's own file stays."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        path.write_text(text, encoding="utf-8", newline="\n")
