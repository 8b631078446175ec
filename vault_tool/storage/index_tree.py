"""What git's index file says of itself: the tree it holds whole, and whether it holds
conflicts. Read from the file's bytes, without a git process.

git writes the index of a checkout, a reset, a fast-forward or a merge before it moves HEAD
(or writes MERGE_HEAD), and lets the index's lock go in between. A commit made in that
instant would be made on the old HEAD and staged into the new index: the next `git status`
shows its file as deleted and untracked, or `git merge --abort` refuses ("not uptodate")
for good. Such an index either holds conflicts (entries at a stage other than 0) or names
the tree it holds in full (git primes its cache-tree after unpacking a tree; once anything
is staged by path the root entry is invalidated), so "the index holds tree T, and T is not
HEAD's" is a sure sign that git is between those two steps, or that a person reset HEAD
alone (`git reset --soft`).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

_HEADER = struct.Struct(">4sII")
_EXTENSION = struct.Struct(">4sI")
_ENTRY_FIXED = 62  # ctime .. sha1 .. flags: what comes before an entry's name
_EXTENDED = 0x4000
_NAME_MASK = 0xFFF
_STAGE = 0x3000  # an entry's merge stage: 0 unless a conflict is not resolved yet
_SHA_LEN = 20


@dataclass(frozen=True)
class IndexSummary:
    """The tree an index holds whole (None: it names none), and whether it has conflicts."""

    tree: bytes | None
    unmerged: bool


UNREADABLE = IndexSummary(None, False)


def summary(data: bytes) -> IndexSummary:
    """What an index file's bytes say: its cache-tree's root, if valid for the whole index
    (None if something was staged since, an old git wrote it, or the file is damaged), and
    whether any entry is at a conflict stage."""
    try:
        signature, version, count = _HEADER.unpack_from(data, 0)
        if signature != b"DIRC" or version not in (2, 3, 4):
            return UNREADABLE
        offset, unmerged = _skip_entries(data, version, count)
        end = len(data) - _SHA_LEN
        while offset + 8 <= end:
            name, size = _EXTENSION.unpack_from(data, offset)
            offset += 8
            if name == b"TREE":
                return IndexSummary(_root(data[offset : offset + size]), unmerged)
            offset += size
        return IndexSummary(None, unmerged)
    except (struct.error, ValueError, IndexError):
        return UNREADABLE


def whole_tree(data: bytes) -> bytes | None:
    """The id of the tree the index holds whole (summary's tree)."""
    return summary(data).tree


def _skip_entries(data: bytes, version: int, count: int) -> tuple[int, bool]:
    """The offset just past the index's entries (index-format.txt in git's documentation),
    and whether any is at a conflict stage."""
    offset, unmerged = _HEADER.size, False
    flags_at = _ENTRY_FIXED - 2
    for _ in range(count):
        flags = int.from_bytes(data[offset + flags_at : offset + _ENTRY_FIXED], "big")
        unmerged = unmerged or bool(flags & _STAGE)
        fixed = _ENTRY_FIXED + (2 if flags & _EXTENDED else 0)
        if version == 4:  # a varint (how much of the last name to drop), then a NUL-ended rest
            at = offset + fixed
            while data[at] & 0x80:
                at += 1
            offset = data.index(b"\0", at + 1) + 1
            continue
        length = flags & _NAME_MASK
        if length == _NAME_MASK:  # a name that long is only ended by its NUL
            length = data.index(b"\0", offset + fixed) - offset - fixed
        offset += (fixed + length + 8) & ~7  # 1 to 8 NULs pad the entry to 8 bytes
    return offset, unmerged


def _root(extension: bytes) -> bytes | None:
    """The root entry of a TREE extension: "" NUL count SP subtrees LF sha (count -1: invalid)."""
    if not extension.startswith(b"\0"):
        return None
    line_end = extension.index(b"\n")
    count = int(extension[1:line_end].split(b" ")[0])
    if count < 0:
        return None
    sha = extension[line_end + 1 : line_end + 1 + _SHA_LEN]
    return sha if len(sha) == _SHA_LEN else None
