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
from tests.helpers import create_args, delta, eventually, git
from vault_tool.engine.vault import Vault
from vault_tool.errors import UNHEALTHY, NotFound, VaultBusy

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
            with vault._store.write_lock():
                vault._index.flush()  # (a write goes to the journal of recent writes first)
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


def test_recent_writes_flushed_after_the_index_folder_was_removed_are_dropped_not_a_crash(
    vault: Vault, vault_path: Path
):
    # A write goes to the journal of recent writes; a flush of it (the leader's merge when
    # idle) begins, and `git clean -xfd` removes the index folder right then: the flush
    # finds no index to write into.
    vault.remember(create_args("Wombat burrow before the removal"))
    assert vault._index.pending_writes()
    shutil.rmtree(vault_path / ".vault" / "index")
    vault._index.flush()  # dropped: the rebuild indexes the write from the files
    eventually(lambda: "Wombat burrow before the removal" in titles(vault), 30)


def test_the_index_is_read_without_mmap_and_written_through_a_syncing_storage(vault):
    from vault_tool.search.disk import DurableStorage

    storage = vault._index._ix.storage
    assert isinstance(storage, DurableStorage) and storage.supports_mmap is False


# A commit hook that takes the index away, and the files the commit wrote, as `git clean
# -xfd` does when it runs while a write is between putting its file in place and its commit.
REMOVE_AFTER_COMMIT = """#!/bin/sh
rm -rf .vault/index
git diff-tree -r --name-only --no-commit-id HEAD | xargs rm -f
"""
REMOVE_FILES_AFTER_COMMIT = """#!/bin/sh
git diff-tree -r --name-only --no-commit-id HEAD | xargs rm -f
"""


def post_commit_hook(root: Path, script: str) -> Path:
    hook = root / ".git" / "hooks" / "post-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(script)
    hook.chmod(0o755)
    return hook


def wombat(vault: Vault) -> dict:
    hit = vault.search({"query": "wombat burrow", "top_k": 1})["selected_hits"][0]
    return vault.read(hit["memory_id"])


def update_call(made: dict, body: str) -> dict:
    return {
        "mode": "update",
        "memory_id": made["memory_id"],
        "expected_version_id": made["version_id"],
        "content_md": f"# {made['title']}\n\n{body}\n",
        "semantic_delta": delta(made["title"]),
    }


def delete_call(made: dict) -> dict:
    return {
        "mode": "delete",
        "memory_id": made["memory_id"],
        "expected_version_id": made["version_id"],
    }


WRITES: dict[str, Callable[[Vault, dict], str | None]] = {
    "create": lambda vault, made: vault.remember(create_args("Wombat burrow new"))["version_id"],
    "update": lambda vault, made: vault.remember(update_call(made, "Dug deeper."))["version_id"],
    "delete": lambda vault, made: vault.remember(delete_call(made))["version_id"],
    "restore": lambda vault, made: vault.restore(made["memory_id"], made["version_id"])[
        "version_id"
    ],
    "plan": lambda vault, made: vault.set_status(made["memory_id"], "dismissed").version_id,
}


@pytest.mark.parametrize("write", list(WRITES))
def test_a_write_whose_commit_landed_returns_its_result_though_the_index_is_gone(
    filled: Path, write: str
):
    with Vault.open(filled) as vault:
        made = wombat(vault)
        if write == "restore":  # (an older version to go back to)
            vault.remember(update_call(made, "Dug deeper."))
        hook = post_commit_hook(filled, REMOVE_AFTER_COMMIT)
        version = WRITES[write](vault, made)
        assert version == git(filled, "rev-parse", "HEAD")  # committed, and said so
        hook.unlink()
        eventually(lambda: "index_catching_up" not in vault.search({"query": "wombat"}), 30)
        assert vault.count() == len(vault.memory_paths())  # rebuilt from what is there


def test_hand_edits_taken_in_are_committed_though_the_index_is_gone(filled: Path):
    with Vault.open(filled) as vault:
        made = wombat(vault)
        file = filled / made["path"]
        file.write_text(file.read_text().replace("She took it over.", "Edited by hand."))
        post_commit_hook(filled, REMOVE_AFTER_COMMIT)
        assert vault.sync_paths([made["path"]]).indexed == [made["path"]]
        assert "Edited by hand." in git(filled, "show", f"HEAD:{made['path']}")


def test_a_file_gone_since_its_commit_is_not_index_damage(filled: Path):
    with Vault.open(filled) as vault:
        post_commit_hook(filled, REMOVE_FILES_AFTER_COMMIT)
        made = vault.remember(create_args("Wombat burrow new"))
        assert made["version_id"] == git(filled, "rev-parse", "HEAD")
        assert vault._index.damaged is None
        assert "index_catching_up" not in vault.search({"query": "wombat"})


