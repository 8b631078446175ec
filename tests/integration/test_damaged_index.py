"""A damaged or removed index is a cache to rebuild: calls go on answering meanwhile."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli_support import invoke
from tests.helpers import create_args, eventually
from vault_tool.engine.vault import Vault
from vault_tool.errors import UNHEALTHY

TITLES = [f"Wombat burrow number {n}" for n in range(6)]


def segments(root: Path) -> list[Path]:
    return sorted((root / ".vault" / "index").glob("*.seg"), key=lambda p: -p.stat().st_size)


def zero(path: Path) -> None:
    path.write_bytes(b"")  # what an unsynced file can be after a power cut


def cut_in_half(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


def titles(vault: Vault) -> set[str]:
    hits = vault.search({"query": "wombat burrow", "top_k": 20})["selected_hits"]
    return {h["title"] for h in hits}


@pytest.fixture
def filled(vault_path: Path) -> Path:
    with Vault.open(vault_path) as vault:
        for title in TITLES:  # one segment each: damage to one leaves the others readable
            vault.remember(create_args(title))
    return vault_path


@pytest.mark.parametrize("damage", [zero, cut_in_half], ids=["zero-length", "truncated"])
def test_a_damaged_segment_is_rebuilt_while_search_and_remember_go_on(
    filled: Path, damage: Callable[[Path], None]
):
    damage(segments(filled)[0])
    with Vault.open(filled) as vault:
        first = vault.search({"query": "wombat burrow", "top_k": 20})
        assert first["selected_hits"]  # the intact segments answer at once
        made = vault.remember(create_args("Wombat burrow after the damage"))
        eventually(lambda: titles(vault) == {*TITLES, "Wombat burrow after the damage"}, 30)
        assert "index_catching_up" not in vault.search({"query": "wombat"})
        assert vault.read(made["memory_id"])["version_id"] == made["version_id"]
    assert invoke("verify", "--vault", filled).exit_code == 0


@pytest.mark.parametrize("damage", [zero, cut_in_half], ids=["zero-length", "truncated"])
def test_verify_and_doctor_name_reindex_for_a_damaged_segment(
    filled: Path, damage: Callable[[Path], None]
):
    damage(segments(filled)[0])
    verified = invoke("verify", "--vault", filled, "--json")
    assert verified.exit_code == UNHEALTHY, verified.stdout + verified.stderr
    report = json.loads(verified.stdout)
    assert report["index"] == "damaged"
    assert report["issues"][0]["kind"] == "index_damaged"
    assert "vault-tool reindex" in report["issues"][0]["fix"]
    doctored = invoke("doctor", "--vault", filled, "--json")
    assert doctored.exit_code == UNHEALTHY
    index = next(c for c in json.loads(doctored.stdout)["checks"] if c["name"] == "index")
    assert index["status"] == "fail" and "vault-tool reindex" in index["fix"]
    searched = invoke("search", "wombat", "--vault", filled, "--json")
    assert searched.exit_code == 0, searched.stdout + searched.stderr
    assert invoke("reindex", "--vault", filled).exit_code == 0
    assert invoke("verify", "--vault", filled).exit_code == 0


SERVING = """
import json, sys
from vault_tool.engine.vault import Vault
vault = Vault.open(sys.argv[1])
for line in sys.stdin:
    if line.strip() == "search":
        result = vault.search({"query": "wombat burrow", "top_k": 20})
        print(json.dumps(sorted(h["title"] for h in result["selected_hits"])), flush=True)
"""


def test_segments_truncated_under_a_running_process_do_not_kill_it(filled: Path):
    process = subprocess.Popen(
        [sys.executable, "-c", SERVING, str(filled)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    try:
        assert process.stdin and process.stdout
        process.stdin.write("search\n")
        process.stdin.flush()
        assert json.loads(process.stdout.readline()) == sorted(TITLES)
        for segment in segments(filled):  # its readers have every segment open now
            os.truncate(segment, 16)

        def answers() -> bool:
            process.stdin.write("search\n")
            process.stdin.flush()
            line = process.stdout.readline()
            assert line, f"the process died (exit {process.wait()})"
            return json.loads(line) == sorted(TITLES)

        eventually(answers, 30, interval=0.2)
    finally:
        if process.stdin:
            process.stdin.close()
        process.wait(10)
    assert process.returncode == 0


def test_an_index_folder_removed_under_an_open_vault_comes_back(filled: Path):
    with Vault.open(filled) as vault:
        assert titles(vault) == set(TITLES)
        shutil.rmtree(filled / ".vault" / "index")
        vault.search({"query": "wombat"})  # answers (from nothing yet) instead of failing
        made = vault.remember(create_args("Wombat burrow after the removal"))
        eventually(lambda: titles(vault) == {*TITLES, "Wombat burrow after the removal"}, 30)
        assert vault.read(made["memory_id"])["path"] == made["path"]
    assert invoke("verify", "--vault", filled).exit_code == 0


def test_the_index_is_read_without_mmap_and_written_through_a_syncing_storage(vault):
    from vault_tool.search.disk import DurableStorage

    storage = vault._index._ix.storage
    assert isinstance(storage, DurableStorage) and storage.supports_mmap is False
