"""Shared fixtures: every test runs with its own HOME, no global git config, and a fresh vault."""

from __future__ import annotations

from pathlib import Path

import pytest

from vault_tool.engine.vault import Vault
from vault_tool.storage.store import Store

# Folders whose tests start servers, kill processes or run for seconds: marked `slow`, so
# `pytest -m "not slow"` is a quick inner loop. A plain `pytest` runs them all.
SLOW_TIERS = ("e2e", "reliability", "bench")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test under a slow tier's folder `slow`."""
    here = Path(__file__).parent
    for item in items:
        parts = item.path.relative_to(here).parts if item.path.is_relative_to(here) else ()
        if parts and parts[0] in SLOW_TIERS:
            item.add_marker(pytest.mark.slow)


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
