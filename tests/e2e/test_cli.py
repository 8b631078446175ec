"""The `vault-tool` command line, run as a subprocess as people and scripts run it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import git
from vault_tool.cli.app import cli

COMMANDS = sorted(cli.commands)
SINGLE_KEYS = {"mode", "status", "memory_id", "version_id", "path", "redactions"}
READ_KEYS = {
    "memory_id",
    "version_id",
    "title",
    "memory_type",
    "content_md",
    "semantic_delta",
    "path",
    "created",
    "updated",
}
COMMIT_KEYS = {"sha", "date", "author", "subject", "client", "path"}
SAMPLE_ID = "01KZG5WWPGVD0WV8B798AXKW6H"  # sample-vault/event/2026-08/invoice-run-failed-...
UNKNOWN_ID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"

MEMORY_FILE = """\
---
memory_type: gotcha
title: Staging needs the VPN
entities:
  - n: staging
    kind: environment
    is: the pre-production environment
  - n: VPN
    kind: tool
    is: the company WireGuard VPN
facts:
  - subject: staging
    predicate: requires
    object: VPN
tags: [staging]
---
# Staging needs the VPN

Deploys to staging time out without it.
"""


def run(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run vault-tool with the test's environment."""
    return subprocess.run(
        [sys.executable, "-m", "vault_tool", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env if env is not None else os.environ.copy(),
        timeout=60,
    )


def run_json(*args: str, **kwargs) -> object:
    done = run(*args, "--json", **kwargs)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A sample vault made once for the read-only tests, with its own isolated environment."""
    home = tmp_path_factory.mktemp("sample-home")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "VAULT_TOOL_"))}
    env.update(HOME=str(home), GIT_CONFIG_GLOBAL=str(home / "gitconfig"), GIT_CONFIG_NOSYSTEM="1")
    root = tmp_path_factory.mktemp("sample") / "vault"
    done = run("init", "--sample", str(root), "--json", env=env)
    assert done.returncode == 0, done.stderr
    return root, env


# --- init ----------------------------------------------------------------------------------


def test_init_creates_a_vault_and_exits_0(tmp_path: Path):
    root = tmp_path / "vault"
    done = run("init", str(root))
    assert done.returncode == 0, done.stderr
    assert (root / ".git").is_dir()
    assert (root / ".vault" / "config.toml").is_file()
    assert git(root, "log", "--format=%s") == "Initialize vault"
    assert git(root, "status", "--porcelain") == ""
    assert str(root) in done.stdout


def test_init_json_reports_the_vault_and_its_head(tmp_path: Path):
    root = tmp_path / "vault"
    result = run_json("init", str(root))
    assert result == {
        "vault": str(root),
        "memories": 0,
        "version_id": git(root, "rev-parse", "HEAD"),
    }


def test_init_on_an_existing_vault_is_refused_with_exit_2(tmp_path: Path):
    root = tmp_path / "vault"
    assert run("init", str(root)).returncode == 0
    head = git(root, "rev-parse", "HEAD")
    done = run("init", str(root))
    assert done.returncode == 2
    assert "error:" in done.stderr
    assert git(root, "rev-parse", "HEAD") == head


def test_init_sample_makes_one_commit_per_memory(sample: tuple[Path, dict[str, str]]):
    root, _ = sample
    memories = [p for p in root.rglob("*.md") if ".git" not in p.parts and p.name != "README.md"]
    assert len(memories) == 28
    assert int(git(root, "rev-list", "--count", "HEAD")) >= 29
    assert len(git(root, "log", "--grep", "Client: sample", "--format=%H").splitlines()) == 28
    for sha in git(root, "log", "--grep", "Client: sample", "--format=%H").splitlines():
        changed = git(root, "show", "--name-only", "--format=", sha).splitlines()
        assert len(changed) == 1
        assert git(root, "log", "-1", "--format=%s", sha).startswith("Create ")
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(root, "log", "--reverse", "--format=%s").splitlines()[0] == "Initialize vault"


def test_init_sample_files_are_the_bundled_files_byte_for_byte(
    sample: tuple[Path, dict[str, str]],
):
    root, _ = sample
    bundled = Path(__file__).resolve().parents[2] / "sample-vault"
    for source in bundled.rglob("*.md"):
        relpath = source.relative_to(bundled)
        assert (root / relpath).read_bytes() == source.read_bytes(), relpath


# --- reading -------------------------------------------------------------------------------


def test_show_json_has_the_addressed_read_shape(sample: tuple[Path, dict[str, str]]):
    root, env = sample
    shown = run_json("show", SAMPLE_ID, "--vault", str(root), env=env)
    assert isinstance(shown, dict)
    assert set(shown) >= READ_KEYS
    assert shown["memory_id"] == SAMPLE_ID
    assert re.fullmatch(r"[0-9a-f]{40}", shown["version_id"])
    assert shown["version_id"] == git(root, "log", "-1", "--format=%H", "--", shown["path"])
    assert shown["path"] == "event/2026-08/invoice-run-failed-after-gateway-timeout-change.md"
    assert shown["memory_type"] == "event"
    assert shown["content_md"].startswith("# Invoice run failed")
    assert shown["semantic_delta"]["facts"][0]["predicate"] == "routes_through"
    assert shown["file"] == (root / shown["path"]).read_text(encoding="utf-8")


def test_show_text_prints_the_file(sample: tuple[Path, dict[str, str]]):
    root, env = sample
    done = run("show", SAMPLE_ID, "--vault", str(root), env=env)
    assert done.returncode == 0, done.stderr
    assert "# Invoice run failed after gateway timeout change" in done.stdout
    assert SAMPLE_ID in done.stdout


def test_history_json_lists_every_version(sample: tuple[Path, dict[str, str]]):
    root, env = sample
    versions = run_json("history", SAMPLE_ID, "--vault", str(root), env=env)
    assert isinstance(versions, list) and len(versions) == 1
    assert set(versions[0]) >= COMMIT_KEYS
    assert versions[0]["client"] == "sample"
    assert versions[0]["subject"] == "Create event: Invoice run failed after gateway timeout change"
    assert versions[0]["date"].startswith("2026-08-08T07:55:14")


def test_log_json_lists_commits_newest_first(sample: tuple[Path, dict[str, str]]):
    root, env = sample
    commits = run_json("log", "--vault", str(root), "-n", "5", env=env)
    assert isinstance(commits, list) and len(commits) == 5
    assert [c["sha"] for c in commits] == git(root, "log", "-5", "--format=%H").splitlines()
    for commit in commits:
        assert set(commit) >= COMMIT_KEYS
    only_sample = run_json("log", "--vault", str(root), "--client", "sample", "-n", "100", env=env)
    assert isinstance(only_sample, list) and len(only_sample) == 28


def test_vault_defaults_to_the_vault_tool_vault_variable(
    sample: tuple[Path, dict[str, str]], tmp_path: Path
):
    root, env = sample
    shown = run_json("show", SAMPLE_ID, env={**env, "VAULT_TOOL_VAULT": str(root)}, cwd=tmp_path)
    assert isinstance(shown, dict) and shown["memory_id"] == SAMPLE_ID


def test_vault_defaults_to_the_current_folder(sample: tuple[Path, dict[str, str]]):
    root, env = sample
    commits = run_json("log", "-n", "1", env=env, cwd=root)
    assert isinstance(commits, list) and len(commits) == 1


# --- writing -------------------------------------------------------------------------------


def test_remember_file_creates_then_updates_the_same_memory(tmp_path: Path):
    root = tmp_path / "vault"
    assert run("init", str(root)).returncode == 0
    source = tmp_path / "staging-vpn.md"
    source.write_text(MEMORY_FILE, encoding="utf-8")

    created = run_json("remember", str(source), "--vault", str(root))
    assert isinstance(created, dict) and set(created) >= SINGLE_KEYS
    assert created["status"] == "created"
    assert created["version_id"] == git(root, "rev-parse", "HEAD")
    assert git(root, "log", "-1", "--format=%s") == "Create gotcha: Staging needs the VPN"
    assert "Client: cli" in git(root, "log", "-1", "--format=%B").splitlines()

    source.write_text(
        source.read_text(encoding="utf-8").replace("time out", "hang for ten minutes"),
        encoding="utf-8",
    )
    updated = run_json("remember", str(source), "--vault", str(root))
    assert isinstance(updated, dict)
    assert updated["status"] == "updated"
    assert updated["memory_id"] == created["memory_id"]
    assert updated["path"] == created["path"]
    assert git(root, "log", "-1", "--format=%s") == "Update gotcha: Staging needs the VPN"
    assert "hang for ten minutes" in (root / created["path"]).read_text(encoding="utf-8")
    assert len(list((root / "gotcha").rglob("*.md"))) == 1


def test_remember_file_with_an_id_updates_that_memory(tmp_path: Path):
    root = tmp_path / "vault"
    assert run("init", str(root)).returncode == 0
    source = tmp_path / "m.md"
    source.write_text(MEMORY_FILE, encoding="utf-8")
    created = run_json("remember", str(source), "--vault", str(root))
    assert isinstance(created, dict)
    edited = tmp_path / "edited.md"
    edited.write_text(
        MEMORY_FILE.replace("---\n", f"---\nid: {created['memory_id']}\n", 1).replace(
            "time out", "fail"
        ),
        encoding="utf-8",
    )
    updated = run_json("remember", str(edited), "--vault", str(root))
    assert isinstance(updated, dict)
    assert updated["status"] == "updated"
    assert updated["memory_id"] == created["memory_id"]
    assert git(root, "status", "--porcelain") == ""


def test_remember_from_stdin(tmp_path: Path):
    root = tmp_path / "vault"
    assert run("init", str(root)).returncode == 0
    done = subprocess.run(
        [sys.executable, "-m", "vault_tool", "remember", "-", "--vault", str(root), "--json"],
        input=MEMORY_FILE,
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "created"


def test_remember_file_without_facts_exits_2_and_changes_nothing(tmp_path: Path):
    root = tmp_path / "vault"
    assert run("init", str(root)).returncode == 0
    head = git(root, "rev-parse", "HEAD")
    source = tmp_path / "no-facts.md"
    source.write_text(
        MEMORY_FILE.replace(
            "facts:\n  - subject: staging\n    predicate: requires\n    object: VPN\n", ""
        ),
        encoding="utf-8",
    )
    done = run("remember", str(source), "--vault", str(root))
    assert done.returncode == 2
    assert "error:" in done.stderr and "fix:" in done.stderr
    assert "facts" in done.stderr
    assert git(root, "rev-parse", "HEAD") == head
    assert git(root, "status", "--porcelain") == ""


def test_remember_file_with_broken_yaml_exits_2(tmp_path: Path):
    root = tmp_path / "vault"
    assert run("init", str(root)).returncode == 0
    source = tmp_path / "broken.md"
    source.write_text("---\ntitle: [unclosed\n---\n# T\n", encoding="utf-8")
    done = run("remember", str(source), "--vault", str(root), "--json")
    assert done.returncode == 2
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "unparseable_file"
    assert str(source) in error["message"]


def test_restore_brings_back_a_version_in_one_commit(tmp_path: Path):
    root = tmp_path / "vault"
    assert run("init", str(root)).returncode == 0
    source = tmp_path / "m.md"
    source.write_text(MEMORY_FILE, encoding="utf-8")
    created = run_json("remember", str(source), "--vault", str(root))
    assert isinstance(created, dict)
    first_bytes = (root / created["path"]).read_bytes()
    edited = tmp_path / "edited.md"
    edited.write_text(
        MEMORY_FILE.replace("---\n", f"---\nid: {created['memory_id']}\n", 1).replace(
            "time out", "fail"
        ),
        encoding="utf-8",
    )
    run_json("remember", str(edited), "--vault", str(root))
    count = int(git(root, "rev-list", "--count", "HEAD"))

    short = created["version_id"][:10]
    restored = run_json("restore", created["memory_id"], short, "--vault", str(root))
    assert isinstance(restored, dict)
    assert restored["status"] == "updated"
    assert int(git(root, "rev-list", "--count", "HEAD")) == count + 1
    assert git(root, "log", "-1", "--format=%s") == (
        f"Restore gotcha: Staging needs the VPN to {short}"
    )
    assert (root / created["path"]).read_bytes() == first_bytes
    history = run_json("history", created["memory_id"], "--vault", str(root))
    assert isinstance(history, list) and len(history) == 3


# --- errors and exit codes -----------------------------------------------------------------


def test_unknown_id_exits_4_with_error_and_fix_on_stderr(sample: tuple[Path, dict[str, str]]):
    root, env = sample
    done = run("show", UNKNOWN_ID, "--vault", str(root), env=env)
    assert done.returncode == 4
    assert "error:" in done.stderr
    assert "fix:" in done.stderr
    assert UNKNOWN_ID in done.stderr
    assert done.stdout == ""


def test_json_error_is_printed_on_stdout_in_the_error_shape(sample: tuple[Path, dict[str, str]]):
    root, env = sample
    done = run("history", UNKNOWN_ID, "--vault", str(root), "--json", env=env)
    assert done.returncode == 4
    payload = json.loads(done.stdout)
    assert set(payload) == {"error"}
    assert set(payload["error"]) >= {"code", "message", "hint"}
    assert payload["error"]["code"] == "not_found"
    assert UNKNOWN_ID in payload["error"]["message"]
    assert payload["error"]["hint"]


def test_malformed_id_exits_2(sample: tuple[Path, dict[str, str]]):
    root, env = sample
    done = run("show", "../../etc/passwd", "--vault", str(root), env=env)
    assert done.returncode == 2
    assert "error:" in done.stderr


@pytest.mark.parametrize(
    "args",
    [("show", SAMPLE_ID), ("history", SAMPLE_ID), ("log",), ("restore", SAMPLE_ID, "abcdef0")],
    ids=["show", "history", "log", "restore"],
)
def test_commands_on_a_missing_vault_exit_7_and_create_nothing(tmp_path: Path, args: tuple):
    missing = tmp_path / "missing"
    done = run(*args, "--vault", str(missing))
    assert done.returncode == 7
    assert "error:" in done.stderr
    assert "vault-tool init" in done.stderr
    assert not missing.exists()
    via_env = run(*args, env={**os.environ, "VAULT_TOOL_VAULT": str(missing)}, cwd=tmp_path)
    assert via_env.returncode == 7
    assert not missing.exists()
    assert list(tmp_path.iterdir()) == []


def test_a_folder_that_is_not_a_vault_exits_7_and_stays_untouched(tmp_path: Path):
    (tmp_path / "notes.md").write_text("# Notes\n")
    done = run("log", "--vault", str(tmp_path), "--json")
    assert done.returncode == 7
    assert json.loads(done.stdout)["error"]["code"] == "vault_unavailable"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.md"]


# --- help ----------------------------------------------------------------------------------


def test_there_are_commands_to_check():
    assert {"init", "show", "history", "restore", "log", "remember"} <= set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_with_vault_and_json(command: str):
    done = run(command, "--help")
    assert done.returncode == 0, done.stderr
    assert "--vault" in done.stdout
    assert "--json" in done.stdout
    assert cli.commands[command].help
    first_line = cli.commands[command].help.strip().splitlines()[0]
    assert first_line.split()[0] in done.stdout


def test_top_level_help_lists_every_command_and_the_exit_codes():
    done = run("--help")
    assert done.returncode == 0
    for command in COMMANDS:
        assert command in done.stdout
    assert "Exit codes" in done.stdout
