"""Every command is registered, documented by --help and prints JSON with --json; the group
turns every outcome (usage errors, interrupts) into its exit code."""

from __future__ import annotations

import importlib
import json
import pkgutil
import shutil
import subprocess
from pathlib import Path

import click
import pytest

import vault_tool.cli
from tests.cli_support import MEMORY_FILE, invoke, invoke_json, isolated
from tests.import_fixtures import materialise
from vault_tool.cli import app
from vault_tool.cli.app import cli
from vault_tool.errors import EXIT_CODES

COMMANDS = list(cli.commands)

# Commands that run until stopped and print no data: they take --json for symmetry only.
LONG_RUNNING = {"serve", "watch"}
# Commands git runs (with its own arguments, in the vault): no --vault, no --json.
CALLED_BY_GIT = {"merge-driver", "textconv"}

# For every other command, arguments that make it print data, filled in from the fixture.
DATA_ARGS = {
    "init": ["init", "{new}"],
    "connect": ["connect", "claude-code", "--vault", "{vault}"],
    "skill": ["skill"],
    "search": ["search", "staging", "--vault", "{vault}"],
    "ledger": ["ledger", "--vault", "{vault}"],
    "show": ["show", "{id}", "--vault", "{vault}"],
    "history": ["history", "{id}", "--vault", "{vault}"],
    "restore": ["restore", "{id}", "{version}", "--vault", "{vault}"],
    "deleted": ["deleted", "--vault", "{vault}"],
    "review": ["review", "HEAD~1..HEAD", "--vault", "{vault}"],
    "revert": ["revert", "HEAD", "--dry-run", "--vault", "{vault}"],
    "log": ["log", "--vault", "{vault}"],
    "list": ["list", "--vault", "{vault}"],
    "remember": ["remember", "{file}", "--vault", "{vault}"],
    "blame": ["blame", "{id}", "--vault", "{vault}"],
    "feedback": ["feedback", "{handle}", "--helpful", "{id}", "--vault", "{vault}"],
    "expire": ["expire", "--dry-run", "--vault", "{vault}"],
    "dismiss": ["dismiss", "{id}", "--dry-run", "--vault", "{vault}"],
    "undismiss": ["undismiss", "{id}", "--vault", "{vault}"],
    "context": ["context", "--vault", "{vault}"],
    "timeline": ["timeline", "{id}", "--vault", "{vault}"],
    "facts": ["facts", "staging", "--all", "--vault", "{vault}"],
    "rules": ["rules", "list", "--vault", "{vault}"],
    "state": ["state", "get", "todo", "--vault", "{vault}"],
    "token": ["token", "list", "--vault", "{vault}"],
    "import": [
        "import",
        "{source}/Projects",  # a folder with nothing to skip: a skip exits 9
        "--format",
        "markdown",
        "--dry-run",
        "--vault",
        "{vault}",
    ],
    "export": ["export", "--output", "{out}", "--vault", "{vault}"],
    "reindex": ["reindex", "--vault", "{vault}"],
    "commit": ["commit", "--vault", "{vault}"],
    "entities": ["entities", "--vault", "{vault}"],
    "predicates": ["predicates", "--vault", "{vault}"],
    "rename-entity": ["rename-entity", "staging", "stage", "--dry-run", "--vault", "{vault}"],
    "merge-entity": ["merge-entity", "VPN", "--into", "staging", "--dry-run", "--vault", "{vault}"],
    "rename-predicate": [
        "rename-predicate",
        "requires",
        "needs",
        "--dry-run",
        "--vault",
        "{vault}",
    ],
    "remote": ["remote", "list", "--vault", "{vault}"],
    "sync": ["sync", "--vault", "{vault}"],
    "verify": ["verify", "--vault", "{vault}"],
    "doctor": ["doctor", "--vault", "{vault}"],
    "gc": ["gc", "--vault", "{vault}"],
}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A vault with one memory and one logged search, made through the CLI."""
    work = tmp_path_factory.mktemp("template")
    root = work / "vault"
    with isolated(tmp_path_factory.mktemp("home")):
        invoke_json("init", root)
        source = work / "memory.md"
        source.write_text(MEMORY_FILE, encoding="utf-8")
        created = invoke_json("remember", source, "--vault", root)
        invoke_json("search", "staging", "--vault", root)
        handle = invoke_json("ledger", "--vault", root)[0]["id"]
    return root, {"id": created["memory_id"], "version": created["version_id"], "handle": handle}


@pytest.fixture
def filled(tmp_path: Path, template: tuple[Path, dict[str, str]]) -> dict[str, str]:
    """The placeholders of DATA_ARGS, over this test's own copy of the template vault."""
    root = tmp_path / "vault"
    shutil.copytree(template[0], root, symlinks=True)
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--quiet", "--bare", "-b", "main", str(remote)], check=True)
    subprocess.run(["git", "-C", str(root), "remote", "add", "origin", str(remote)], check=True)
    file = tmp_path / "new.md"
    file.write_text(MEMORY_FILE.replace("Staging needs the VPN", "Prod needs the VPN"), "utf-8")
    return {
        **template[1],
        "vault": str(root),
        "new": str(tmp_path / "new-vault"),
        "file": str(file),
        "source": str(materialise("markdown", tmp_path)),
        "out": str(tmp_path / "export.jsonl"),
    }


