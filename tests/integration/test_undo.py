"""Undo: a deleted memory is listed by `deleted`, its history and versions stay readable, and
`restore` brings it back (same id, same content) in one commit; an agent that asks for it
is told when and by whom it was deleted, and that a person can restore it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_support import invoke, invoke_json
from tests.helpers import create_args, git, snapshot
from vault_tool.engine.vault import Vault
from vault_tool.engine.writer import Planned
from vault_tool.errors import InvalidInput, NotFound
from vault_tool.server.tools import run_tool

TITLE = "Ana owns the billing service"


def delete(vault: Vault, memory_id: str, client: str = "agent-one") -> dict:
    version = vault.read(memory_id)["version_id"]
    args = {"mode": "delete", "memory_id": memory_id, "expected_version_id": version}
    return vault.remember(args, client=client)


@pytest.fixture
def gone(vault: Vault, vault_path: Path) -> dict:
    """A memory created, updated once, then deleted by an agent: what it was, and its bytes."""
    made = vault.remember(create_args(TITLE), client="agent-one")
    updated = vault.remember(
        {
            "mode": "update",
            "memory_id": made["memory_id"],
            "expected_version_id": made["version_id"],
            "content_md": f"# {TITLE}\n\nShe took it over in May.\n",
            "semantic_delta": create_args(TITLE)["semantic_delta"],
        },
        client="agent-one",
    )
    data = (vault_path / made["path"]).read_bytes()
    deleted = delete(vault, made["memory_id"], client="agent-two")
    return {**made, "last_version": updated["version_id"], "bytes": data, "deleted": deleted}


def test_deleted_lists_a_memory_an_agent_deleted(vault: Vault, gone: dict):
    listed = vault.deleted()
    assert [entry["memory_id"] for entry in listed] == [gone["memory_id"]]
    entry = listed[0]
    assert entry["title"] == TITLE
    assert entry["memory_type"] == "decision"
    assert entry["path"] == gone["path"]
    assert entry["client"] == "agent-two"
    assert entry["deleted_in"] == gone["deleted"]["version_id"]
    assert entry["last_version"] == gone["last_version"]
    assert entry["date"]


def test_history_show_and_blame_work_for_a_deleted_id(vault: Vault, gone: dict):
    subjects = [c["subject"] for c in vault.history(gone["memory_id"])]
    assert subjects == [f"Delete decision: {TITLE}", f"Update decision: {TITLE}",
                        f"Create decision: {TITLE}"]  # fmt: skip
    shown = vault.show(gone["memory_id"], gone["version_id"][:8])
    assert shown["version_id"] == gone["version_id"]
    assert "She took it over." in shown["file"]
    last = vault.show(gone["memory_id"])
    assert last["file"].encode() == gone["bytes"]
    assert last["deleted"]["deleted_in"] == gone["deleted"]["version_id"]
    assert {line["version_id"] for line in vault.blame(gone["memory_id"])} == {gone["version_id"]}


def test_restore_brings_a_deleted_memory_back_with_its_id_and_content(
    vault: Vault, vault_path: Path, gone: dict
):
    before = int(git(vault_path, "rev-list", "--count", "HEAD"))
    result = vault.restore(gone["memory_id"])
    assert int(git(vault_path, "rev-list", "--count", "HEAD")) == before + 1
    assert git(vault_path, "log", "-1", "--format=%s").startswith(f"Restore decision: {TITLE}")
    assert f"Memory-Id: {gone['memory_id']}" in git(vault_path, "log", "-1", "--format=%B")
    assert result["memory_id"] == gone["memory_id"]
    assert (vault_path / result["path"]).read_bytes() == gone["bytes"]
    assert vault.read(gone["memory_id"])["version_id"] == result["version_id"]
    assert vault.deleted() == []
    assert git(vault_path, "status", "--porcelain") == ""
    # Its history runs on across the delete and the restore.
    subjects = [c["subject"] for c in vault.history(gone["memory_id"])]
    assert subjects[0].startswith("Restore decision:")
    assert subjects[-1] == f"Create decision: {TITLE}"


def test_restore_of_a_deleted_memory_to_an_older_version(vault: Vault, gone: dict):
    vault.restore(gone["memory_id"], gone["version_id"][:10])
    assert "She took it over." in vault.read(gone["memory_id"])["content_md"]


def test_restore_of_a_deleted_memory_whose_place_is_taken_goes_elsewhere(
    vault: Vault, vault_path: Path, gone: dict
):
    (vault_path / gone["path"]).write_text("# Someone else's note\n\nOther words.\n")
    vault.commit_hand_edits()
    result = vault.restore(gone["memory_id"])
    assert result["path"] != gone["path"]
    assert (vault_path / result["path"]).read_bytes() == gone["bytes"]
    assert (vault_path / gone["path"]).read_text().startswith("# Someone else's note")


def test_a_hand_deleted_memory_is_listed_and_restored(vault: Vault, vault_path: Path):
    made = vault.remember(create_args(TITLE), client="agent-one")
    data = (vault_path / made["path"]).read_bytes()
    (vault_path / made["path"]).unlink()
    vault.commit_hand_edits()
    assert [e["memory_id"] for e in vault.deleted()] == [made["memory_id"]]
    vault.restore(made["memory_id"])
    assert (vault_path / made["path"]).read_bytes() == data


def test_a_file_deleted_by_a_persons_own_commit_is_listed(vault: Vault, vault_path: Path):
    (vault_path / "notes").mkdir()
    (vault_path / "notes" / "wombat.md").write_text("# Wombats\n\nThey dig burrows.\n")
    vault.commit_hand_edits()
    git(vault_path, "rm", "-q", "notes/wombat.md")
    git(vault_path, "commit", "-q", "-m", "tidy up")
    vault.catch_up()
    listed = vault.deleted()
    assert [(e["memory_id"], e["title"], e["client"]) for e in listed] == [
        ("notes/wombat", "Wombats", None)
    ]
    vault.restore("notes/wombat")
    assert vault.read("notes/wombat")["title"] == "Wombats"


def test_memories_deleted_together_are_each_listed_by_their_own_file(
    vault: Vault, vault_path: Path
):
    first = vault.remember(create_args("Wombats dig burrows"))
    second = vault.remember(create_args("Platypus lay eggs"))
    plan = [Planned(m["path"], None, m["memory_id"]) for m in (first, second)]
    vault.apply_plan(plan, "Tidy 2 memories", client="tidier")
    listed = {e["memory_id"]: e for e in vault.deleted()}
    assert set(listed) == {first["memory_id"], second["memory_id"]}
    assert listed[first["memory_id"]]["title"] == "Wombats dig burrows"
    assert listed[second["memory_id"]]["title"] == "Platypus lay eggs"
    assert {e["client"] for e in listed.values()} == {"tidier"}
    assert listed[second["memory_id"]]["last_version"] == second["version_id"]


def test_the_version_that_deleted_a_memory_cannot_be_shown_or_restored(
    vault: Vault, vault_path: Path, gone: dict
):
    before = snapshot(vault_path)
    deleting = gone["deleted"]["version_id"]
    with pytest.raises(NotFound) as refused:
        vault.show(gone["memory_id"], deleting)
    assert "history" in refused.value.hint
    with pytest.raises(NotFound):
        vault.restore(gone["memory_id"], deleting)
    assert snapshot(vault_path) == before


def test_a_move_is_not_a_deletion(vault: Vault, vault_path: Path):
    made = vault.remember(create_args(TITLE))
    (vault_path / "teams").mkdir()
    (vault_path / made["path"]).rename(vault_path / "teams" / "ana.md")
    vault.commit_hand_edits()
    assert vault.deleted() == []


def test_restore_of_a_live_memory_needs_a_version(vault: Vault):
    made = vault.remember(create_args(TITLE))
    with pytest.raises(InvalidInput) as refused:
        vault.restore(made["memory_id"])
    assert "history" in refused.value.hint


def test_an_agents_read_of_a_deleted_id_says_when_by_whom_and_how_to_undo(vault: Vault, gone: dict):
    outcome = run_tool(vault, "search", {"memory_id": gone["memory_id"]}, client="agent-three")
    assert outcome.is_error
    error = outcome.structured["error"]
    assert error["code"] == "not_found"
    assert "deleted" in error["message"]
    assert "agent-two" in error["message"]
    assert gone["deleted"]["version_id"][:10] in error["message"]
    assert f"vault-tool restore {gone['memory_id']}" in error["hint"]
    # An update of it is refused with the same account.
    with pytest.raises(NotFound) as refused:
        vault.remember(
            {
                "mode": "update",
                "memory_id": gone["memory_id"],
                "expected_version_id": gone["last_version"],
                "content_md": f"# {TITLE}\n\nAgain.\n",
                "semantic_delta": create_args(TITLE)["semantic_delta"],
            }
        )
    assert "deleted" in refused.value.message


def test_an_unknown_id_is_still_plainly_not_found(vault: Vault):
    with pytest.raises(NotFound) as refused:
        vault.history("01ARZ3NDEKTSV4RRFFQ69G5FAV")
    assert "no memory has id" in refused.value.message


def test_cli_delete_deleted_restore_round_trip(vault_path: Path):
    with Vault.open(vault_path, client="pytest") as vault:
        made = vault.remember(create_args(TITLE), client="agent-one")
        data = (vault_path / made["path"]).read_bytes()
        delete(vault, made["memory_id"])
    listed = invoke("deleted", "--vault", vault_path)
    assert listed.exit_code == 0, listed.stdout + listed.stderr
    assert made["memory_id"] in listed.stdout and "agent-one" in listed.stdout
    assert TITLE in " ".join(listed.stdout.split())  # the whole title, even at 80 columns
    as_json = invoke_json("deleted", "--vault", vault_path)
    assert [e["memory_id"] for e in as_json] == [made["memory_id"]]
    assert invoke("history", made["memory_id"], "--vault", vault_path).exit_code == 0
    shown = invoke("show", made["memory_id"], "--version", made["version_id"][:8],
                   "--vault", vault_path)  # fmt: skip
    assert shown.exit_code == 0 and TITLE in shown.stdout
    restored = invoke("restore", made["memory_id"], "--vault", vault_path)
    assert restored.exit_code == 0, restored.stdout + restored.stderr
    assert "Restored" in restored.stdout
    assert (vault_path / made["path"]).read_bytes() == data
    assert json.loads(invoke("deleted", "--vault", vault_path, "--json").stdout) == []
