"""git's index edited in-process, the way `git update-index` edits it after a commit.

Every commit the vault makes puts its paths into git's index, so `git status` stays clean.
`git update-index` is a process that reads, rewrites and hashes the whole index: 6-9 ms of
a write at 10,000 notes (a 1 MB index), 80-120 ms at 100,000. Here the index is parsed
once, kept while it holds exactly what this process wrote last, and each write puts or
removes its entries by bisection and writes the file again: the entries as git writes
them (index-format.txt in git's documentation), the cache tree invalidated along each path
as git's `cache_tree_invalidate_path` does, a SHA-1 trailer.

Only where the result is what git would write: index version 2 (git's default), no
extension but the cache tree (TREE) and the optional offset tables EOIE and IEOT (hints
for threaded reading, dropped as git drops them when not configured); not where a path is
a folder in the index or runs through a file in it, a file is not a regular,
non-executable one, or a file no longer holds the committed bytes. Anything else returns
None and the caller runs git's command, which knows every format and says what is wrong.
"""

from __future__ import annotations

import bisect
import hashlib
import os
import stat
import struct
from dataclasses import dataclass, field
from pathlib import Path

from vault_tool.storage.index_lock import LockedIndex

_HEADER = struct.Struct(">4sII")
_EXTENSION = struct.Struct(">4sI")
_STAT = struct.Struct(">10I")  # ctime s, ns; mtime s, ns; dev, ino, mode, uid, gid, size
_FIXED = 62  # the stat fields, the object id and the flags: what comes before a name
_NAME_MASK = 0xFFF
_NOT_PLAIN = 0xF000  # assume-valid, extended and the stage bits: never in a commit's entry
_SHA_LEN = 20
_REGULAR = 0o100644
_DROPPED = (b"EOIE", b"IEOT")
_WORD = 0xFFFFFFFF


@dataclass
class _Tree:
    """A node of the cache tree: a folder's entry count (-1: invalid) and its tree id."""

    name: bytes
    count: int
    sha: bytes | None
    children: list[_Tree] = field(default_factory=list)

    def invalidate(self, path: bytes) -> None:
        """git's do_invalidate_path: invalid down along path; a subtree named as the file
        itself (a folder the path replaces) is dropped."""
        self.count, self.sha = -1, None
        head, slash, rest = path.partition(b"/")
        if not slash:
            self.children = [child for child in self.children if child.name != head]
            return
        for child in self.children:
            if child.name == head:
                child.invalidate(rest)
                return

    def render(self, out: list[bytes]) -> None:
        out.append(b"%s\0%d %d\n" % (self.name, self.count, len(self.children)))
        if self.count >= 0 and self.sha is not None:
            out.append(self.sha)
        for child in self.children:
            child.render(out)


@dataclass
class _Index:
    """A version 2 index: names and entries (each entry's bytes, padding included) in git's
    order, and its cache tree."""

    names: list[bytes]
    entries: list[bytes]
    tree: _Tree | None


# path -> (binary blob id, the file's stat, or None where git records none); None: removed
Staged = dict[str, tuple[bytes, os.stat_result | None] | None]


class IndexEditor:
    """Edits git's index as `git update-index` would; keeps the last index it wrote."""

    def __init__(self) -> None:
        self._written: bytes | None = None
        self._parsed: _Index | None = None

    def stage(
        self, locked: LockedIndex, root: Path, changes: dict[str, str | None], from_disk: bool
    ) -> bool:
        """Put committed paths (path -> hex blob id; None: removed) into the locked index
        as `git update-index --add --remove` (from_disk) or `--index-info` would; False,
        with nothing changed, where git's command must do it."""
        staged = on_disk(root, changes) if from_disk else as_committed(changes)
        edited = self.edited(locked.read(), staged) if staged is not None else None
        if edited is None:
            return False
        locked.replace(edited)
        return True

    def edited(self, data: bytes, staged: Staged) -> bytes | None:
        """The index data with these entries put or removed; None where only git can."""
        parsed = self._parsed if data == self._written else _parse(data)
        if parsed is None:
            return None
        names, entries = list(parsed.names), list(parsed.entries)
        tree = _copy_tree(parsed.tree) if parsed.tree is not None else None
        for path, entry in staged.items():
            name = path.encode()
            at = bisect.bisect_left(names, name)
            present = at < len(names) and names[at] == name
            if entry is None:
                if present:
                    del names[at], entries[at]
            elif present:
                entries[at] = _entry(name, *entry)
            elif _in_the_way(names, name, at):
                return None
            else:
                names.insert(at, name)
                entries.insert(at, _entry(name, *entry))
            if tree is not None:
                tree.invalidate(name)
        out = _render(entries, tree)
        self._written, self._parsed = out, _Index(names, entries, tree)
        return out


def on_disk(root: Path, changes: dict[str, str | None]) -> Staged | None:
    """What `git update-index --add --remove` would stage for these committed paths (path
    -> hex blob id; None: removed), read from the folder; None if a file no longer holds
    what was committed, or is not a plain file (git's command sorts those out)."""
    staged: Staged = {}
    for path, blob in changes.items():
        target = root / path
        try:
            before = target.lstat()
        except FileNotFoundError:
            if blob is not None:
                return None  # (committed, then removed: git stages the removal)
            staged[path] = None
            continue
        if blob is None or not stat.S_ISREG(before.st_mode) or before.st_mode & 0o111:
            return None
        data = target.read_bytes()
        after = target.lstat()
        same = _stat_fields(before) == _stat_fields(after)
        if not same or _blob_id(data) != bytes.fromhex(blob):
            return None
        staged[path] = (bytes.fromhex(blob), after)
    return staged


