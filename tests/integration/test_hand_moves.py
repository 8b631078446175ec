"""Moves and deletes made by hand are recorded as what they are: one `Move` commit that keeps
the memory's id (whether a watcher saw it happen or it was found later, and whatever read
ran in between), and a `Delete ... (hand edit)` that names the memory."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.cli_support import invoke
from tests.helpers import create_args, eventually, git
from vault_tool.engine.vault import Vault
from vault_tool.errors import VaultBusy
from vault_tool.watcher import Watcher

TITLE = "Ana owns the billing service"
NOTE = "---\ntitle: {title}\n---\n# {title}\n\n{body}\n"


def commits_since(path: Path, sha: str) -> list[str]:
    return git(path, "log", "--format=%s", f"{sha}..HEAD").splitlines()


def message(path: Path) -> str:
    return git(path, "log", "-1", "--format=%B")


def changed_files(path: Path) -> str:
    return git(path, "show", "--format=", "--name-status", "-M90%", "HEAD")


def rename(root: Path, old: str, new: str) -> None:
    (root / new).parent.mkdir(parents=True, exist_ok=True)
    os.rename(root / old, root / new)


def git_mv(root: Path, old: str, new: str) -> None:
    (root / new).parent.mkdir(parents=True, exist_ok=True)
    git(root, "mv", old, new)


@pytest.fixture(params=["watching", "not_watching"])
def taken_in(request, vault: Vault) -> Iterator[Callable[[Callable[[], None]], None]]:
    """Run a change with a watcher running, or while none runs and one starts afterwards;
    return once the folder is clean again."""
    watchers: list[Watcher] = []

    def run(change: Callable[[], None]) -> None:
        if request.param == "watching":
            watchers.append(Watcher(vault).start())
            assert watchers[-1].ready.wait(10)
            change()
        else:
            change()
            watchers.append(Watcher(vault).start())
            assert watchers[-1].ready.wait(10)
        eventually(lambda: git(vault.root, "status", "--porcelain") == "")

    yield run
    for watcher in watchers:
        watcher.stop()


@pytest.mark.parametrize(
    ("how", "target"),
    [
        (rename, "decision/{month}/ana-runs-billing.md"),
        (rename, "teams/billing/ana.md"),
        (git_mv, "decision/{month}/ana-runs-billing.md"),
        (git_mv, "teams/ana.md"),
    ],
    ids=["rename", "move-across-folders", "git-mv", "git-mv-across-folders"],
)
def test_a_move_is_one_move_commit_that_keeps_the_id(vault, vault_path, taken_in, how, target):
    made = vault.remember(create_args(TITLE))
    old = made["path"]
    new = target.format(month=old.split("/")[1])
    before = git(vault_path, "rev-parse", "HEAD")
    taken_in(lambda: how(vault_path, old, new))
    assert commits_since(vault_path, before) == [f"Move decision: {TITLE} ({old} -> {new})"]
    body = message(vault_path)
    assert f"Memory-Id: {made['memory_id']}" in body
    assert f"Moved-From: {old}" in body
    assert changed_files(vault_path).split("\t")[1:] == [old, new]

    # (The index is updated right after the commit, which may have just made the folder
    # clean: until then a read answers "retry in a moment".)
    def moved() -> bool:
        try:
            return vault.read(made["memory_id"])["path"] == new
        except VaultBusy:
            return False

    eventually(moved)


def test_a_hand_delete_names_the_memory(vault, vault_path, taken_in):
    made = vault.remember(create_args(TITLE))
    before = git(vault_path, "rev-parse", "HEAD")
    taken_in(lambda: (vault_path / made["path"]).unlink())
    assert commits_since(vault_path, before) == [f"Delete decision: {TITLE} (hand edit)"]
    assert f"Memory-Id: {made['memory_id']}" in message(vault_path)


def test_a_move_of_a_file_without_an_id_is_found_by_its_content(vault, vault_path, taken_in):
    note = vault_path / "notes" / "wombat.md"
    note.parent.mkdir()
    body = "\n".join(f"Line {n} about wombats and their burrows." for n in range(30))
    note.write_text(NOTE.format(title="Wombats dig burrows", body=body))
    vault.commit_hand_edits()
    before = git(vault_path, "rev-parse", "HEAD")

    def move_and_touch_one_line() -> None:
        rename(vault_path, "notes/wombat.md", "animals/burrows.md")
        moved = vault_path / "animals" / "burrows.md"
        moved.write_text(moved.read_text().replace("Line 7 about", "Line 7, corrected, about"))

    taken_in(move_and_touch_one_line)
    assert commits_since(vault_path, before) == [
        "Move note: Wombats dig burrows (notes/wombat.md -> animals/burrows.md)"
    ]
    # Its id is its path, so the move gives it a new one; the trailer names the new one and
    # Moved-From the path it had.
    assert "Memory-Id: animals/burrows\n" in message(vault_path)
    assert "Moved-From: notes/wombat.md\n" in message(vault_path)
    assert git(vault_path, "log", "--follow", "-M90%", "--format=%s", "--", "animals/burrows.md")


def test_an_unrelated_delete_and_create_are_not_a_move(vault, vault_path, taken_in):
    old = vault_path / "notes" / "wombat.md"
    old.parent.mkdir()
    old.write_text(NOTE.format(title="Wombats dig burrows", body="Cube-shaped droppings."))
    vault.commit_hand_edits()
    before = git(vault_path, "rev-parse", "HEAD")

    def replace() -> None:
        old.unlink()
        (vault_path / "notes" / "platypus.md").write_text(
            NOTE.format(title="Platypus facts", body="They lay eggs and hunt by electroreception.")
        )

    taken_in(replace)
    assert sorted(commits_since(vault_path, before)) == [
        "Delete note: Wombats dig burrows (hand edit)",
        "Hand edit: Platypus facts",
    ]


def test_two_notes_from_one_template_are_a_delete_and_a_create_not_a_move(
    vault, vault_path, taken_in
):
    template = "".join(f"- [ ] {task}\n" for task in ("standup", "inbox", "review", "plan"))
    template += "".join(f"## {part}\n\n\n" for part in ("Morning", "Afternoon", "Evening"))
    old = vault_path / "daily" / "2026-11-28.md"
    old.parent.mkdir()
    old.write_text(template + "Met Lena.\n")
    vault.commit_hand_edits()
    before = git(vault_path, "rev-parse", "HEAD")

    def next_day() -> None:
        old.unlink()
        (vault_path / "daily" / "2026-12-02.md").write_text(template + "Met Omar.\n")

    taken_in(next_day)
    assert sorted(commits_since(vault_path, before)) == [
        "Delete note: 2026-11-28 (hand edit)",
        "Hand edit: 2026-12-02",
    ]
    # (The watcher drops the index's entry just after the commit: waited for, not raced.)
    eventually(lambda: [d["memory_id"] for d in vault.deleted()] == ["daily/2026-11-28"])


def test_an_offline_rename_read_by_search_before_the_commit_stays_a_move(vault_path):
    with Vault.open(vault_path, client="pytest") as vault:
        made = vault.remember(create_args(TITLE))
    old = made["path"]
    new = "teams/ana.md"
    rename(vault_path, old, new)
    # A CLI read catches the index up with the folder before anything commits the move.
    assert invoke("search", "--vault", vault_path, "billing").exit_code == 0
    done = invoke("commit", "--vault", vault_path)
    assert done.exit_code == 0, done.stdout + done.stderr
    assert git(vault_path, "log", "-1", "--format=%s") == (
        f"Move decision: {TITLE} ({old} -> {new})"
    )
    assert f" Move decision: {TITLE} ({old} -> {new})" in done.stdout
    assert f"Memory-Id: {made['memory_id']}" in message(vault_path)
    assert git(vault_path, "status", "--porcelain") == ""
    with Vault.open(vault_path, client="pytest") as vault:
        history = [c["subject"] for c in vault.history(made["memory_id"])]
        assert history[-1] == f"Create decision: {TITLE}"
        created = git(vault_path, "rev-list", "--max-parents=1", "-1", "--grep=^Create", "HEAD")
        assert {line["version_id"] for line in vault.blame(made["memory_id"])} == {created}
        assert vault.log(memory_type="decision")[0]["subject"].startswith("Move ")


def test_an_offline_delete_read_by_search_before_the_commit_names_the_memory(vault_path):
    with Vault.open(vault_path, client="pytest") as vault:
        made = vault.remember(create_args(TITLE))
    (vault_path / made["path"]).unlink()
    assert invoke("search", "--vault", vault_path, "billing").exit_code == 0
    assert invoke("commit", "--vault", vault_path).exit_code == 0
    assert git(vault_path, "log", "-1", "--format=%s") == f"Delete decision: {TITLE} (hand edit)"
    assert f"Memory-Id: {made['memory_id']}" in message(vault_path)


def test_a_folder_moved_whole_is_one_commit_of_its_moves(vault, vault_path, taken_in):
    for name in ("wombat", "platypus", "echidna"):
        body = "\n".join(f"Line {n} about the {name}." for n in range(20))
        (vault_path / "notes").mkdir(exist_ok=True)
        (vault_path / "notes" / f"{name}.md").write_text(NOTE.format(title=name, body=body))
    vault.commit_hand_edits()
    before = git(vault_path, "rev-parse", "HEAD")
    taken_in(lambda: rename(vault_path, "notes", "archive/notes"))
    assert commits_since(vault_path, before) == ["Hand edit 3 memories"]
    message = git(vault_path, "log", "-1", "--format=%B")
    renames = git(vault_path, "show", "-M", "--name-status", "--format=", "HEAD")
    for name in ("echidna", "platypus", "wombat"):
        assert f"Moved-From: notes/{name}.md" in message
        assert f"R100\tnotes/{name}.md\tarchive/notes/{name}.md" in renames


def test_an_offline_rename_of_a_file_without_an_id_read_by_search_stays_a_move(vault_path):
    (vault_path / "notes").mkdir()
    body = "\n".join(f"Line {n} about wombats." for n in range(20))
    (vault_path / "notes" / "wombat.md").write_text(NOTE.format(title="Wombats", body=body))
    assert invoke("commit", "--vault", vault_path).exit_code == 0
    rename(vault_path, "notes/wombat.md", "notes/wombats.md")
    assert invoke("search", "--vault", vault_path, "wombats").exit_code == 0
    assert invoke("commit", "--vault", vault_path).exit_code == 0
    assert git(vault_path, "log", "-1", "--format=%s") == (
        "Move note: Wombats (notes/wombat.md -> notes/wombats.md)"
    )
    assert git(vault_path, "status", "--porcelain") == ""


@pytest.mark.parametrize("told_of", ["old", "new"])
@pytest.mark.parametrize("with_id", [True, False], ids=["with-id", "without-id"])
def test_one_end_of_a_move_is_enough_to_commit_the_move(vault, vault_path, told_of, with_id):
    # A watcher may hear of a move between two watched folders as two batches.
    if with_id:
        old = vault.remember(create_args(TITLE))["path"]
        subject = f"Move decision: {TITLE}"
    else:
        old = "notes/wombat.md"
        (vault_path / "notes").mkdir()
        (vault_path / old).write_text(NOTE.format(title="Wombats", body="Cube-shaped."))
        vault.commit_hand_edits()
        subject = "Move note: Wombats"
    before = git(vault_path, "rev-parse", "HEAD")
    rename(vault_path, old, "teams/moved.md")
    vault.sync_paths([old if told_of == "old" else "teams/moved.md"])
    assert commits_since(vault_path, before) == [f"{subject} ({old} -> teams/moved.md)"]
    assert git(vault_path, "status", "--porcelain") == ""
    assert vault.at_path(old) is None and vault.at_path("teams/moved.md") is not None
