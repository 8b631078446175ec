"""Watching narrates: one event per commit, refused file, unreadable file and kept-out secret,
printed by `vault-tool watch` (a line each, or a JSON object each with --json) and written to
the log when no one is told directly (a server's log)."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import create_args, eventually
from vault_tool.engine.vault import Vault
from vault_tool.watcher import Watcher, narration

NOTE = "---\ntitle: {title}\n---\n# {title}\n\n{body}\n"
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"


def write_note(root: Path, rel: str, title: str, body: str = "Cube-shaped droppings.") -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(NOTE.format(title=title, body=body), encoding="utf-8")


def of_kind(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in list(events) if e["event"] == kind]


@pytest.fixture
def told(vault: Vault) -> Iterator[list[dict[str, Any]]]:
    events: list[dict[str, Any]] = []
    watcher = Watcher(vault, narrate=events.append).start()
    assert watcher.ready.wait(10)
    yield events
    watcher.stop()


def test_each_commit_is_told_with_its_subject_and_paths(vault, vault_path, told):
    write_note(vault_path, "notes/wombat.md", "Wombats dig burrows")
    commit = eventually(lambda: of_kind(told, "commit"))[0]
    assert commit["subject"] == "Hand edit: Wombats dig burrows"
    assert commit["paths"] == ["notes/wombat.md"] and commit["memory_id"] == "notes/wombat"
    assert len(commit["version_id"]) == 40
    made = vault.remember(create_args("Ana owns the billing service"))
    os.rename(vault_path / made["path"], vault_path / "notes" / "ana.md")
    moved = eventually(lambda: of_kind(told, "commit")[1:])[0]
    assert moved["subject"].startswith("Move decision: Ana owns the billing service (")
    assert moved["memory_id"] == made["memory_id"]


def test_a_secret_a_broken_file_and_a_fifo_are_each_told(vault_path, told):
    write_note(vault_path, "notes/key.md", "Deploy key", body=f"aws {AWS_KEY}")
    secret = eventually(lambda: of_kind(told, "secret"))[0]
    assert secret["path"] == "notes/key.md" and "secret" in secret["reason"]
    (vault_path / "notes" / "broken.md").write_text("---\ntitle: [unclosed\n---\n# B\n")
    problem = eventually(lambda: of_kind(told, "problem"))[0]
    assert problem["path"] == "notes/broken.md" and problem["hint"]
    os.mkfifo(vault_path / "notes" / "pipe.md")
    refused = eventually(lambda: of_kind(told, "refused"))[0]
    assert refused["path"] == "notes/pipe.md"
    assert of_kind(told, "commit") == []


def test_a_line_escapes_what_a_file_says():
    line = narration(
        {
            "event": "commit",
            "version_id": "a" * 40,
            "subject": "Hand edit: Evil\u202etxt.exe",
            "memory_id": "x",
            "paths": ["x.md"],
        }
    )
    assert line == "committed aaaaaaaaaa Hand edit: Evil\\u202etxt.exe"
    problem = {"event": "problem", "path": "n\u202e.md", "line": 3, "reason": "bad\nline",
               "hint": "fix it"}  # fmt: skip
    assert narration(problem) == "not taken in n\\u202e.md:3: bad\\nline (fix it)"


def test_without_a_listener_events_go_to_the_log(vault, vault_path, caplog):
    caplog.set_level(logging.INFO, logger="vault_tool.watcher")
    watcher = Watcher(vault).start()
    try:
        assert watcher.ready.wait(10)
        write_note(vault_path, "notes/wombat.md", "Wombats dig burrows")
        write_note(vault_path, "notes/key.md", "Deploy key", body=f"aws {AWS_KEY}")
        eventually(lambda: "committed" in caplog.text and "kept out notes/key.md" in caplog.text)
    finally:
        watcher.stop()
    assert "Hand edit: Wombats dig burrows" in caplog.text


class Watching:
    """`vault-tool watch` as a subprocess, its stdout lines collected as they come."""

    def __init__(self, root: Path, *args: str) -> None:
        program = Path(sys.executable).with_name("vault-tool")
        self.proc = subprocess.Popen(
            [str(program), "watch", "--vault", str(root), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        with Vault.open(root, catch_up=False) as vault:
            eventually(lambda: vault.leader() is not None, timeout=20)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(20)
        self._reader.join(5)


def test_vault_tool_watch_prints_a_line_per_commit_and_kept_out_secret(vault_path):
    watching = Watching(vault_path)
    try:
        write_note(vault_path, "notes/wombat.md", "Wombats \u202edig burrows")
        write_note(vault_path, "notes/key.md", "Deploy key", body=f"aws {AWS_KEY}")
        eventually(lambda: len(watching.lines) >= 2, timeout=20)
    finally:
        watching.stop()
    assert any(
        line.startswith("committed ") and line.endswith(" Hand edit: Wombats \\u202edig burrows")
        for line in watching.lines
    ), watching.lines
    assert any(line.startswith("kept out notes/key.md: holds a secret") for line in watching.lines)


def test_vault_tool_watch_json_prints_one_object_a_line(vault_path):
    watching = Watching(vault_path, "--json")
    try:
        write_note(vault_path, "notes/wombat.md", "Wombats dig burrows")
        eventually(lambda: watching.lines, timeout=20)
    finally:
        watching.stop()
    events = [json.loads(line) for line in watching.lines]
    assert events[0]["event"] == "commit"
    assert events[0]["subject"] == "Hand edit: Wombats dig burrows"
    assert events[0]["paths"] == ["notes/wombat.md"]


def test_a_server_writes_the_same_lines_to_its_log(vault_path):
    program = Path(sys.executable).with_name("vault-tool")
    server = subprocess.Popen(
        [str(program), "serve", "--vault", str(vault_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    log = vault_path / ".vault" / "run" / "server.log"
    try:
        assert server.stdin is not None and server.stdout is not None
        hello = {"protocolVersion": "2025-11-25", "capabilities": {},
                 "clientInfo": {"name": "pytest", "version": "1"}}  # fmt: skip
        request = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}
        server.stdin.write(json.dumps(request).encode() + b"\n")
        server.stdin.flush()
        assert json.loads(server.stdout.readline())["id"] == 0  # the vault opens on it
        with Vault.open(vault_path, catch_up=False) as vault:
            eventually(lambda: vault.leader() is not None, timeout=20)
        write_note(vault_path, "notes/wombat.md", "Wombats dig burrows")
        write_note(vault_path, "notes/key.md", "Deploy key", body=f"aws {AWS_KEY}")
        eventually(
            lambda: (
                "Hand edit: Wombats dig burrows" in log.read_text()
                and "kept out notes/key.md: holds a secret" in log.read_text()
            ),
            timeout=20,
        )
    finally:
        server.stdin.close()  # type: ignore[union-attr]
        server.wait(20)
    assert " INFO vault_tool.watcher: committed " in log.read_text()
    assert " WARNING vault_tool.watcher: kept out notes/key.md" in log.read_text()