def as_committed(changes: dict[str, str | None]) -> Staged:
    """What `git update-index --index-info` stages: the committed blobs, with no stat
    (git compares such an entry's file by content the next time it looks)."""
    return {
        path: (bytes.fromhex(blob), None) if blob is not None else None
        for path, blob in changes.items()
    }


def index_info(changes: dict[str, str | None]) -> bytes:
    """`git update-index -z --index-info` lines: each path at its blob, or removed (mode 0)."""
    return b"".join(
        (f"100644 {blob}" if blob else "0 " + "0" * 40).encode() + b"\t" + path.encode() + b"\0"
        for path, blob in changes.items()
    )


def _in_the_way(names: list[bytes], name: bytes, at: int) -> bool:
    """Whether a new name is a folder in the index, or runs through a file in it."""
    below = name + b"/"
    if at < len(names) and names[at].startswith(below):
        return True
    parts = name.split(b"/")
    for depth in range(1, len(parts)):
        folder = b"/".join(parts[:depth])
        found = bisect.bisect_left(names, folder)
        if found < len(names) and names[found] == folder:
            return True
    return False


def _blob_id(data: bytes) -> bytes:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).digest()


def _stat_fields(st: os.stat_result) -> tuple[int, ...]:
    """The stat data git records of a file (fill_stat_data), each cut to 32 bits."""
    return tuple(
        value & _WORD
        for value in (
            st.st_ctime_ns // 1_000_000_000,
            st.st_ctime_ns % 1_000_000_000,
            st.st_mtime_ns // 1_000_000_000,
            st.st_mtime_ns % 1_000_000_000,
            st.st_dev,
            st.st_ino,
            _REGULAR,
            st.st_uid,
            st.st_gid,
            st.st_size,
        )
    )


def _entry(name: bytes, blob: bytes, st: os.stat_result | None) -> bytes:
    fields = _stat_fields(st) if st is not None else (0, 0, 0, 0, 0, 0, _REGULAR, 0, 0, 0)
    flags = min(len(name), _NAME_MASK)
    body = _STAT.pack(*fields) + blob + flags.to_bytes(2, "big") + name
    return body + b"\0" * (((_FIXED + len(name) + 8) & ~7) - len(body))


def _render(entries: list[bytes], tree: _Tree | None) -> bytes:
    parts = [_HEADER.pack(b"DIRC", 2, len(entries)), *entries]
    if tree is not None:
        rendered: list[bytes] = []
        tree.render(rendered)
        body = b"".join(rendered)
        parts += [_EXTENSION.pack(b"TREE", len(body)), body]
    data = b"".join(parts)
    return data + hashlib.sha1(data, usedforsecurity=False).digest()


def _parse(data: bytes) -> _Index | None:
    """A version 2 index with only extensions edited or dropped here; None otherwise."""
    try:
        if hashlib.sha1(data[:-_SHA_LEN], usedforsecurity=False).digest() != data[-_SHA_LEN:]:
            return None
        signature, version, count = _HEADER.unpack_from(data, 0)
        if signature != b"DIRC" or version != 2:
            return None
        names, entries, offset = [], [], _HEADER.size
        for _ in range(count):
            flags = int.from_bytes(data[offset + _FIXED - 2 : offset + _FIXED], "big")
            if flags & _NOT_PLAIN:
                return None
            length = flags & _NAME_MASK
            if length == _NAME_MASK:  # a name that long is only ended by its NUL
                length = data.index(b"\0", offset + _FIXED) - offset - _FIXED
            size = (_FIXED + length + 8) & ~7
            names.append(data[offset + _FIXED : offset + _FIXED + length])
            entries.append(data[offset : offset + size])
            offset += size
        tree, end = None, len(data) - _SHA_LEN
        while offset < end:
            kind, size = _EXTENSION.unpack_from(data, offset)
            offset += _EXTENSION.size
            if kind == b"TREE":
                tree, used = _parse_tree(data[offset : offset + size], 0)
                if used != size:
                    return None
            elif kind not in _DROPPED:
                return None
            offset += size
        if offset != end or names != sorted(names):
            return None
        return _Index(names, entries, tree)
    except (struct.error, ValueError, IndexError):
        return None


def _parse_tree(body: bytes, start: int) -> tuple[_Tree, int]:
    """One cache tree node and its subtrees, from start; the node and the offset past them."""
    nul = body.index(b"\0", start)
    line_end = body.index(b"\n", nul)
    count, subtrees = (int(number) for number in body[nul + 1 : line_end].split(b" "))
    at, sha = line_end + 1, None
    if count >= 0:
        sha = body[at : at + _SHA_LEN]
        if len(sha) != _SHA_LEN:
            raise ValueError("a cache tree entry ends early")
        at += _SHA_LEN
    node = _Tree(body[start:nul], count, sha)
    for _ in range(subtrees):
        child, at = _parse_tree(body, at)
        node.children.append(child)
    return node, at


def _copy_tree(tree: _Tree) -> _Tree:
    return _Tree(tree.name, tree.count, tree.sha, [_copy_tree(child) for child in tree.children])
