"""While a person's git is in the middle of something (a merge, a rebase, a cherry-pick, a
revert, a bisect, a detached HEAD), the vault commits nothing and takes nothing in; conflict
markers are never committed; a vault nested in another is left to itself; a damaged git index
is named with its fix. Every repository here is real, and so is the watcher."""

from __future__ import annotations

import json
import logging
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_support import invoke
from tests.helpers import create_args, eventually, git, reason_of, snapshot
from vault_tool.checks import doctor as doctor_module
from vault_tool.checks import verify as health
from vault_tool.engine.vault import Vault
from vault_tool.errors import InvalidInput, NotFound, VaultBusy, VaultUnavailable
from vault_tool.storage.commits import Committer
from vault_tool.storage.store import Store
from vault_tool.watcher import Watcher

NOTE = "---\nmemory_type: note\ntitle: {title}\n---\n# {title}\n\n{body}\n"
MARKERS = "<<<<<<< HEAD\nThey dig at dusk.\n=======\nThey dig at dawn.\n>>>>>>> other\n"


def attempt(path: Path, *args: str) -> subprocess.CompletedProcess:
    """Run git where it may fail (a conflict stops it): its result, not an exception."""
    return subprocess.run(["git", *args], cwd=path, capture_output=True, text=True)


def edit(file: Path, old: str, new: str) -> None:
    text = file.read_text()
    assert old in text
    file.write_text(text.replace(old, new))


def conflicting_branches(vault: Vault, path: Path) -> dict:
    """A memory, and two branches that change the same line of it: `other` and `main`."""
    made = vault.remember(create_args("Wombats dig burrows", body="They dig at night."))
    file = path / made["path"]
    git(path, "switch", "-q", "-c", "other")
    edit(file, "at night", "at dawn")
    git(path, "commit", "-qam", "Dawn")
    git(path, "switch", "-q", "main")
    edit(file, "at night", "at dusk")
    git(path, "commit", "-qam", "Dusk")
    return made


def titles(vault: Vault, query: str) -> list[str]:
    return [h["title"] for h in vault.search({"query": query, "top_k": 10})["selected_hits"]]


@pytest.fixture
def watched(vault: Vault, caplog: pytest.LogCaptureFixture) -> Iterator[Vault]:
    caplog.set_level(logging.INFO, logger="vault_tool")
    watcher = Watcher(vault).start()
    assert watcher.ready.wait(10)
    yield vault
    watcher.stop()


# --- tool writes are refused, nothing touched ------------------------------------------------


def test_a_write_on_a_detached_head_is_refused_and_lands_after_switching_back(vault, vault_path):
    vault.remember(create_args("Ana owns the billing service"))
    git(vault_path, "checkout", "-q", "HEAD~1")
    before = snapshot(vault_path)
    with pytest.raises(VaultBusy) as refused:
        vault.remember(create_args("Staging needs the VPN"))
    assert "HEAD is detached at" in refused.value.message
    assert "git switch main" in refused.value.hint
    assert snapshot(vault_path) == before
    git(vault_path, "switch", "-q", "main")
    made = vault.remember(create_args("Staging needs the VPN"))
    assert git(vault_path, "log", "-1", "--format=%H", "main") == made["version_id"]


def test_updates_and_deletes_of_a_memory_a_checkout_hid_say_why_they_wait(vault, vault_path):
    # HEAD~1 has no file for this memory, so the version check would say "gone" or
    # "changed": the agent must read that git is busy, and retry later.
    made = vault.remember(create_args("Ana owns the billing service"))
    git(vault_path, "checkout", "-q", "HEAD~1")
    update = {**create_args(), "mode": "update", "memory_id": made["memory_id"],
              "expected_version_id": made["version_id"]}  # fmt: skip
    delete = {"mode": "delete", "memory_id": made["memory_id"],
              "expected_version_id": made["version_id"]}  # fmt: skip
    for call in (update, delete):
        with pytest.raises(VaultBusy, match="HEAD is detached"):
            vault.remember(call)
    with pytest.raises(VaultBusy, match="HEAD is detached"):
        vault.restore(made["memory_id"], made["version_id"])