def test_the_group_registers_every_command_module_in_topic_order():
    package = Path(vault_tool.cli.__file__).parent
    with_commands = {
        info.name
        for info in pkgutil.iter_modules([str(package)])
        if hasattr(importlib.import_module(f"vault_tool.cli.{info.name}"), "COMMANDS")
    }
    assert with_commands == {topic.__name__.rsplit(".", 1)[1] for topic in app.TOPICS}
    registered = [command for topic in app.TOPICS for command in topic.COMMANDS]
    assert list(cli.commands.values()) == registered
    assert {"init", "show", "history", "restore", "log", "remember"} <= set(COMMANDS)


def test_every_command_is_either_long_running_or_has_data_arguments():
    assert set(COMMANDS) == set(DATA_ARGS) | LONG_RUNNING | CALLED_BY_GIT
    assert not set(DATA_ARGS) & LONG_RUNNING


def _commands_under(name: str) -> list[tuple[str, click.Command]]:
    """(words, command) of a command, or of each command of a group (`remote add`)."""
    command = cli.commands[name]
    if isinstance(command, click.Group):
        return [(f"{name} {sub}", command.commands[sub]) for sub in command.commands]
    return [(name, command)]


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_has_help_that_documents_it_with_vault_and_json(name: str):
    assert (cli.commands[name].help or "").strip()
    for words, command in _commands_under(name):
        assert command.help and command.help.strip()
        done = invoke(*words.split(), "--help")
        assert done.exit_code == 0, done.stderr
        assert done.stdout.startswith(f"Usage: vault-tool {words} ")
        first_line = command.help.strip().splitlines()[0]
        assert " ".join(first_line.split()[:3]) in " ".join(done.stdout.split())
        if name in CALLED_BY_GIT:
            continue
        assert {"vault_path", "as_json"} <= {param.name for param in command.params}
        assert "--vault" in done.stdout
        assert "--json" in done.stdout


@pytest.mark.parametrize("name", sorted(DATA_ARGS))
def test_every_command_that_prints_data_prints_json_with_json(name: str, filled: dict[str, str]):
    args = [arg.format(**filled) for arg in DATA_ARGS[name]]
    done = invoke(*args, "--json")
    assert done.exit_code == 0, done.stdout + done.stderr
    assert isinstance(json.loads(done.stdout), dict | list)


def test_top_level_help_lists_every_command_and_every_exit_code():
    done = invoke("--help")
    assert done.exit_code == 0
    assert done.stdout.startswith("Usage: vault-tool ")
    for name, command in cli.commands.items():
        assert (name in done.stdout) is not command.hidden, name  # (git's own: textconv)
    text = " ".join(done.stdout.split())
    assert "Exit codes: 0 success, 1 internal error" in text
    for code, meaning in EXIT_CODES.items():
        assert f"{code} {meaning}" in text


def test_an_interrupted_command_says_aborted_and_exits_130(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    def interrupted(path: object) -> Path:
        raise KeyboardInterrupt

    monkeypatch.setattr("vault_tool.storage.config.resolve_vault_path", interrupted)
    done = invoke("log", "--vault", tmp_path)
    assert done.exit_code == 130
    assert "Aborted." in done.stderr


def test_a_usage_error_exits_2_with_click_s_message():
    done = invoke("show")
    assert done.exit_code == 2
    assert "Missing argument 'MEMORY_ID'" in done.stderr
    assert done.stdout == ""
