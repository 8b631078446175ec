"""The installed `vault-tool` and `python -m vault_tool`, run as subprocesses as people run them.

The commands' behaviour is tested in-process (tests/integration/test_cli_*.py); these few
tests check that the real entry points start, exit with the real codes and print the same.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_support import UNKNOWN_ID
from vault_tool import __version__
from vault_tool.cli.app import cli

ENTRY_POINT = Path(sys.executable).with_name("vault-tool")


def run(*args: str | Path, module: bool = False) -> subprocess.CompletedProcess[str]:
    """The installed entry point (or `python -m vault_tool`) with the test's environment."""
    program = [sys.executable, "-m", "vault_tool"] if module else [str(ENTRY_POINT)]
    return subprocess.run(
        [*program, *(str(a) for a in args)],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=120,
    )


def test_the_entry_point_is_installed_next_to_the_interpreter():
    assert ENTRY_POINT.is_file(), "install the package (pip install -e .) to get vault-tool"


@pytest.mark.parametrize("module", [False, True], ids=["vault-tool", "python -m vault_tool"])
def test_help_lists_every_command_and_the_exit_codes(module: bool):
    done = run("--help", module=module)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Usage: vault-tool [OPTIONS] COMMAND [ARGS]...")
    for name, command in cli.commands.items():
        assert (name in done.stdout) is not command.hidden, name  # (git's own: textconv)
    assert "Exit codes: 0 success" in done.stdout


def test_version_prints_the_package_version():
    done = run("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"vault-tool, version {__version__}\n"


def test_a_sample_vault_is_searchable_as_json(tmp_path: Path):
    root = tmp_path / "vault"
    made = run("init", "--sample", root, "--json")
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["memories"] == 28
    found = run("search", "billing", "--vault", root, "--json")
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["selected_hits"]
    assert hits and all(hit["memory_id"] and hit["path"] for hit in hits)
    assert any("billing" in hit["content_md"].lower() for hit in hits)


@pytest.mark.parametrize("module", [False, True], ids=["vault-tool", "python -m vault_tool"])
def test_an_error_exits_with_its_code_in_text_and_in_json(tmp_path: Path, module: bool):
    root = tmp_path / "vault"
    assert run("init", root, module=module).returncode == 0
    text = run("show", UNKNOWN_ID, "--vault", root, module=module)
    assert text.returncode == 4
    assert text.stdout == ""
    assert text.stderr.startswith("error: ") and "\n  fix: " in text.stderr
    as_json = run("show", UNKNOWN_ID, "--vault", root, "--json", module=module)
    assert as_json.returncode == 4
    payload = json.loads(as_json.stdout)
    assert set(payload) == {"error"}
    assert payload["error"]["code"] == "not_found"
    assert UNKNOWN_ID in payload["error"]["message"] and payload["error"]["hint"]


def test_a_missing_vault_exits_7_and_creates_nothing(tmp_path: Path):
    missing = tmp_path / "missing"
    done = run("log", "--vault", missing)
    assert done.returncode == 7
    assert "vault-tool init" in done.stderr
    assert not missing.exists()
