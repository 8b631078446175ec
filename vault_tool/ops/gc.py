"""Collecting garbage: compact the retrieval ledger, merge the index, pack git's objects.

`vault-tool gc` runs these in turn and reports the sizes before and after. Nothing it does
changes a memory or its history:
- ledger: each `.vault/ledger/*.jsonl` file is rewritten without torn lines (a crash
  mid-append), salvaging a whole record glued to a torn one; with `older_than_days`, search
  records older than that are dropped unless a feedback record refers to them (feedback
  is what the ledger is kept for). Feedback records are always kept. A file of a past
  month is replaced atomically; the current month's file, which searches append to, is
  rewritten in place under the same file lock the appenders take, so no append is lost.
- index: every segment merged into one (under the vault's write lock, so writers wait);
  an index that is one segment already is not rewritten.
- git: `git gc --quiet`, then `git commit-graph write --reachable --changed-paths`, which
  keeps `git log -- PATH` (history, versions) fast on large vaults. Git takes its own
  locks; agents may keep writing meanwhile.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from vault_tool.engine import ledger
from vault_tool.engine.vault import Vault

Progress = Callable[[int, int], None]
# Every ledger record is a JSON object whose first key is "type" (ledger.py writes them so).
_RECORD_START = '{"type":'


@dataclass
class LedgerCompaction:
    """What compacting the ledger kept, dropped and salvaged."""

    files: int = 0
    rewritten: int = 0
    kept: int = 0
    torn_dropped: int = 0
    salvaged: int = 0
    old_searches_dropped: int = 0


@dataclass
class GcReport:
    """Sizes before and after, and what each step did."""

    before: dict[str, int] = field(default_factory=dict)
    after: dict[str, int] = field(default_factory=dict)
    ledger: LedgerCompaction = field(default_factory=LedgerCompaction)

    def to_dict(self) -> dict[str, Any]:
        """The report as --json prints it."""
        return {"before": self.before, "after": self.after, "ledger": asdict(self.ledger)}


def collect(
    vault: Vault, *, older_than_days: float | None = None, progress: Progress | None = None
) -> GcReport:
    """Compact the ledger, merge the index into one segment, pack and graph git's objects."""
    report = GcReport(before=sizes(vault))
    steps = 3
    if progress:
        progress(0, steps)
    report.ledger = compact_ledger(vault.places.ledger, older_than_days=older_than_days)
    if progress:
        progress(1, steps)
    # Rewrites the whole index (~1.5 s per 1000 memories): skipped when it is one segment.
    vault.upkeep.optimize()
    if progress:
        progress(2, steps)
    vault.upkeep.pack_history()
    if progress:
        progress(3, steps)
    report.after = sizes(vault)
    return report


def sizes(vault: Vault) -> dict[str, int]:
    """Bytes of .git, the index and the ledger; index segments; git's loose objects and packs."""
    counts = vault.upkeep.storage_counts()
    places = vault.places
    return {
        "git_bytes": _folder_bytes(places.root / ".git"),
        "index_bytes": _folder_bytes(places.index),
        "ledger_bytes": _folder_bytes(places.ledger),
        "index_segments": counts["index_segments"],
        "git_loose_objects": counts.get("count", 0),
        "git_packs": counts.get("packs", 0),
    }


def _folder_bytes(folder: Path) -> int:
    total = 0
    for path, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(path, name)).st_size
            except OSError:
                continue  # removed while we counted (git gc, an index commit)
    return total


# --- the ledger ----------------------------------------------------------------------------


def compact_ledger(folder: Path, *, older_than_days: float | None = None) -> LedgerCompaction:
    """Rewrite the ledger's files without torn lines (and old unjudged searches)."""
    result = LedgerCompaction()
    files = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
    result.files = len(files)
    judged: set[str] = set()
    cutoff = None
    if older_than_days is not None:
        cutoff = datetime.now(UTC) - timedelta(days=older_than_days)
        for path in files:
            for record, _, _ in _read_records(path.read_bytes()):
                if record.get("type") == "feedback":
                    judged.add(str(record.get("search_id")))
    current = f"{datetime.now(UTC):%Y-%m}.jsonl"
    for path in files:
        _compact_file(path, path.name == current, cutoff, judged, result)
    return result


def _compact_file(
    path: Path,
    in_place: bool,
    cutoff: datetime | None,
    judged: set[str],
    result: LedgerCompaction,
) -> None:
    fd = os.open(path, os.O_RDWR)
    try:
        # The lock appenders take: while we hold it, nothing is appended to this file.
        fcntl.flock(fd, fcntl.LOCK_EX)
        data = _read_all(fd)
        kept: list[bytes] = []
        changed = False
        for record, status, raw in _read_records(data):
            if status == "torn":
                result.torn_dropped += 1
                changed = True
                continue
            if status == "salvaged":
                result.salvaged += 1
                changed = True
            if cutoff is not None and _is_old_unjudged(record, cutoff, judged):
                result.old_searches_dropped += 1
                changed = True
                continue
            kept.append(raw.encode() + b"\n")
        result.kept += len(kept)
        if not changed:
            return
        result.rewritten += 1
        ledger.rewrite(fd, path, b"".join(kept), in_place=in_place)
    finally:
        os.close(fd)


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _read_records(data: bytes) -> list[tuple[dict[str, Any], str, str]]:
    """(record, "ok" | "salvaged", its text) per whole record; ({}, "torn", "") per bad line.

    A crash mid-append leaves a line without its end; the next append then continues that
    line, so a whole record may follow the torn part on the same line: it is salvaged.
    """
    out: list[tuple[dict[str, Any], str, str]] = []
    for raw in data.decode("utf-8", "replace").splitlines():
        if not raw.strip():
            continue
        record = _loads(raw)
        if record is not None:
            out.append((record, "ok", raw))
            continue
        start = raw.rfind(_RECORD_START)
        tail = _loads(raw[start:]) if start > 0 else None
        out.append(({}, "torn", ""))
        if tail is not None:
            out.append((tail, "salvaged", raw[start:]))
    return out


def _loads(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _is_old_unjudged(record: dict[str, Any], cutoff: datetime, judged: set[str]) -> bool:
    if record.get("type") != "search" or str(record.get("id")) in judged:
        return False
    try:
        when = datetime.fromisoformat(str(record["time"]).replace("Z", "+00:00"))
    except (KeyError, ValueError):
        return False
    return when < cutoff
