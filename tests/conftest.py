"""Shared fixtures: every test runs with its own HOME, no global git config, and a fresh vault."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from vault_tool.engine import Vault
from vault_tool.store import Store


@pytest.fixture(autouse=True)
def isolated_environment(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Point HOME, git's global config and the default vault at temp places."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("VAULT_TOOL_VAULT", raising=False)
    for name in (
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def vault_path(tmp_path: Path) -> Path:
    """A freshly initialised, empty vault."""
    path = tmp_path / "vault"
    Store.init(path).close()
    return path


@pytest.fixture
def vault(vault_path: Path):
    """The engine over a fresh vault, closed after the test."""
    opened = Vault.open(vault_path, client="pytest")
    yield opened
    opened.close()


def git(path: Path, *args: str) -> str:
    """Run git in a vault and return its stdout."""
    return subprocess.run(
        ["git", *args], cwd=path, check=True, capture_output=True, text=True, env=os.environ.copy()
    ).stdout.strip()


def snapshot(path: Path) -> tuple[str, str, dict[str, bytes]]:
    """HEAD, `git status`, and every file's bytes outside .git and .vault: the whole visible state."""
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
