"""Hand edits that settle in one quiet period are one commit listing each memory (a rename in
Obsidian rewrites the links of many notes; a `sed` edits many at once), and every memory's
version is that commit; deletes that are no move's are a commit of their own. A file
refused in the same batch (a secret, a broken front matter) is left out, and the others
are still taken in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import eventually, git
from vault_tool.engine.vault import Vault
from vault_tool.errors import VaultError
from vault_tool.watcher import Watcher

NOTE = "---\nmemory_type: note\ntitle: {title}\n---\n# {title}\n\n{body}\n"
NAMES = [f"n{i:02}" for i in range(12)]


def _count(root: Path) -> int:
    return int(git(root, "rev-list", "--count", "HEAD"))


def _notes(root: Path) -> None:
    (root / "notes").mkdir()
    for name in NAMES:
        body = f"Links to [[phoenix]] from {name}."
        (root / "notes" / f"{name}.md").write_text(NOTE.format(title=name.upper(), body=body))
    (root / "notes" / "phoenix.md").write_text(NOTE.format(title="Phoenix", body="The plan."))
    (root / "notes" / "gone.md").write_text(NOTE.format(title="Gone soon", body="Old."))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Notes")


def _rename_everywhere(root: Path) -> None:
    """What a rename in Obsidian does: the note moves, every link to it is rewritten."""
    (root / "notes" / "phoenix.md").rename(root / "notes" / "firebird.md")
    for name in NAMES:
        note = root / "notes" / f"{name}.md"
        note.write_text(note.read_text().replace("[[phoenix]]", "[[firebird]]"))


def test_one_batch_of_hand_edits_is_one_commit_listing_each_memory(vault_path: Path):
    _notes(vault_path)
    with Vault.open(vault_path, client="pytest") as vault:
        vault.catch_up()
        before = _count(vault_path)
        _rename_everywhere(vault_path)
        (vault_path / "notes" / "gone.md").unlink()
        (vault_path / "notes" / "new.md").write_text(NOTE.format(title="New", body="Fresh."))
        (vault_path / "notes" / "leaky.md").write_text(
            NOTE.format(title="Leaky", body="key AKIAIOSFODNN7EXAMPLE here")
        )
        (vault_path / "notes" / "broken.md").write_text("---\ntitle: [unclosed\n---\nText\n")
        report = vault.commit_hand_edits()

        assert _count(vault_path) == before + 2
        assert [c.subject for c in report.commits] == [
            "Delete note: Gone soon (hand edit)",
            "Hand edit 14 memories",
        ]
        sha = report.commits[1].sha
        assert sha == git(vault_path, "rev-parse", "HEAD")
        message = git(vault_path, "log", "-1", "--format=%B")
        for name in NAMES:
            assert f"- note: {name.upper()} (notes/{name})" in message
        assert "- note: Phoenix (notes/firebird)" in message
        assert "- note: New (notes/new)" in message
        assert "Moved-From: notes/phoenix.md" in message
        assert message.rstrip().endswith("Client: hand-edit")
        for name in [*NAMES, "firebird", "new"]:
            assert vault.read(f"notes/{name}")["version_id"] == sha
        # git records the move as a rename; the refused files are neither committed nor lost
        assert "R100\tnotes/phoenix.md\tnotes/firebird.md" in git(
            vault_path, "show", "-M", "--name-status", "--format=", "HEAD"
        )
        assert set(report.kept.values()) == {"secret", "problem"}
        status = git(vault_path, "status", "--porcelain")
        assert "notes/leaky.md" in status and "notes/broken.md" in status
        assert set(vault.problems()) == {"notes/leaky.md", "notes/broken.md"}


def test_one_memory_keeps_its_own_subject(vault_path: Path):
    _notes(vault_path)
    with Vault.open(vault_path, client="pytest") as vault:
        vault.catch_up()
        note = vault_path / "notes" / "n00.md"
        note.write_text(NOTE.format(title="N00", body="Edited."))
        vault.commit_hand_edits()
        assert git(vault_path, "log", "-1", "--format=%s") == "Hand edit: N00"


@pytest.fixture
def watched(vault_path: Path) -> Iterator[Vault]:
    _notes(vault_path)
    vault = Vault.open(vault_path, client="pytest")
    watcher = Watcher(vault).start()
    assert watcher.ready.wait(10)
    yield vault
    watcher.stop()
    vault.close()


def test_a_rename_that_rewrites_links_is_one_commit_under_the_watcher(watched, vault_path):
    before = _count(vault_path)
    _rename_everywhere(vault_path)
    eventually(lambda: git(vault_path, "status", "--porcelain") == "")
    assert _count(vault_path) == before + 1
    assert git(vault_path, "log", "-1", "--format=%s") == "Hand edit 13 memories"
    # A hand edit is committed, then indexed: the index follows HEAD by a moment.
    head = git(vault_path, "rev-parse", "HEAD")
    eventually(lambda: _read_or_none(watched, "notes/firebird") is not None)
    assert watched.read("notes/firebird")["version_id"] == head


def _read_or_none(vault: Vault, memory_id: str) -> dict | None:
    try:
        return vault.read(memory_id)
    except VaultError:  # (NotFound, or VaultBusy while it is taken in)
        return None
