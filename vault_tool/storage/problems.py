"""The record of files the vault could not take in: `.vault/run/problems.json`.

Intake writes it (a file that does not parse, is not UTF-8, holds a secret, or is not a
regular file); doctor and verify read it. path -> {line, reason, hint}, the hint being the
fix the error itself gave. Machine-local, never committed: the files are the truth.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vault_tool.storage.durable import replace_text

FILE_NAME = "problems.json"


def entry(line: int | None, reason: str, hint: str) -> dict[str, Any]:
    """One entry of the record."""
    return {"line": line, "reason": reason, "hint": hint}


def load(run_dir: Path) -> dict[str, dict[str, Any]]:
    """The recorded problems; none when the record is missing or unreadable (it is a cache)."""
    try:
        return json.loads((run_dir / FILE_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def save(run_dir: Path, problems: dict[str, dict[str, Any]]) -> None:
    """Replace the record atomically, so a reader never sees half of it."""
    run_dir.mkdir(parents=True, exist_ok=True)  # (removed by `git clean -xfd`, say)
    replace_text(run_dir / FILE_NAME, json.dumps(problems, indent=1, sort_keys=True))
