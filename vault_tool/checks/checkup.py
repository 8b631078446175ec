"""A vault opened only to look at it, and the shape of what doctor reports about it.

Checkup opens the repository without repairing interrupted writes and the index without
creating or catching it up, so verify and doctor report what they find instead of quietly
fixing it; `reindex`, `commit` or any command that writes does the fixing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vault_tool.errors import VaultError, VaultUnavailable
from vault_tool.search.index import Index, index_state
from vault_tool.storage import config as config_module
from vault_tool.storage import problems as recorded
from vault_tool.storage.git import Git, open_repo
from vault_tool.storage.store import Store


@dataclass
class Check:
    """One thing doctor looked at: ok, warn (worth knowing) or fail (unhealthy)."""

    name: str
    status: str
    summary: str
    details: list[dict[str, Any]] = field(default_factory=list)
    fix: str = ""


class Checkup:
    """A vault opened only to look at it: no repair, no catch-up, no index created."""

    def __init__(self, root: Path) -> None:
        self.root = config_module.find_vault(root)
        self.config_problem: VaultError | None = None
        try:
            settings = config_module.read_config(self.root)
        except VaultUnavailable as problem:  # doctor reports it; the defaults stand in
            self.config_problem = problem
            settings = config_module.Config()
        repo = Git(self.root, open_repo(self.root), settings.lock_timeout_seconds)
        self.store = Store(self.root, repo, settings)
        self.run_dir = self.store.run_dir
        self.index_state, self.index_version = index_state(self.root)
        try:
            self.index: Index | None = Index(self.root).open() if self.index_state == "ok" else None
        except BaseException:
            self.store.close()
            raise

    def close(self) -> None:
        """Release the index and git's helper processes."""
        if self.index is not None:
            self.index.close()
        self.store.close()

    def __enter__(self) -> Checkup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def recorded_problems(self) -> dict[str, dict[str, Any]]:
        """What the watcher or catch-up recorded about files it could not take in:
        path -> {line, reason, hint}, the hint being the fix the error itself gave."""
        return recorded.load(self.run_dir)

    def journal(self) -> list[Path]:
        """The journal entries of writes not finished (in progress, or crashed)."""
        return sorted((self.run_dir / "journal").glob("*.json"))


def issue_rows(issues: list[Any]) -> list[dict[str, Any]]:
    """verify's issues as rows of a check's details: path, line, reason, fix."""
    return [{"path": i.path, "line": i.line, "reason": i.detail, "fix": i.fix} for i in issues]


def count(n: int, noun: str) -> str:
    """'1 file', '2 files'."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