def test_an_own_write_another_process_reindexed_during_a_checkout_is_read_again(vault, vault_path):
    # This process updates a memory; a person checks out an older commit and back, and
    # meanwhile another process (a CLI command's catch-up) indexes the file as the older
    # commit had it. Back on main the file holds this process's own write again: the
    # watcher must not take "my own commit, HEAD unchanged" for "indexed as it is".
    made = vault.remember(create_args("Ana owns the billing service", "She took it over."))
    read = vault.read(made["memory_id"])
    updated = vault.remember({
        "mode": "update", "memory_id": made["memory_id"], "expected_version_id": read["version_id"],
        "content_md": read["content_md"].replace("took it over", "runs it"),
        "semantic_delta": read["semantic_delta"],
    })  # fmt: skip
    git(vault_path, "checkout", "-q", "--detach", made["version_id"])
    with Vault.open(vault_path, client="cli") as other:  # its catch-up indexes the old file
        assert other.read(made["memory_id"])["version_id"] == made["version_id"]
    git(vault_path, "checkout", "-q", "main")
    assert not vault.settled(made["path"])
    # Until the file is read again, a read says so rather than serve the older version.
    with pytest.raises(VaultBusy, match="changed since the search index read it"):
        vault.read(made["memory_id"])
    vault.sync_paths([made["path"]])
    assert vault.read(made["memory_id"])["version_id"] == updated["version_id"]
    assert "runs it" in vault.read(made["memory_id"])["content_md"]


def test_a_memory_a_checkout_brought_back_is_busy_not_missing_until_read_again(vault, vault_path):
    older = vault.remember(create_args("Ana owns the billing service"))
    made = vault.remember(create_args("Staging needs the VPN"))
    git(vault_path, "checkout", "-q", "--detach", older["version_id"])
    # Another process's catch-up forgets the newer file.
    with Vault.open(vault_path, client="cli") as other, pytest.raises(NotFound):
        other.read(made["memory_id"])
    git(vault_path, "checkout", "-q", "main")
    with pytest.raises(VaultBusy, match="has not read it yet"):
        vault.read(made["memory_id"])
    vault.sync_paths([made["path"]])
    assert vault.read(made["memory_id"])["version_id"] == made["version_id"]


OPERATIONS = {
    # name: (the git command that stops on the conflict, what the refusal says, the way out)
    "merge": (("merge", "other"), "a merge is in progress", "git merge --abort"),
    "rebase": (("rebase", "other"), "a rebase is in progress", "git rebase --abort"),
    "cherry-pick": (
        ("cherry-pick", "other"),
        "a cherry-pick is in progress",
        "git cherry-pick --abort",
    ),
    "revert": (("revert", "--no-edit", "other"), "a revert is in progress", "git revert --abort"),
}


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_writes_wait_while_git_stops_on_a_conflict(vault, vault_path, operation):
    command, said, way_out = OPERATIONS[operation]
    conflicting_branches(vault, vault_path)
    assert attempt(vault_path, *command).returncode != 0
    unmerged = git(vault_path, "ls-files", "-u")
    assert unmerged
    before = snapshot(vault_path)
    with pytest.raises(VaultBusy) as refused:
        vault.remember(create_args("Staging needs the VPN"))
    assert said in refused.value.message
    assert way_out in refused.value.hint
    with pytest.raises(VaultBusy):
        vault.commit_hand_edits()
    assert snapshot(vault_path) == before
    assert git(vault_path, "ls-files", "-u") == unmerged
    git(vault_path, operation, "--abort")
    made = vault.remember(create_args("Staging needs the VPN"))
    assert git(vault_path, "log", "-1", "--format=%H", "main") == made["version_id"]


def test_a_bisect_holds_writes_until_it_is_reset(vault, vault_path):
    vault.remember(create_args("Ana owns the billing service"))
    git(vault_path, "bisect", "start")
    with pytest.raises(VaultBusy) as refused:
        vault.remember(create_args("Staging needs the VPN"))
    assert "a bisect is in progress" in refused.value.message
    assert "git bisect reset" in refused.value.hint
    git(vault_path, "bisect", "reset")
    vault.remember(create_args("Staging needs the VPN"))


