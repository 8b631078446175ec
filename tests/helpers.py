"""Helpers shared by tests: running git, capturing a vault's visible state, valid calls."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def git(path: Path, *args: str) -> str:
    """Run git in a vault and return its stdout."""
    return subprocess.run(
        ["git", *args], cwd=path, check=True, capture_output=True, text=True, env=os.environ.copy()
    ).stdout.strip()


def snapshot(path: Path) -> tuple[str, str, dict[str, bytes]]:
    """HEAD, `git status` and every file outside .git and .vault: the visible state."""
    files = {
        p.relative_to(path).as_posix(): p.read_bytes()
        for p in sorted(path.rglob("*"))
        if p.is_file() and not p.relative_to(path).as_posix().startswith((".git/", ".vault/"))
    }
    return git(path, "rev-parse", "HEAD"), git(path, "status", "--porcelain"), files


def delta(title: str = "Ana owns the billing service", **extra: object) -> dict:
    """A valid semantic delta."""
    base = {
        "memory_type": "decision",
        "title": title,
        "entities": [
            {"n": "Ana", "kind": "person", "is": "backend engineer on the platform team"},
            {"n": "billing service", "kind": "service", "is": "the service that issues invoices"},
        ],
        "facts": [{"subject": "Ana", "predicate": "owns", "object": "billing service"}],
        "tags": ["billing"],
    }
    base.update(extra)
    return base


def create_args(
    title: str = "Ana owns the billing service", body: str = "She took it over.", **extra: object
) -> dict:
    """A valid remember create call."""
    return {
        "mode": "create",
        "content_md": f"# {title}\n\n{body}\n",
        "semantic_delta": delta(title, **extra),
    }
