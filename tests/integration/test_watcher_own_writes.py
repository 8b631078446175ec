"""The watcher does no work for the tool's own writes, and is never woken by a read, while
a person's edit made right after a write is taken in like any other. A real watchdog
observer on a real vault; waits are for states, never for times."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from tests.helpers import create_args, eventually, git
from vault_tool.engine.vault import Vault
from vault_tool.watcher import Watcher


@pytest.fixture
def watcher(vault: Vault) -> Iterator[Watcher]:
    watching = Watcher(vault).start()
    assert watching.ready.wait(10)
    yield watching
    watching.stop()


def _calls_from_the_watcher(target: object, name: str) -> list[str]:
    """The calls of target.name made on the watcher's thread, recorded as they come."""
    calls: list[str] = []
    real = getattr(target, name)

    def recorded(*args, **kwargs):
        if threading.current_thread().name == "vault-watcher":
            calls.append(name)
        return real(*args, **kwargs)

    setattr(target, name, recorded)
    return calls


def test_the_tools_own_write_is_known_before_any_intake_work(vault: Vault, watcher: Watcher):
    own = vault._store.repo.own
    checked = _calls_from_the_watcher(vault._intake.hand_edits, "taken_in")
    synced = _calls_from_the_watcher(vault._intake, "sync_paths")
    for n in range(3):
        vault.remember(create_args(f"Written by the tool {n}"))
    eventually(lambda: own.recognised >= 3, what="the watcher saw the three writes as ours")
    assert checked == [] and synced == []


def test_the_tools_write_into_a_new_folder_has_the_watcher_walk_nothing(vault: Vault):
    (vault.root / "people").mkdir()  # a person's folder, there before the watcher
    watching = Watcher(vault).start()
    try:
        assert watching.ready.wait(10)
        rescans = _calls_from_the_watcher(vault, "take_in_offline_changes")
        synced = _calls_from_the_watcher(vault._intake, "sync_paths")
        made = vault.remember(create_args("Written into a new folder"))  # its type's folder
        assert not (vault.root / "people").samefile((vault.root / made["path"]).parent)
        eventually(lambda: vault._store.repo.own.recognised >= 1, what="the new folder looked in")
        # A person's note taken in afterwards: the watcher has finished with the folder.
        (vault.root / "people" / "ana.md").write_text("---\ntitle: Ana\n---\nAna keeps wombats.\n")
        eventually(lambda: vault.search({"query": "wombats"})["selected_hits"] != [])
        assert rescans == []
        assert synced == ["sync_paths"]  # the person's note; the tool's own file is settled
    finally:
        watching.stop()


def test_a_hand_edit_right_after_a_write_is_committed_and_searchable(
    vault: Vault, watcher: Watcher
):
    made = vault.remember(create_args("Ana owns the billing service"))
    file = vault.root / made["path"]
    file.write_text(file.read_text() + "\nWombats added by hand.\n")
    eventually(lambda: vault.search({"query": "wombats"})["selected_hits"] != [])
    eventually(lambda: git(vault.root, "status", "--porcelain") == "")
    assert git(vault.root, "log", "-1", "--format=%s") == (
        "Hand edit: Ana owns the billing service"
    )


def test_a_write_put_back_after_a_persons_own_commit_is_taken_in(vault: Vault, watcher: Watcher):
    # The tool writes A; the person commits B themselves, then puts A's bytes back by hand:
    # HEAD (B) is not the tool's last commit any more, so A is a hand edit to take in.
    made = vault.remember(create_args("Ana owns the billing service"))
    file = vault.root / made["path"]
    ours = file.read_bytes()
    file.write_bytes(ours + b"\nTheirs.\n")
    git(vault.root, "commit", "-qm", "My own edit", "--", made["path"])
    eventually(lambda: vault.search({"query": "theirs"})["selected_hits"] != [])
    file.write_bytes(ours)
    eventually(lambda: git(vault.root, "status", "--porcelain") == "")
    assert git(vault.root, "show", f"HEAD:{made['path']}").encode() == ours.rstrip(b"\n")
    eventually(lambda: vault.search({"query": "theirs"})["selected_hits"] == [])


def test_reading_notes_never_wakes_the_observer(vault: Vault, watcher: Watcher):
    made = vault.remember(create_args("Ana owns the billing service"))
    kinds: list[str] = []
    real = watcher._on_event

    def seen(event):
        kinds.append(event.event_type)
        real(event)

    watcher._on_event = seen  # (the handler calls it through the watcher)
    for _ in range(20):
        (vault.root / made["path"]).read_bytes()
    sentinel = vault.root / made["path"].split("/")[0] / "sentinel.md"
    sentinel.write_text("---\ntitle: Sentinel\n---\n# Sentinel\n\nLast event.\n")
    eventually(lambda: "created" in kinds, what="the sentinel event arrived")
    assert "opened" not in kinds and "closed_no_write" not in kinds
