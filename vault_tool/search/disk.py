"""The index's files on disk: written durably, read without mmap, damage told apart.

Whoosh writes a segment (one compound `.seg` file), then a new table of contents
(`_MAIN_<gen>.toc`) naming it, by rename. Unsynced, a power cut can leave a TOC that names
a segment whose bytes never reached the disk (a zero-length or truncated file), so the
segment and the TOC are fsynced before the rename, and the folder after it.

Whoosh maps segment files into memory by default; a file truncated under a live map (by a
person, a disk tool, a restore) kills the process with SIGBUS on the next read. Read with
plain file reads, the same truncation raises an error this module names as damage, and the
index is rebuilt from the files.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import struct
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from whoosh.filedb.filestore import FileStorage
from whoosh.index import IndexError as WhooshIndexError

# What reading a missing, zero-length or truncated index file raises in Whoosh (each one
# seen by cutting a segment at every length from 0 bytes to its size less one, with the
# segment opened before the cut and after): a short read fails to unpack (struct.error)
# or to unpickle (EOFError, UnpicklingError), a cut compressed block fails to inflate
# (zlib.error), a file gone is an OSError, an index with no TOC left Whoosh's IndexError.
DAMAGE: tuple[type[BaseException], ...] = (
    OSError,
    EOFError,
    struct.error,
    zlib.error,
    pickle.UnpicklingError,
    WhooshIndexError,
)
# A zero-length TOC fails inside Whoosh's varint decoding with a TypeError (ord of b"").
TOC_DAMAGE = (*DAMAGE, TypeError)
# Written last when an index is made: an index without it is unfinished and is rebuilt.
META_FILE = "vault-tool-index.json"


class DurableStorage(FileStorage):
    """A Whoosh FileStorage that fsyncs segments and TOCs and never maps files into memory."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(str(path), supports_mmap=False)

    def create_file(self, name: str, excl: bool = False, mode: str = "wb", **kwargs: Any) -> Any:
        stream = super().create_file(name, excl, mode, **kwargs)
        # Only the compound segment and the TOC outlive the commit: the per-field files
        # are copied into the segment and deleted, so syncing them would buy nothing.
        if name.endswith(".seg") or ".toc." in name:
            stream.onclose = _synced(stream.onclose)
        return stream

    def rename_file(self, oldname: str, newname: str, safe: bool = False) -> None:
        super().rename_file(oldname, newname, safe)
        if newname.endswith(".toc"):
            fd = os.open(self.folder, os.O_RDONLY)
            try:
                os.fsync(fd)  # the rename itself, so the new TOC survives a power cut
            finally:
                os.close(fd)


def _synced(then: Any) -> Any:
    def close(stream: Any) -> None:
        if then is not None:
            then(stream)
        raw = stream.raw_file()
        raw.flush()
        os.fsync(raw.fileno())

    return close


class DroppedWriter:
    """A writer that drops what it is given, while the index cannot be written: the files
    and git hold every write, and the rebuild indexes them."""

    segments: tuple[Any, ...] = ()

    def __getattr__(self, name: str) -> Callable[..., None]:
        return lambda *args, **kwargs: None


def storage(folder: Path) -> DurableStorage:
    """The storage of the index in folder."""
    return DurableStorage(folder)


def index_state(root: Path) -> tuple[str, int | None]:
    """ok, missing, outdated or damaged, and the schema version the index was built with
    (for checks, which look without opening: Index.open() would build a missing index)."""
    from whoosh.reading import SegmentReader

    from vault_tool.search.documents import INDEX_SCHEMA_VERSION

    folder = root / ".vault" / "index"
    try:
        version = json.loads((folder / META_FILE).read_text())["schema_version"]
    except (OSError, ValueError, KeyError, TypeError):
        return "missing", None
    if version != INDEX_SCHEMA_VERSION:
        return "outdated", version
    files = storage(folder)
    if not files.index_exists():
        return "missing", version
    try:
        toc = read_toc(files.open_index())
    except TOC_DAMAGE:
        return "damaged", version
    for segment in toc.segments:  # a segment that cannot be opened cannot be searched
        try:
            SegmentReader(files, toc.schema, segment, generation=toc.generation).close()
        except DAMAGE:
            return "damaged", version
    return "ok", version


@contextlib.contextmanager
def creating(lock_path: Path) -> Iterator[None]:
    """The lock every process holds while it makes the index folder anew (an open of a
    missing index, a clear for a rebuild): two at once removed each other's folder."""
    from filelock import FileLock

    lock = FileLock(str(lock_path), timeout=60)
    for attempt in range(3):  # (`git clean -xfd` may remove .vault/run in between)
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            lock.acquire()
            break
        except FileNotFoundError:
            if attempt == 2:
                raise
    try:
        yield
    finally:
        lock.release()


def made(folder: Path) -> tuple[int, int] | None:
    """Which making of the index folder this is (its meta file's inode and change time):
    generations count again from 0 in a folder made anew (after a `git clean`, by another
    process), so a searcher of the one before can look current by its generation alone."""
    try:
        meta = os.stat(folder / META_FILE)
    except OSError:
        return None
    return meta.st_ino, meta.st_ctime_ns


def read_toc(ix: Any) -> Any:
    """ix's latest table of contents. Another process's commit deletes the TOC it replaces,
    so one that vanishes between listing and opening is read again (the newer one)."""
    from whoosh.index import TOC

    from vault_tool.search.documents import whoosh_schema

    for _ in range(9):
        try:
            return TOC.read(ix.storage, ix.indexname, schema=whoosh_schema())
        except FileNotFoundError:
            time.sleep(0.01)
    return TOC.read(ix.storage, ix.indexname, schema=whoosh_schema())