def test_unmerged_paths_left_by_a_stash_pop_hold_writes(vault, vault_path):
    made = vault.remember(create_args("Wombats dig burrows", body="They dig at night."))
    file = vault_path / made["path"]
    edit(file, "at night", "at dawn")
    git(vault_path, "stash", "-q")
    edit(file, "at night", "at dusk")
    git(vault_path, "commit", "-qam", "Dusk")
    assert attempt(vault_path, "stash", "pop").returncode != 0
    with pytest.raises(VaultBusy) as refused:
        vault.remember(create_args("Staging needs the VPN"))
    assert made["path"] in refused.value.message and "unmerged" in refused.value.message
    git(vault_path, "checkout", "HEAD", "--", made["path"])  # the person drops the stash's edit
    vault.remember(create_args("Staging needs the VPN"))


# --- conflict markers ------------------------------------------------------------------------


def test_the_tool_never_commits_conflict_markers(vault, vault_path):
    before = snapshot(vault_path)
    with pytest.raises(InvalidInput) as refused:
        vault.remember(create_args("Wombats dig burrows", body=MARKERS))
    assert "conflict markers" in refused.value.message
    assert snapshot(vault_path) == before
    # A setext heading's underline is no conflict.
    vault.remember(create_args("Wombats dig burrows", body="Habits\n=======\n\nThey dig."))


def test_a_hand_made_file_with_conflict_markers_is_a_problem_not_a_commit(watched, vault_path):
    head = git(vault_path, "rev-parse", "HEAD")
    (vault_path / "wombats.md").write_text(NOTE.format(title="Wombats", body=MARKERS))
    eventually(lambda: "conflict markers" in reason_of(watched, "wombats.md"))
    assert git(vault_path, "rev-parse", "HEAD") == head
    assert titles(watched, "dusk dawn") == []
    # Indexing at start-up (catch-up) refuses it the same way.
    watched.reindex()
    assert titles(watched, "dusk dawn") == []


# --- the watcher during a conflicted merge ---------------------------------------------------


def busy_lines(caplog: pytest.LogCaptureFixture, said: str) -> int:
    return sum(said in record.getMessage() for record in caplog.records)


def test_a_running_watcher_leaves_a_conflicted_merge_to_the_person(vault, vault_path, caplog):
    made = conflicting_branches(vault, vault_path)
    caplog.set_level(logging.INFO, logger="vault_tool")
    watcher = Watcher(vault).start()
    try:
        assert watcher.ready.wait(10)
        head = git(vault_path, "rev-parse", "HEAD")
        assert attempt(vault_path, "merge", "other").returncode != 0
        unmerged = git(vault_path, "ls-files", "-u")
        during = vault_path / "during.md"
        during.write_text(NOTE.format(title="Written during the merge", body="Kept."))
        eventually(lambda: busy_lines(caplog, "a merge is in progress") >= 1)
        assert git(vault_path, "rev-parse", "HEAD") == head
        assert git(vault_path, "ls-files", "-u") == unmerged
        assert titles(vault, "dawn") == []  # the markers are not served
        git(vault_path, "merge", "--abort")
        assert "<<<<<<<" not in (vault_path / made["path"]).read_text()
        eventually(lambda: git(vault_path, "log", "-1", "--format=%s") != "Dusk")
        assert git(vault_path, "log", "-1", "--format=%s") == "Hand edit: Written during the merge"
        assert git(vault_path, "rev-parse", "HEAD~1") == head
        assert git(vault_path, "symbolic-ref", "HEAD") == "refs/heads/main"
        eventually(lambda: titles(vault, "kept") == ["Written during the merge"])
        assert "<<<<<<<" not in git(vault_path, "log", "-p", "--all")
        # Said once when it began (not at every retry), once when it was over.
        assert busy_lines(caplog, "a merge is in progress") == 1
        eventually(lambda: busy_lines(caplog, "taking in changes again") == 1)
    finally:
        watcher.stop()


