"""git objects written and read in-process: loose objects as git writes them, trees cached.

A write's blob, trees and commit are stored here instead of by `git hash-object`, `git
mktree` and `git commit-tree`: each of those is a process, and a process costs more than
the object (mktree also looks up every entry of a root tree that may hold thousands).
A loose object is what git itself writes: zlib of `<kind> <size>\\0<body>` at
objects/<2 hex>/<38 hex>, made as a `tmp_obj_<pid>_` file in the object folder (fsck
ignores them; those a crash leaves are removed by the next process to write, or by git's
prune), fsynced as `core.fsync=committed` has git do, then renamed to its name, so a
reader finds the whole object or none. The OS calls that
write go through the names below (os_write, ...), a seam of their own for fault tests
(durable.py's is the memory files' and the journal's).

Trees are read once: a tree's parsed entries are kept by id (an id never changes what it
names), and the trees a commit makes are kept as they are written, so the next write and
every "is this what HEAD holds" question walk dicts instead of git's objects.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from vault_tool.storage import durable
from vault_tool.storage.processes import alive
from vault_tool.storage.trees import TREE_MODE, Entries, parse_tree

# The seam (see the module docstring). Product code never reassigns them.
os_open = os.open
os_write = os.write
os_fsync = os.fsync
os_replace = os.replace
os_unlink = os.unlink

# git's default for loose objects (core.looseCompression): fastest; any level reads the same.
LOOSE_COMPRESSION = 1
# Parsed tree entries kept, counted over all trees (a few MB): a write walks a handful of
# trees, but a vault's root may hold thousands of notes. The newest tree is always kept.
ENTRIES_KEPT = 60_000
COMMITS_KEPT = 256


def object_id(kind: bytes, body: bytes) -> bytes:
    """The binary id git gives an object of this kind and body."""
    return hashlib.sha1(b"%s %d\0" % (kind, len(body)) + body, usedforsecurity=False).digest()


class LooseObjects:
    """Writes objects into a repository's object folder the way git does.

    stage() writes an object under its temp name and gives its id; flush() syncs every
    staged object at once (durable.fsync_all) and only then links each to its name, so
    the objects of a commit cost one wait for the disk, not one each.
    """

    def __init__(self, git_dir: Path) -> None:
        self.folder = git_dir / "objects"
        self._staged: dict[bytes, tuple[int, Path, Path]] = {}  # id -> (fd, temp, final)
        self._swept = False

    def write(self, kind: bytes, body: bytes) -> bytes:
        """Store one object now; its binary id."""
        binsha = self.stage(kind, body)
        self.flush()
        return binsha

    def stage(self, kind: bytes, body: bytes) -> bytes:
        """Write an object under a temp name (unless git has it loose already); its id."""
        header = b"%s %d\0" % (kind, len(body))
        binsha = hashlib.sha1(header + body, usedforsecurity=False).digest()
        name = binsha.hex()
        final = self.folder / name[:2] / name[2:]
        if binsha in self._staged or _freshened(final):
            return binsha
        if not self._swept:
            self._sweep()
        tmp = self.folder / f"tmp_obj_{os.getpid()}_{secrets.token_hex(6)}"
        compressor = zlib.compressobj(LOOSE_COMPRESSION)
        data = compressor.compress(header) + compressor.compress(body) + compressor.flush()
        fd = os_open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
        self._staged[binsha] = (fd, tmp, final)
        view = memoryview(data)
        while view:  # (a write may write less than asked; none at all is a full disk)
            written = os_write(fd, view)
            if written <= 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp))
            view = view[written:]
        return binsha

    def flush(self) -> None:
        """Put every staged object in place, synced; on a failure none is left staged."""
        staged, self._staged = list(self._staged.values()), {}
        try:
            try:
                durable.fsync_all([fd for fd, _, _ in staged], fsync=lambda fd: os_fsync(fd))
            finally:
                for fd, _, _ in staged:
                    os.close(fd)
            for _, tmp, final in staged:
                _put_in_place(tmp, final)
        except BaseException:
            for _, tmp, _ in staged:
                with contextlib.suppress(FileNotFoundError):
                    os_unlink(tmp)
            raise

    def _sweep(self) -> None:
        """Remove the temp objects of writers that died before they put them in place."""
        self._swept = True
        for leftover in self.folder.glob("tmp_obj_*_*"):
            pid = leftover.name.split("_")[2]
            if pid.isdigit() and not alive(int(pid)):
                with contextlib.suppress(OSError):
                    os.unlink(leftover)

    def discard(self) -> None:
        """Drop what is staged (a commit that stopped before HEAD moved)."""
        staged, self._staged = list(self._staged.values()), {}
        for fd, tmp, _ in staged:
            os.close(fd)
            with contextlib.suppress(FileNotFoundError):
                os_unlink(tmp)


def _put_in_place(tmp: Path, final: Path) -> None:
    """Rename a temp object to its name, its folder made if missing: renamed, not linked as
    git does (the same bytes are under that name if another writer got there first, and
    one call fewer than link + unlink).

    The folder is made here, at the rename, and again if it is gone then: a `git gc`
    running beside the write (`git gc --auto` after a person's commit, in the background)
    packs the loose objects and removes the folders it empties, as git's own writers
    expect (they make the folder again and retry)."""
    try:
        os_replace(tmp, final)
    except FileNotFoundError:
        final.parent.mkdir(exist_ok=True)
        os_replace(tmp, final)


def _freshened(path: Path) -> bool:
    """Whether the object is there already; its time is renewed, as git does, so a gc that
    prunes old unreachable objects does not take it while the new commit is made."""
    try:
        os.utime(path)
    except OSError:
        return False
    return True


class TreeCache:
    """Parsed trees by id, read through git's object reader when not kept yet."""

    def __init__(self, read_object: Callable[[bytes], bytes], kept: int = ENTRIES_KEPT) -> None:
        self._read_object = read_object
        self._kept = kept
        self._weight = 0  # entries kept, over all trees
        self._trees: OrderedDict[bytes, Entries] = OrderedDict()
        self._commit_trees: OrderedDict[str, bytes] = OrderedDict()
        self._mutex = threading.Lock()

    def entries(self, binsha: bytes) -> Entries:
        """A tree's entries (shared: callers copy before changing them)."""
        with self._mutex:
            found = self._trees.get(binsha)
            if found is not None:
                self._trees.move_to_end(binsha)
                return found
        entries = parse_tree(self._read_object(binsha))
        self.keep(binsha, entries)
        return entries

    def keep(self, binsha: bytes, entries: Entries) -> None:
        """Remember a tree (one just written: the next write starts from it)."""
        with self._mutex:
            if binsha not in self._trees:
                self._weight += len(entries) + 1
            self._trees[binsha] = entries
            self._trees.move_to_end(binsha)
            while self._weight > self._kept and len(self._trees) > 1:
                self._weight -= len(self._trees.popitem(last=False)[1]) + 1

    def root_of(self, commit: str) -> bytes:
        """The binary id of a commit's root tree (read from the commit object's first line)."""
        with self._mutex:
            found = self._commit_trees.get(commit)
        if found is not None:
            return found
        raw = self._read_object(bytes.fromhex(commit))
        if not raw.startswith(b"tree "):
            raise ValueError(f"{commit} is not a commit")
        root = bytes.fromhex(raw[5:45].decode())
        self.keep_commit(commit, root)
        return root

    def keep_commit(self, commit: str, root: bytes) -> None:
        with self._mutex:
            self._commit_trees[commit] = root
            while len(self._commit_trees) > COMMITS_KEPT:
                self._commit_trees.popitem(last=False)

    def blob_at(self, root: bytes, relpath: str) -> str | None:
        """The hex id of what relpath names under this root tree; None if nothing."""
        found = self.entry_at(root, relpath)
        return found[1].hex() if found is not None else None

    def entry_at(self, root: bytes | None, relpath: str) -> tuple[bytes, bytes] | None:
        """(mode, binary id) of what relpath names under this root tree; None if nothing."""
        tree = root
        parts = relpath.encode().split(b"/")
        for name in parts[:-1]:
            found = self.entries(tree).get(name) if tree is not None else None
            if found is None or found[0] != TREE_MODE:
                return None
            tree = found[1]
        return self.entries(tree).get(parts[-1]) if tree is not None else None
