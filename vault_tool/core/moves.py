"""Which gone file a new one carries on: a memory moved or renamed, found by id or content.

Both the commit of hand edits (engine/hand_edits.py) and doctor's report of what waits to be
committed (checks/verify.py) pair files here, so the two never disagree about a move. A
move is found by the memory's id (front matter `id`) or, for files without one (whose id is
their path), by content: a file gone from HEAD and a new file with the same or nearly the
same bytes, as git's rename detection finds them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Protocol

from vault_tool.core.changelog import Entry
from vault_tool.core.memory import Memory

# A new file is the moved old one when this share of its bytes is the old one's: the
# threshold `history` follows renames with (`git log --follow -M90%`).
SIMILAR = 0.9
# Past this many (gone file, new file) pairs, only identical bytes or ids pair: comparing
# every pair of a folder of thousands moved in at once would stall the watcher.
MAX_COMPARED_PAIRS = 10_000
# And past this many span lookups (about 0.1 s), the comparing stops: big files cost more.
MAX_SPAN_LOOKUPS = 1_000_000


class End(Protocol):
    """One end of a possible move: a file gone from disk (memory None, was set) or a file
    HEAD does not have (new, memory set)."""

    @property
    def memory_id(self) -> str: ...
    @property
    def memory(self) -> Memory | None: ...
    @property
    def data(self) -> bytes | None: ...
    @property
    def was(self) -> Entry | None: ...
    @property
    def was_data(self) -> bytes | None: ...
    @property
    def was_id_declared(self) -> bool: ...
    @property
    def new(self) -> bool: ...


def find_moves(changed: Mapping[str, End]) -> dict[str, str]:
    """old path -> new path, for each gone file whose memory a new file carries on.

    Paired first by id (both files' front matter `id`), then, where either file has none,
    by content: identical bytes, else the most similar pair above SIMILAR.
    """
    gone = {p: c for p, c in changed.items() if c.memory is None and c.was is not None}
    new = {p: c for p, c in changed.items() if c.new and c.memory is not None}
    moves: dict[str, str] = {}
    by_id = {c.memory.id: p for p, c in new.items() if c.memory and c.memory.id}
    for old, checked in gone.items():
        if checked.was_id_declared and checked.memory_id in by_id:
            moves[old] = by_id.pop(checked.memory_id)
    left_new = {p: c for p, c in new.items() if p not in moves.values()}
    left_gone = {p: c for p, c in gone.items() if p not in moves}
    by_bytes: dict[bytes, str] = {}
    for path, checked in left_new.items():
        by_bytes.setdefault(checked.data or b"", path)
    for old, checked in list(left_gone.items()):
        match = by_bytes.get(checked.was_data or b"")
        if match and match in left_new and _pairable(checked, left_new[match]):
            moves[old] = match
            del left_new[match], left_gone[old]
    if len(left_gone) * len(left_new) > MAX_COMPARED_PAIRS:
        return moves
    spans: dict[str, Counter[bytes]] = {}  # each file's spans, counted once
    lookups = 0

    def score(old: str, path: str) -> float:
        nonlocal lookups
        a, b = left_gone[old].was_data or b"", left_new[path].data or b""
        if not _sizes_allow(a, b) or lookups > MAX_SPAN_LOOKUPS:
            return 0.0
        for name, data in ((old, a), (path, b)):
            if name not in spans:
                spans[name] = _spans(data)
        lookups += min(len(spans[old]), len(spans[path]))
        return _shared(spans[old], spans[path], max(len(a), len(b)))

    scored = sorted(
        (
            (score(old, path), old, path)
            for old, g in left_gone.items()
            for path, n in left_new.items()
            if _pairable(g, n) and _same_note(old, g, path, n)
        ),
        reverse=True,
    )
    for score, old, path in scored:
        if score < SIMILAR:
            break
        if old in left_gone and path in left_new:
            moves[old] = path
            del left_gone[old], left_new[path]
    return moves


def _same_note(old: str, gone: End, path: str, new: End) -> bool:
    """Whether two alike (not identical) files may be one note moved: the same file name or
    the same title. Notes made from one template are alike too, but each has its own name."""
    if PurePosixPath(old).name == PurePosixPath(path).name:
        return True
    return gone.was is not None and new.memory is not None and gone.was.title == new.memory.title


def _pairable(gone: End, new: End) -> bool:
    """Two files that both declare an id are two memories, however alike."""
    return not (gone.was_id_declared and new.memory is not None and new.memory.id)


def similarity(a: bytes, b: bytes) -> float:
    """The share of the larger file's bytes found in the other, counted as git's rename
    detection counts them: in spans that end at a newline or after 64 bytes."""
    if not _sizes_allow(a, b):
        return 0.0
    return _shared(_spans(a), _spans(b), max(len(a), len(b)))


def _sizes_allow(a: bytes, b: bytes) -> bool:
    """Whether the sizes alone leave room for SIMILAR (spares counting spans)."""
    return min(len(a), len(b)) >= max(len(a), len(b)) * SIMILAR


def _shared(spans_a: Counter[bytes], spans_b: Counter[bytes], larger: int) -> float:
    if larger == 0:
        return 1.0
    if len(spans_b) < len(spans_a):
        spans_a, spans_b = spans_b, spans_a
    copied = sum(len(span) * min(n, spans_b[span]) for span, n in spans_a.items())
    return copied / larger


def _spans(data: bytes) -> Counter[bytes]:
    spans: Counter[bytes] = Counter()
    for line in data.splitlines(keepends=True):
        for start in range(0, len(line), 64):
            spans[line[start : start + 64]] += 1
    return spans