def test_a_merge_concluded_by_the_person_is_taken_in_with_the_edits_made_meanwhile(
    vault, vault_path, caplog
):
    made = conflicting_branches(vault, vault_path)
    caplog.set_level(logging.INFO, logger="vault_tool")
    watcher = Watcher(vault).start()
    try:
        assert watcher.ready.wait(10)
        assert attempt(vault_path, "merge", "other").returncode != 0
        eventually(lambda: busy_lines(caplog, "a merge is in progress") >= 1)
        (vault_path / made["path"]).write_text(
            (vault_path / made["path"]).read_text().replace(MARKERS, "They dig at dusk and dawn.\n")
        )
        git(vault_path, "add", made["path"])
        git(vault_path, "commit", "-q", "--no-edit")
        assert git(vault_path, "log", "-1", "--format=%p").count(" ") == 1  # the merge commit
        eventually(lambda: titles(vault, "dusk dawn") == ["Wombats dig burrows"])
        assert git(vault_path, "status", "--porcelain") == ""
    finally:
        watcher.stop()


def test_a_watcher_started_during_a_merge_waits_for_it(vault, vault_path, caplog):
    conflicting_branches(vault, vault_path)
    head = git(vault_path, "rev-parse", "HEAD")
    assert attempt(vault_path, "merge", "other").returncode != 0
    caplog.set_level(logging.INFO, logger="vault_tool")
    watcher = Watcher(vault).start()
    try:
        assert watcher.ready.wait(10)
        eventually(lambda: busy_lines(caplog, "a merge is in progress") >= 1)
        assert git(vault_path, "rev-parse", "HEAD") == head
        assert not any(r.levelno >= logging.ERROR for r in caplog.records)
        git(vault_path, "merge", "--abort")
        eventually(lambda: busy_lines(caplog, "taking in changes again") == 1)
    finally:
        watcher.stop()


# --- a vault inside the vault ----------------------------------------------------------------


def test_a_nested_vault_is_not_the_outer_vaults(vault_path):
    inner = vault_path / "projects" / "inner"
    Store.init(inner, nested=True).close()
    with Vault.open(inner, client="pytest") as nested:
        made = nested.remember(create_args("Inner memory"))
    with Vault.open(vault_path, client="pytest") as outer:
        assert outer.count() == 0
        assert outer.uncommitted() == []
        head = git(vault_path, "rev-parse", "HEAD")
        relpath = f"projects/inner/{made['path']}"
        edit(vault_path / relpath, "She took it over.", "Edited.")
        report = outer.sync_paths([relpath])
        assert (report.indexed, report.problems) == ([], {})
        assert outer.problems() == {}
        assert git(vault_path, "rev-parse", "HEAD") == head
        assert outer.count() == 0
    assert git(vault_path, "status", "--porcelain") == "?? projects/"


# --- a damaged git index ---------------------------------------------------------------------