def test_an_index_update_that_fails_for_another_reason_still_fails(vault: Vault):
    shutil.rmtree(vault.root / ".vault" / "index")
    with pytest.raises(KeyError), vault._index.writer():
        raise KeyError("a bug, not damage")


# --- addressed reads while the index is rebuilt ---------------------------------------


def assert_busy_rebuilding(call: Callable[[], object]) -> None:
    with pytest.raises(VaultBusy) as caught:
        call()
    assert "being rebuilt" in caught.value.message
    assert "retry" in caught.value.hint


def test_ids_the_index_lacks_during_a_rebuild_are_busy_not_gone(filled: Path):
    with Vault.open(filled) as vault:
        made = wombat(vault)
        head = git(filled, "rev-parse", "HEAD")
        vault._recovery.stop()  # the rebuild the damage asks for stays wanted, not under way
        shutil.rmtree(filled / ".vault" / "index")
        vault.search({"query": "wombat"})  # finds the damage
        assert_busy_rebuilding(lambda: vault.search({"memory_id": made["memory_id"]}))
        assert_busy_rebuilding(lambda: vault.remember(update_call(made, "Dug deeper.")))
        assert_busy_rebuilding(lambda: vault.remember(delete_call(made)))
        assert git(filled, "rev-parse", "HEAD") == head
    with Vault.open(filled) as vault:  # rebuilt: there it is, and an unknown id is gone
        assert vault.search({"memory_id": made["memory_id"]})["version_id"] == made["version_id"]
        with pytest.raises(NotFound):
            vault.search({"memory_id": "01M8RVQ15R0J7WPWZF6EZ2FF9S"})


def test_ids_not_yet_read_by_a_background_catch_up_are_busy_not_gone(filled: Path):
    with Vault.open(filled) as vault:
        made = wombat(vault)
    copy = filled / "decision" / "copied-by-hand.md"
    memory_id = "01M8RVQ15R0J7WPWZF6EZ2FF9S"
    copy.write_text((filled / made["path"]).read_text().replace(made["memory_id"], memory_id))
    with Vault.open(filled, catch_up=False) as vault:
        vault.catching_up = True
        assert_busy_rebuilding(lambda: vault.search({"memory_id": memory_id}))
        vault.catching_up = False
        with pytest.raises(NotFound):
            vault.search({"memory_id": memory_id})
        vault.catch_up()
        assert vault.search({"memory_id": memory_id})["path"] == "decision/copied-by-hand.md"


def test_a_supersedes_of_an_id_not_yet_read_during_a_rebuild_is_busy_not_invalid(filled: Path):
    with Vault.open(filled) as vault:
        made = wombat(vault)
        vault._recovery.stop()  # the rebuild stays wanted, not under way
        shutil.rmtree(filled / ".vault" / "index")
        vault.search({"query": "wombat"})  # finds the damage
        newer = create_args("Wombats dig deeper burrows")
        newer["semantic_delta"]["supersedes"] = [made["memory_id"]]
        assert_busy_rebuilding(lambda: vault.remember(newer))


def test_misses_while_another_process_refills_the_index_are_busy_not_gone(filled: Path):
    unknown = "01M8RVQ15R0J7WPWZF6EZ2FF9S"
    with Vault.open(filled) as rebuilding, Vault.open(filled) as other:
        with rebuilding._recovery.announced():  # as its reindex or rebuild does
            assert_busy_rebuilding(lambda: other.search({"memory_id": unknown}))
        with pytest.raises(NotFound):
            other.search({"memory_id": unknown})


@pytest.mark.parametrize("also_run_folder", [False, True], ids=["index", "index-and-run"])
def test_an_index_another_process_made_empty_is_busy_until_it_is_filled(
    filled: Path, also_run_folder: bool
):
    # `git clean -xfd` removes the index (and .vault/run with its markers); the next process
    # to open the vault makes an empty index, then fills it. Until it is filled, a miss in
    # any process is "being rebuilt", never "no memory has id".
    with Vault.open(filled) as vault:
        made = wombat(vault)
    with Vault.open(filled) as other:
        shutil.rmtree(filled / ".vault" / "index")
        if also_run_folder:
            shutil.rmtree(filled / ".vault" / "run")
        with Vault.open(filled, catch_up=False) as opening:
            assert_busy_rebuilding(lambda: other.search({"memory_id": made["memory_id"]}))
            opening.catch_up()
            found = other.search({"memory_id": made["memory_id"]})
            assert found["version_id"] == made["version_id"]
            assert "index_catching_up" not in other.search({"query": "wombat"})
