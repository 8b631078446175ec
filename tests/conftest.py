"""Shared fixtures: every test runs with its own HOME, no global git config, and a fresh vault."""

from __future__ import annotations

from pathlib import Path

import pytest

from vault_tool.engine.vault import Vault
from vault_tool.storage.store import Store


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
