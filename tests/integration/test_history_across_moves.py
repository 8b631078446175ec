"""history, blame and search --as-of see one memory across its moves: a move in one commit or
in two (the delete seen before the add), with an edit, by `git mv` in a person's own commit."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import create_args, git
from vault_tool.engine.vault import Vault
from vault_tool.errors import NotFound

TITLE = "Ana owns the billing service"


def subjects(vault: Vault, memory_id: str) -> list[str]:
    return [c["subject"] for c in vault.history(memory_id)]


def edit_title(path: Path, new_title: str) -> None:
    text = path.read_text().replace(TITLE, new_title)
    path.write_text(text)


def test_a_memory_deleted_then_put_back_elsewhere_keeps_its_first_commit(
    vault: Vault, vault_path: Path
):
    made = vault.remember(create_args(TITLE), client="agent-one")
    old, new = made["path"], "teams/ana.md"
    kept = (vault_path / old).read_bytes()
    version = vault.read(made["memory_id"])["version_id"]
    vault.remember({"mode": "delete", "memory_id": made["memory_id"],
                    "expected_version_id": version}, client="agent-two")  # fmt: skip
    (vault_path / "teams").mkdir()
    (vault_path / new).write_bytes(kept)  # a person puts it back from a backup, elsewhere
    vault.commit_hand_edits()
    found = vault.history(made["memory_id"])
    assert [c["subject"] for c in found] == [
        f"Hand edit: {TITLE}",
        f"Delete decision: {TITLE}",
        f"Create decision: {TITLE}",
    ]
    assert [c["path"] for c in found] == [new, old, old]
    lines = vault.blame(made["memory_id"])
    assert {line["version_id"] for line in lines} == {made["version_id"]}
    assert {line["client"] for line in lines} == {"agent-one"}


def test_a_move_with_an_edit_keeps_the_first_commit(vault: Vault, vault_path: Path):
    made = vault.remember(create_args(TITLE), client="agent-one")
    old, new = made["path"], "teams/ana.md"
    (vault_path / "teams").mkdir()
    (vault_path / old).rename(vault_path / new)
    edit_title(vault_path / new, "Ana runs billing")
    vault.sync_paths([old, new], commit=True)
    found = subjects(vault, made["memory_id"])
    assert found[-1] == f"Create decision: {TITLE}"
    assert len(found) == 2
    assert {line["version_id"] for line in vault.blame(made["memory_id"])} == {made["version_id"]}


def test_a_persons_git_mv_with_an_edit_in_their_own_commit(vault: Vault, vault_path: Path):
    made = vault.remember(create_args(TITLE), client="agent-one")
    old, new = made["path"], "teams/ana.md"
    (vault_path / "teams").mkdir()
    git(vault_path, "mv", old, new)
    edit_title(vault_path / new, "Ana runs billing")
    git(vault_path, "commit", "-q", "-am", "reorganise")
    vault.catch_up()
    found = vault.history(made["memory_id"])
    assert [c["subject"] for c in found] == ["reorganise", f"Create decision: {TITLE}"]
    assert [c["path"] for c in found] == [new, old]
    shown = vault.show(made["memory_id"], made["version_id"][:10])
    assert shown["path"] == old and TITLE in shown["file"]
    assert {line["version_id"] for line in vault.blame(made["memory_id"])} == {made["version_id"]}


def test_restore_goes_back_to_a_version_from_before_the_move(vault: Vault, vault_path: Path):
    made = vault.remember(create_args(TITLE))
    old, new = made["path"], "teams/ana.md"
    (vault_path / "teams").mkdir()
    (vault_path / old).rename(vault_path / new)
    edit_title(vault_path / new, "Ana runs billing")
    vault.sync_paths([old], commit=True)
    vault.sync_paths([new], commit=True)
    result = vault.restore(made["memory_id"], made["version_id"][:10])
    assert result["path"] == new
    assert vault.read(made["memory_id"])["title"] == TITLE


def test_a_file_without_an_id_is_followed_across_a_rename(vault: Vault, vault_path: Path):
    (vault_path / "notes").mkdir()
    (vault_path / "notes" / "wombat.md").write_text("# Wombats\n\nThey dig burrows.\n")
    vault.commit_hand_edits()
    (vault_path / "notes" / "wombat.md").rename(vault_path / "notes" / "wombats.md")
    vault.commit_hand_edits()
    found = vault.history("notes/wombats")
    assert [c["path"] for c in found] == ["notes/wombats.md", "notes/wombat.md"]


def test_as_of_search_shows_a_memory_once_when_a_copy_was_committed_beside_it(
    vault: Vault, vault_path: Path
):
    # A person copied the file (the move's first half) and committed both; one memory, one id.
    made = vault.remember(create_args(TITLE, body="Wombat burrows are billed monthly."))
    (vault_path / "teams").mkdir()
    (vault_path / "teams" / "ana.md").write_bytes((vault_path / made["path"]).read_bytes())
    git(vault_path, "add", "teams/ana.md")
    git(vault_path, "commit", "-q", "-m", "copy before moving")
    sha = git(vault_path, "rev-parse", "HEAD")
    found = vault.search_as_of({"query": "wombat burrows billed"}, sha)
    assert [h["memory_id"] for h in found["selected_hits"]] == [made["memory_id"]]


def test_the_old_id_of_a_moved_file_without_an_id_names_its_new_id(vault: Vault, vault_path: Path):
    (vault_path / "notes").mkdir()
    (vault_path / "notes" / "wombat.md").write_text("# Wombats\n\nThey dig burrows.\n")
    vault.commit_hand_edits()
    git(vault_path, "mv", "notes/wombat.md", "notes/wombats.md")
    git(vault_path, "commit", "-q", "-m", "rename")
    vault.catch_up()
    with pytest.raises(NotFound) as refused:
        vault.read("notes/wombat")
    assert "its id is now notes/wombats" in refused.value.message
    assert [c["subject"] for c in vault.history("notes/wombats")] == [
        "rename",
        "Hand edit: Wombats",
    ]
    assert vault.deleted() == []


def test_restoring_a_renamed_note_to_an_older_version_titles_it_by_its_name_now(
    vault: Vault, vault_path: Path
):
    # A note without front matter or heading is titled by its file name: the restored
    # version's bytes are read where they go, not where they were.
    (vault_path / "notes").mkdir()
    text = "".join(f"Zebra {n} has stripes of its own.\n" for n in range(12))
    (vault_path / "notes" / "orig-name.md").write_text(text)
    vault.commit_hand_edits()
    first = vault.history("notes/orig-name")[0]["version_id"]
    git(vault_path, "mv", "notes/orig-name.md", "notes/new-name.md")
    vault.commit_hand_edits()
    (vault_path / "notes" / "new-name.md").write_text(text + "Mostly.\n")
    vault.commit_hand_edits()

    vault.restore("notes/new-name", first)

    assert git(vault_path, "log", "-1", "--format=%s").startswith("Restore note: new-name")
    assert vault.read("notes/new-name")["title"] == "new-name"
