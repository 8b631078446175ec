"""A file far larger than any memory is never read whole, wherever the tool reads files.

The file is sparse (gigabytes on paper, nothing on disk), and every command runs with an
address space smaller than the file: a read of the whole file fails at once with MemoryError,
without filling the machine's memory. So each command here proves it looked at the file's
size first, reported the file as too large, and went on with everything else.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_support import MEMORY_FILE
from tests.helpers import eventually, git
from vault_tool.core.memory import MAX_FILE_BYTES

# Room for Python, Whoosh and git (which inherit it), not for the file.
ADDRESS_SPACE = 2 << 30
SPARSE_BYTES = 4 << 30
HUGE = "notes/huge.md"
NOTE = "---\ntitle: {title}\n---\n# {title}\n\n{body}\n"


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def _program(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "vault_tool", *(str(a) for a in args)]


def vault_tool(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """vault-tool ARGS with the small address space; it must not crash on the file."""
    done = subprocess.run(
        _program(*args), capture_output=True, text=True, preexec_fn=_limited, timeout=300
    )
    assert "MemoryError" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.returncode != 1, done.stdout + done.stderr  # (1: an internal error)
    return done


def sparse(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as file:
        file.write(b"# Huge\n\n")
        file.truncate(SPARSE_BYTES)
    if path.stat().st_blocks * 512 >= MAX_FILE_BYTES:
        path.unlink()
        pytest.skip("this file system does not make sparse files")


def write_note(root: Path, rel: str, title: str, body: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(NOTE.format(title=title, body=body), encoding="utf-8")


def too_large(report: dict, path: str = HUGE) -> bool:
    return "too large" in json.dumps(report.get(path) or "")


def test_every_command_reports_the_huge_file_and_goes_on(tmp_path: Path, vault_path: Path):
    write_note(vault_path, "notes/wombat.md", "Wombats dig burrows", "Cube-shaped droppings.")
    sparse(vault_path / HUGE)

    committed = vault_tool("commit", "--json", "--vault", vault_path)
    report = json.loads(committed.stdout)
    assert committed.returncode == 10 and too_large(report["problems"]), committed.stdout
    assert report["committed"] == ["notes/wombat.md"]

    found = vault_tool("search", "wombats burrows", "--json", "--vault", vault_path)
    assert found.returncode == 0, found.stderr
    assert [h["path"] for h in json.loads(found.stdout)["selected_hits"]] == ["notes/wombat.md"]

    for check in (["verify"], ["verify", "--files"]):
        checked = vault_tool(*check, "--json", "--vault", vault_path)
        issues = {i["path"]: i for i in json.loads(checked.stdout)["issues"]}
        assert checked.returncode == 8 and too_large(issues), checked.stdout
        assert issues[HUGE]["kind"] == "unparseable"
    doctor = vault_tool("doctor", "--json", "--vault", vault_path)
    assert doctor.returncode == 8 and "too large" in doctor.stdout, doctor.stdout

    rebuilt = vault_tool("reindex", "--json", "--vault", vault_path)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "too large" in rebuilt.stdout, rebuilt.stdout
    exported = vault_tool("export", "--vault", vault_path)
    assert exported.returncode == 0, exported.stderr
    assert [json.loads(line)["path"] for line in exported.stdout.splitlines()] == [
        "notes/wombat.md"
    ]
    assert HUGE not in git(vault_path, "ls-files")


def test_a_memory_whose_file_becomes_huge_is_refused_for_reads_and_writes(vault_path: Path):
    write_note(vault_path, "notes/wombat.md", "Wombats dig burrows", "Cube-shaped droppings.")
    vault_tool("commit", "--vault", vault_path)
    sparse(vault_path / "notes/wombat.md")  # (after the index and git hold its last version)
    (vault_path.parent / "update.md").write_text(MEMORY_FILE)

    for args in (
        ["show", "notes/wombat"],
        ["blame", "notes/wombat"],
        ["remember", vault_path.parent / "update.md", "--id", "notes/wombat"],
        ["dismiss", "notes/wombat"],
    ):
        done = vault_tool(*args, "--vault", vault_path)
        assert done.returncode in (2, 3), (args, done.stdout, done.stderr)
        assert "too large" in done.stderr, (args, done.stderr)
    found = vault_tool("search", "wombats", "--json", "--vault", vault_path)
    assert [h["path"] for h in json.loads(found.stdout)["selected_hits"]] == ["notes/wombat.md"]


def test_import_init_and_remember_refuse_a_huge_file_unread(tmp_path: Path):
    notes = tmp_path / "notes"
    write_note(notes, "kept.md", "Wombats dig burrows", "Cube-shaped droppings.")
    sparse(notes / "huge.md")
    vault = tmp_path / "vault"
    vault_tool("init", vault)
    imported = vault_tool("import", notes, "--format", "markdown", "--json", "--vault", vault)
    report = json.loads(imported.stdout)
    assert imported.returncode == 9, imported.stdout
    assert [s["item"] for s in report["skipped"]] == ["huge.md"]
    assert "too large" in report["skipped"][0]["reason"]

    remembered = vault_tool("remember", notes / "huge.md", "--vault", vault)
    assert remembered.returncode == 2 and "too large" in remembered.stderr, remembered.stderr

    adopted = vault_tool("init", notes)
    assert adopted.returncode == 0, adopted.stderr
    assert git(notes, "ls-files", "--", "*.md") == "kept.md"
    doctor = vault_tool("doctor", "--json", "--vault", notes)
    assert "huge.md" in doctor.stdout and "too large" in doctor.stdout, doctor.stdout


def test_the_watcher_takes_in_every_other_hand_edit(vault_path: Path):
    watching = subprocess.Popen(
        _program("watch", "--vault", vault_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_limited,
    )
    try:
        eventually(lambda: (vault_path / ".vault/run/leader.json").exists(), timeout=30)
        sparse(vault_path / HUGE)
        write_note(vault_path, "notes/wombat.md", "Wombats dig burrows", "Cube-shaped droppings.")
        eventually(lambda: "notes/wombat.md" in git(vault_path, "ls-files"), timeout=30)
        write_note(vault_path, "notes/quokka.md", "Quokkas smile", "On Rottnest Island.")
        eventually(lambda: "notes/quokka.md" in git(vault_path, "ls-files"), timeout=30)
        assert watching.poll() is None
    finally:
        watching.send_signal(signal.SIGTERM)
        out, err = watching.communicate(timeout=30)
    assert "MemoryError" not in err, err
    assert f"{HUGE}: file too large" in out, out
    assert HUGE not in git(vault_path, "ls-files")
    assert os.path.getsize(vault_path / HUGE) == SPARSE_BYTES
