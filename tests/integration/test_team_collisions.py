"""Files the tool writes never stop a team's sync: two clones writing one work state list,
or creating two memories with the same title in the same month; a repeated write is
answered, not refused."""

from __future__ import annotations

from pathlib import Path

from tests.clones import fact, memory_args, memory_problems, team, tree
from tests.helpers import git
from vault_tool.engine.vault import Vault


def _sync_all(*paths: Path) -> None:
    for path in (*paths, *paths):  # (twice round: the first to sync has the other's last)
        with Vault.open(path, client=path.name) as vault:
            assert vault.team.sync().status in ("synced", "up to date"), path.name


def test_two_clones_writing_one_work_state_list_alike_sync(tmp_path: Path):
    _, (a_path, b_path) = team(tmp_path)
    for path, second in ((a_path, "01"), (b_path, "02")):
        with Vault.open(path, client=path.name) as vault:
            vault.work_state.write("todo", ["ship docs", "test hooks"], "ops", client=path.name)
        # Written in different seconds (set here, not waited for): the `updated` lines differ.
        written = path / "state/ops/todo.yaml"
        text = written.read_text(encoding="utf-8")
        at = text.index("updated: ") + len("updated: ")
        written.write_text(text[:at] + f"2026-12-07T10:00:{second}Z" + text[at + 20 :])
        git(path, "commit", "--quiet", "-am", "Work state: ops/todo (2 items)")
    _sync_all(a_path, b_path)
    assert tree(a_path) == tree(b_path)
    with Vault.open(b_path) as b:
        listed = b.work_state.read("todo", "ops")
        assert listed["items"] == ["ship docs", "test hooks"]
        assert listed["updated"] == "2026-12-07T10:00:02Z"


def test_two_clones_changing_one_work_state_list_keep_both_changes(tmp_path: Path):
    _, (a_path, b_path) = team(tmp_path)
    with Vault.open(a_path, client="a") as a:
        a.work_state.write("todo", ["ship docs", "test hooks"], "ops", client="a")
    _sync_all(a_path, b_path)
    with Vault.open(a_path, client="a") as a:
        a.work_state.write("todo", ["test hooks", "tag release"], "ops", client="a")
    with Vault.open(b_path, client="b") as b:
        b.work_state.write("todo", ["ship docs", "test hooks", "fix CI"], "ops", client="b")
    _sync_all(a_path, b_path)
    with Vault.open(a_path) as a:
        assert sorted(a.work_state.read("todo", "ops")["items"]) == [
            "fix CI",
            "tag release",
            "test hooks",
        ]
    assert tree(a_path) == tree(b_path)


def test_a_work_state_write_repeated_at_once_is_unchanged_not_refused(vault: Vault):
    first = vault.work_state.write("todo", ["ship docs"], "ops", client="agent")
    again = vault.work_state.write("todo", ["ship docs"], "ops", client="agent")
    assert (first["status"], again["status"]) == ("written", "unchanged")
    assert again["version_id"] == first["version_id"] == vault.head()
    assert again["replaced"] == 1


def test_two_clones_creating_one_title_in_one_month_keep_both_memories(tmp_path: Path):
    _, (a_path, b_path) = team(tmp_path)
    made = {}
    for path, owner in ((a_path, "Ana"), (b_path, "Ben")):
        with Vault.open(path, client=path.name) as vault:
            made[owner] = vault.remember(
                memory_args(
                    "Staging deploys",
                    f"# Staging deploys\n\n{owner} deploys staging on Fridays.\n",
                    [fact(owner, "deploys", "staging")],
                    ["infra"],
                )
            )
    assert made["Ana"]["path"] == made["Ben"]["path"]
    _sync_all(a_path, b_path)
    assert tree(a_path) == tree(b_path)
    assert memory_problems(a_path) == []
    with Vault.open(b_path) as b:
        for owner in ("Ana", "Ben"):
            found = b.read(made[owner]["memory_id"])
            assert f"{owner} deploys staging" in found["content_md"], owner
    assert git(a_path, "status", "--porcelain") == ""


def test_a_work_state_write_from_a_stale_read_is_refused_and_loses_nothing(vault: Vault):
    from vault_tool.errors import VersionConflict

    vault.work_state.write("todo", ["ship docs"], "ops", client="agent")
    read = vault.work_state.read("todo", "ops")
    vault.work_state.write("todo", ["ship docs", "fix CI"], "ops", client="other")
    try:
        vault.work_state.write(
            "todo", ["ship docs", "tag"], "ops", client="agent",
            expected_version_id=read["version_id"],
        )  # fmt: skip
    except VersionConflict as refused:
        assert refused.current_version_id == vault.head()
    else:
        raise AssertionError("a write from a stale read replaced the list")
    assert vault.work_state.read("todo", "ops")["items"] == ["ship docs", "fix CI"]
