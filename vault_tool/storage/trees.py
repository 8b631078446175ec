"""New git trees for a commit of a few paths, built from the parent's trees (pure logic).

`git commit -- <paths>` reads and rewrites the whole index (twice: a temporary one for
--only, then the real one), which in a vault of thousands of files costs more than
everything else a write does. Only the trees along the changed folders are new in such a
commit, so they are built here from the parent's trees; commits.py stores them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

TREE_MODE = b"40000"
FILE_MODE = b"100644"
SUBMODULE_MODE = b"160000"

# name -> (mode, binary sha)
Entries = dict[bytes, tuple[bytes, bytes]]


class NotATree(Exception):
    """A changed path runs through something in the parent that is not a folder."""


def parse_tree(raw: bytes) -> Entries:
    """The entries of a raw git tree object: `<mode> <name>\\0<20-byte sha>` repeated."""
    entries: Entries = {}
    at = 0
    while at < len(raw):
        space = raw.index(b" ", at)
        nul = raw.index(b"\0", space)
        entries[raw[space + 1 : nul]] = (raw[at:space], raw[nul + 1 : nul + 21])
        at = nul + 21
    return entries


def serialize_tree(entries: Entries) -> bytes:
    """A tree object's body in git's canonical order (a folder sorts as if named `name/`)."""

    def order(name: bytes) -> bytes:
        return name + b"/" if entries[name][0] == TREE_MODE else name

    return b"".join(
        entries[name][0] + b" " + name + b"\0" + entries[name][1]
        for name in sorted(entries, key=order)
    )


def tree_sha(entries: Entries) -> bytes:
    """The binary id git gives a tree of these entries."""
    body = serialize_tree(entries)
    return hashlib.sha1(b"tree %d\0" % len(body) + body, usedforsecurity=False).digest()


@dataclass(frozen=True)
class NewTree:
    """A tree a commit makes: its id, its body as git stores it, and its entries."""

    binsha: bytes
    body: bytes
    entries: Entries


def mktree_input(trees: list[Entries]) -> bytes:
    """What `git mktree -z --batch` reads to write these trees, in this order."""
    kinds = {TREE_MODE: b"tree", SUBMODULE_MODE: b"commit"}
    return b"\0".join(
        b"".join(
            mode
            + b" "
            + kinds.get(mode, b"blob")
            + b" "
            + sha.hex().encode()
            + b"\t"
            + name
            + b"\0"
            for name, (mode, sha) in entries.items()
        )
        for entries in trees
    )


def edit_tree(
    read_tree: Callable[[bytes], bytes], root: bytes | None, changes: dict[str, str | None]
) -> tuple[bytes | None, list[NewTree]]:
    """The new root tree after changes (path -> hex blob sha, None to remove).

    read_tree gives the raw body of a tree by binary sha. Returns the new root's binary sha
    (None when nothing is left) and every new tree, children before parents. Folders left
    empty disappear, as they do in git.
    """
    return edit_entries(lambda sha: parse_tree(read_tree(sha)), root, changes)


def edit_entries(
    read_entries: Callable[[bytes], Entries], root: bytes | None, changes: dict[str, str | None]
) -> tuple[bytes | None, list[NewTree]]:
    """edit_tree, given a tree's parsed entries by binary sha (never changed here)."""
    trees: list[NewTree] = []
    split = {tuple(path.encode().split(b"/")): blob for path, blob in changes.items()}
    return _edit(read_entries, root, split, trees), trees


def _edit(
    read_entries: Callable[[bytes], Entries],
    tree: bytes | None,
    changes: dict[tuple[bytes, ...], str | None],
    trees: list[NewTree],
) -> bytes | None:
    entries = dict(read_entries(tree)) if tree is not None else {}
    below: dict[bytes, dict[tuple[bytes, ...], str | None]] = {}
    for parts, blob in changes.items():
        if len(parts) > 1:
            below.setdefault(parts[0], {})[parts[1:]] = blob
        elif blob is None:
            entries.pop(parts[0], None)
        else:
            if entries.get(parts[0], (FILE_MODE,))[0] == TREE_MODE:
                raise NotATree(parts[0].decode(errors="replace"))
            entries[parts[0]] = (FILE_MODE, bytes.fromhex(blob))
    for name, inner in below.items():
        mode, sha = entries.get(name, (TREE_MODE, None))
        if mode != TREE_MODE:
            raise NotATree(name.decode(errors="replace"))
        new = _edit(read_entries, sha, inner, trees)
        if new is None:
            entries.pop(name, None)
        else:
            entries[name] = (TREE_MODE, new)
    if not entries:
        return None
    body = serialize_tree(entries)
    binsha = hashlib.sha1(b"tree %d\0" % len(body) + body, usedforsecurity=False).digest()
    trees.append(NewTree(binsha, body, entries))
    return binsha
