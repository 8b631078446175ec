"""The record of files the vault could not take in: `.vault/run/problems.json`.

Intake writes it (a file that does not parse, is not UTF-8, holds a secret, or is not a
regular file); doctor and verify read it. path -> {line, reason, hint}, the hint being the
fix the error itself gave, a secret in a path redacted (core/redact.py's redact_name: a
name holding one is never taken in, nor written out whole). Machine-local, never
committed, mode 0600: the files are the truth.

A flag is the one entry about a file that IS indexed as it is: a memory a merge committed
with conflict markers in its body. It names the blob it is about, so it stops applying the
moment the file holds other bytes (an agent's update, a delete), whoever changed it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vault_tool.core import redact
from vault_tool.storage.durable import replace_text

FILE_NAME = "problems.json"
MERGED_REASON = "its body holds merge conflict markers from a merge"
MERGED_HINT = (
    "resolve the conflict: keep the right lines of each side and delete the marker lines "
    "(<<<<<<<, |||||||, =======, >>>>>>>); the watcher (or `vault-tool commit`) commits the "
    "fix, and the flag goes (an agent's update with a resolved content_md clears it too)"
)

# The fix for a secret git holds already (a person's commit, or history from before the
# folder became a vault): out of the file, out of use, out of the history.
PURGE_HINT = (
    "remove the secret from the file (the watcher or `vault-tool commit` commits that, and "
    "search serves the file again), rotate the secret, and purge it from git's history with "
    "`git filter-repo --replace-text` (docs/maintenance.md, A secret in git's history)"
)


def entry(line: int | None, reason: str, hint: str) -> dict[str, Any]:
    """One entry of the record."""
    return {"line": line, "reason": reason, "hint": hint}


def flag(line: int, blob: str) -> dict[str, Any]:
    """The entry of a memory indexed with these bytes (blob), whose body a merge committed
    with conflict markers (the first at line)."""
    return {**entry(line, MERGED_REASON, MERGED_HINT), "blob": blob}


def discard(run_dir: Path, paths: list[str]) -> None:
    """Drop the entries of these paths, if any (a write has replaced their files)."""
    problems = load(run_dir)
    if any(p in problems for p in paths):
        for path in paths:
            problems.pop(path, None)
        save(run_dir, problems)


def load(run_dir: Path) -> dict[str, dict[str, Any]]:
    """The recorded problems; none when the record is missing or unreadable (it is a cache)."""
    try:
        return json.loads((run_dir / FILE_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def save(run_dir: Path, problems: dict[str, dict[str, Any]]) -> None:
    """Replace the record atomically, so a reader never sees half of it; private to its owner
    (it names the person's files and what is wrong with them)."""
    # (Keyed by the redacted name already; again here for a record an older version wrote.)
    named = {redact.redact_name(path): entry for path, entry in problems.items()}
    text = json.dumps(named, indent=1, sort_keys=True)
    replace_text(run_dir / FILE_NAME, text, private=True)
