"""Hints name the program as a person can paste it (cli/output.py `program`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from vault_tool.cli.output import program


def test_a_program_the_shell_does_not_find_is_named_by_its_path(tmp_path, monkeypatch):
    started = tmp_path / "my env" / "bin" / "vault-tool"
    started.parent.mkdir(parents=True)
    started.write_text("#!/bin/sh\n")
    monkeypatch.setattr(sys, "argv", [str(started)])
    monkeypatch.setenv("PATH", "/nonexistent")
    assert program() == f"'{started}'"  # quoted: the path holds a space


def test_a_program_on_the_path_is_named_plainly(tmp_path, monkeypatch):
    started = tmp_path / "bin" / "vault-tool"
    started.parent.mkdir()
    started.write_text("#!/bin/sh\n")
    started.chmod(0o755)
    monkeypatch.setattr(sys, "argv", [str(started)])
    monkeypatch.setenv("PATH", str(started.parent) + os.pathsep + os.environ.get("PATH", ""))
    assert program() == "vault-tool"


def test_anything_else_running_the_commands_gets_the_plain_name(monkeypatch):
    monkeypatch.setattr(sys, "argv", [str(Path(sys.executable))])  # a test runner, a script
    assert program() == "vault-tool"


def test_a_hint_names_each_command_as_this_program_runs(tmp_path, monkeypatch):
    from vault_tool.cli.output import pasteable

    started = tmp_path / "bin" / "vault-tool"
    started.parent.mkdir()
    started.write_text("#!/bin/sh\n")
    monkeypatch.setattr(sys, "argv", [str(started)])
    monkeypatch.setenv("PATH", "/nonexistent")
    hint = "run `vault-tool commit`, then vault-tool log; see vault-tool.toml"
    assert pasteable(hint) == (f"run `{started} commit`, then {started} log; see vault-tool.toml")
