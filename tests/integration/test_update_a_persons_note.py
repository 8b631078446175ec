"""remember update over a note a person wrote, and over a memory a person has edited: no
fact is asked of a memory that holds none, what the file says of itself stays (its dates, its
source, a person's comments and own keys), the path id keeps reading it, and a retitle names
the title it replaced. Real repository, real index."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import create_args, git
from vault_tool.engine.vault import Vault
from vault_tool.errors import InvalidInput


def _hand_commit(vault: Vault, rel: str, text: str) -> None:
    path = vault.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    vault.commit_hand_edits()


def _sent_back(read: dict, content: str, **delta: object) -> dict:
    return {
        "mode": "update",
        "memory_id": read["memory_id"],
        "expected_version_id": read["version_id"],
        "content_md": content,
        "semantic_delta": {**read["semantic_delta"], **delta},
    }


def test_a_note_without_front_matter_keeps_its_date_and_gets_no_source(vault: Vault) -> None:
    _hand_commit(vault, "ideas/garden.md", "# Garden\n\nPlant tomatoes in May.\n")
    read = vault.read("ideas/garden")
    written = vault.remember(
        _sent_back(read, "# Garden\n\nPlant tomatoes in May.\n\nBasil beside them.\n"), "agent"
    )
    assert written["status"] == "updated" and written["memory_id"] != "ideas/garden"
    text = (vault.root / "ideas/garden.md").read_text(encoding="utf-8")
    assert "source:" not in text and "entities" not in text and "facts" not in text
    after = vault.read("ideas/garden")  # the path id still reads it
    assert after["memory_id"] == written["memory_id"]
    assert after["created"] == read["created"]
    assert vault.read(written["memory_id"])["path"] == "ideas/garden.md"


def test_an_update_of_a_memory_that_states_facts_still_states_one(vault: Vault) -> None:
    made = vault.remember(create_args())
    read = vault.read(made["memory_id"])
    with pytest.raises(InvalidInput) as refused:
        vault.remember(_sent_back(read, read["content_md"], entities=[], facts=[]))
    assert refused.value.field == "semantic_delta.facts"
    assert "at least one fact" in refused.value.message
    assert "states 1 fact" in refused.value.hint


def test_a_create_still_states_a_fact(vault: Vault) -> None:
    args = create_args()
    args["semantic_delta"].update(entities=[], facts=[])
    with pytest.raises(InvalidInput) as refused:
        vault.remember(args)
    assert "at least one fact" in refused.value.message
    assert refused.value.field == "semantic_delta.facts"


def test_an_update_keeps_a_persons_comment_and_own_key_in_a_tool_made_memory(
    vault: Vault,
) -> None:
    made = vault.remember(create_args(body="Since March."))
    path = vault.root / made["path"]
    edited = path.read_text(encoding="utf-8").replace(
        "\ncreated:", "\nreviewed_by: Ana  # checked with finance\ncreated:", 1
    )
    path.write_text(edited, encoding="utf-8")
    vault.commit_hand_edits()
    read = vault.read(made["memory_id"])
    vault.remember(_sent_back(read, read["content_md"].rstrip() + "\n\nAnd April.\n"), "agent")
    text = path.read_text(encoding="utf-8")
    assert "reviewed_by: Ana  # checked with finance\n" in text
    assert "source: pytest" in text  # who made it, not who updated it (the commit says that)
    assert "Client: agent" in git(vault.root, "log", "-1", "--format=%B")


def test_a_retitle_names_the_title_it_replaced_and_an_update_in_place_does_not(
    vault: Vault, vault_path: Path
) -> None:
    made = vault.remember(create_args("Ana owns billing", body="Since March."))
    read = vault.read(made["memory_id"])
    vault.remember(_sent_back(read, "# Ana owns billing\n\nSince April.\n"))
    assert git(vault_path, "log", "-1", "--format=%s") == "Update decision: Ana owns billing"
    read = vault.read(made["memory_id"])
    vault.remember(
        _sent_back(read, "# Ana runs billing\n\nSince April.\n", title="Ana runs billing")
    )
    subject = git(vault_path, "log", "-1", "--format=%s")
    assert subject == "Update decision: Ana runs billing (was Ana owns billing)"