def damage_index(vault_path: Path, how: str) -> None:
    index = vault_path / ".git" / "index"
    data = index.read_bytes()
    if how == "garbage":
        index.write_bytes(b"\x57\x34\x29\x47" + data[4:])
    elif how == "truncated":
        index.write_bytes(data[: len(data) // 2])
    else:  # one flipped byte in the middle
        middle = len(data) // 2
        index.write_bytes(data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :])


@pytest.mark.parametrize("how", ["garbage", "truncated", "flipped"])
def test_doctor_fails_on_a_damaged_git_index_and_names_the_fix(vault, vault_path, how):
    vault.remember(create_args("Ana owns the billing service"))
    vault.remember(create_args("Staging needs the VPN"))
    damage_index(vault_path, how)
    with health.Checkup(vault_path) as checkup:
        report = doctor_module.doctor(checkup)
    assert not report.healthy
    found = next(c for c in report.checks if c.name == "git_index")
    assert found.status == "fail" and "rm .git/index && git reset" in found.fix
    done = invoke("doctor", "--vault", str(vault_path), "--json")
    assert done.exit_code == 8, done.stdout + done.stderr
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    assert checks["git_index"]["status"] == "fail"


@pytest.mark.parametrize("how", ["garbage", "truncated", "flipped"])
def test_a_write_on_a_damaged_git_index_names_the_fix_and_commits_nothing(vault, vault_path, how):
    vault.remember(create_args("Ana owns the billing service"))
    head = git(vault_path, "rev-parse", "HEAD")
    damage_index(vault_path, how)
    with pytest.raises(VaultUnavailable) as refused:
        vault.remember(create_args("Staging needs the VPN"))
    assert "rm .git/index && git reset" in refused.value.hint
    assert "doctor" not in refused.value.hint
    assert git(vault_path, "rev-parse", "HEAD") == head
    (vault_path / ".git" / "index").unlink()
    git(vault_path, "reset", "-q")  # the fix it names
    vault.remember(create_args("Staging needs the VPN"))
    with health.Checkup(vault_path) as checkup:
        assert doctor_module.doctor(checkup).healthy


def test_doctor_fails_while_a_merge_is_in_progress_and_names_the_way_out(vault, vault_path):
    conflicting_branches(vault, vault_path)
    assert attempt(vault_path, "merge", "other").returncode != 0
    with health.Checkup(vault_path) as checkup:
        report = doctor_module.doctor(checkup)
    found = next(c for c in report.checks if c.name == "git")
    assert found.status == "fail"
    assert "a merge is in progress" in found.summary and "git merge --abort" in found.fix


def test_a_checkout_begun_after_the_first_ask_never_gets_the_commit(
    vault, vault_path, monkeypatch: pytest.MonkeyPatch
):
    # The person's `git checkout` lands after the write's first look at git's state, just
    # before it takes git's index lock (which no checkout can start without): asked again
    # under that lock, the write is refused whole.
    vault.remember(create_args("Ana owns the billing service"))
    main = git(vault_path, "rev-parse", "main")
    index_locked = Committer._index_locked

    def person_checks_out_first(self, *args, **kwargs):
        git(vault_path, "checkout", "-q", "--detach", "HEAD~1")
        return index_locked(self, *args, **kwargs)

    monkeypatch.setattr(Committer, "_index_locked", person_checks_out_first)
    with pytest.raises(VaultBusy, match="HEAD is detached"):
        vault.remember(create_args("Staging needs the VPN"))
    monkeypatch.undo()
    assert git(vault_path, "rev-parse", "main") == main
    git(vault_path, "switch", "-q", "main")
    assert git(vault_path, "status", "--porcelain") == ""


def test_a_write_refused_under_the_index_lock_leaves_the_persons_merge_abortable(
    vault, vault_path, monkeypatch: pytest.MonkeyPatch
):
    # The person's conflicted `git merge` lands after an update placed its file and before
    # it takes git's index lock: the update is refused and its file put back, and the
    # person's `git merge --abort` must still work (git's index must not be left thinking
    # the put-back file changed).
    other = vault.remember(create_args("Staging needs the VPN"))
    read = vault.read(other["memory_id"])
    conflicting_branches(vault, vault_path)
    index_locked = Committer._index_locked

    def person_merges_first(self, *args, **kwargs):
        assert attempt(vault_path, "merge", "other").returncode != 0
        return index_locked(self, *args, **kwargs)

    monkeypatch.setattr(Committer, "_index_locked", person_merges_first)
    with pytest.raises(VaultBusy, match="unmerged paths"):
        vault.remember({
            "mode": "update", "memory_id": other["memory_id"],
            "expected_version_id": read["version_id"],
            "content_md": read["content_md"].replace("Staging", "Staging really"),
            "semantic_delta": read["semantic_delta"],
        })  # fmt: skip
    monkeypatch.undo()
    aborted = attempt(vault_path, "merge", "--abort")
    assert aborted.returncode == 0, aborted.stderr
    assert git(vault_path, "status", "--porcelain") == ""
