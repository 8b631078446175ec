"""A memory a merge committed with conflict markers in its body (the front matter whole) is
indexed, searchable and flagged until a person, or an agent's update, resolves it. Markers
git leaves in the working tree (a merge or `git stash pop` stopped half-way) and markers in
the front matter are never committed and stay a problem. Real git, index and watcher."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import create_args, eventually, git, reason_of, snapshot
from vault_tool.core import schema
from vault_tool.engine.vault import Vault
from vault_tool.errors import InvalidInput
from vault_tool.server import render
from vault_tool.storage.repo_state import markers_in_front_matter
from vault_tool.watcher import Watcher

MARKERS = (
    "<<<<<<< ours\nThey dig at dusk.\n||||||| base\nThey dig at night.\n=======\n"
    "They dig at dawn.\n>>>>>>> theirs\n"
)
FLAG_REASON = "its body holds merge conflict markers from a merge"


def commit_as_a_merge_would(path: Path, file: str, text: str) -> str:
    """Commit text as file with plain git (what `vault-tool sync` does with a conflicted
    body): the new HEAD."""
    (path / file).write_text(text)
    git(path, "add", file)
    git(path, "commit", "-q", "-m", "Merge branch 'other'")
    return git(path, "rev-parse", "HEAD")


def marked(text: str) -> str:
    """The memory's text with its body's last paragraph in conflict."""
    assert "They dig at night.\n" in text
    return text.replace("They dig at night.\n", MARKERS)


def marker_line(text: str) -> int:
    return text.splitlines().index("<<<<<<< ours") + 1


def hit_of(vault: Vault, query: str) -> dict:
    (hit,) = vault.search({"query": query})["selected_hits"]
    return hit


def update_args(made: dict, version: str, body: str) -> dict:
    return {
        **create_args("Wombats dig burrows", body=body),
        "mode": "update",
        "memory_id": made["memory_id"],
        "expected_version_id": version,
    }


@pytest.fixture
def flagged(vault: Vault, vault_path: Path) -> tuple[Vault, dict]:
    """A memory whose body a merge committed with conflict markers, caught up with."""
    made = vault.remember(create_args("Wombats dig burrows", body="They dig at night."))
    text = marked((vault_path / made["path"]).read_text())
    made["merged"] = commit_as_a_merge_would(vault_path, made["path"], text)
    made["line"] = marker_line(text)
    vault.catch_up()
    return vault, made


@pytest.fixture
def watched(vault: Vault, caplog: pytest.LogCaptureFixture) -> Iterator[Vault]:
    caplog.set_level(logging.INFO, logger="vault_tool")
    watcher = Watcher(vault).start()
    assert watcher.ready.wait(10)
    yield vault
    watcher.stop()


def test_a_committed_body_with_markers_is_searchable_and_its_hits_are_flagged(
    flagged: tuple[Vault, dict],
) -> None:
    vault, made = flagged
    result = vault.search({"query": "dusk dawn"})
    (hit,) = result["selected_hits"]
    assert hit["memory_id"] == made["memory_id"] and hit["version_id"] == made["merged"]
    assert "They dig at dawn." in hit["content_md"]
    problem = hit["problem"]
    assert problem["file"] == made["path"] and problem["line"] == made["line"]
    assert problem["reason"] == FLAG_REASON
    assert "delete the marker lines" in problem["hint"] and "commits" in problem["hint"]
    assert schema.errors_of(result, "search.output.schema.json") == []
    read = vault.search({"memory_id": made["memory_id"]})
    assert read["problem"]["reason"] == FLAG_REASON
    # What an agent reads: the conflict is its to resolve by an update, not a broken file.
    for text in (render.search_text(result), render.search_text(read)):
        assert "Flagged" in text and FLAG_REASON in text
        assert "last good version" not in text and "refuses" not in text
    assert "To resolve its conflict, call remember" in render.search_text(read)


def test_the_flag_stays_while_the_file_is_read_again_unchanged(
    flagged: tuple[Vault, dict],
) -> None:
    vault, made = flagged
    report = vault.sync_paths([made["path"]])  # (a watcher's event: a touch, a checkout)
    assert report.commits == []
    assert reason_of(vault, made["path"]) == FLAG_REASON
    vault.take_in_offline_changes()
    assert hit_of(vault, "dusk dawn")["problem"]["reason"] == FLAG_REASON


def test_a_fresh_index_of_the_clone_flags_it_too(
    flagged: tuple[Vault, dict], vault_path: Path
) -> None:
    vault, made = flagged
    vault.reindex()
    assert hit_of(vault, "dusk dawn")["problem"]["line"] == made["line"]


def test_a_sync_reading_the_merged_paths_again_flags_it(vault: Vault, vault_path: Path) -> None:
    made = vault.remember(create_args("Wombats dig burrows", body="They dig at night."))
    text = marked((vault_path / made["path"]).read_text())
    merged = commit_as_a_merge_would(vault_path, made["path"], text)
    report = vault.sync_paths([made["path"]], commit=False)  # (as `vault-tool sync` does)
    assert report.flagged[made["path"]]["line"] == marker_line(text)
    hit = hit_of(vault, "dusk dawn")
    assert hit["version_id"] == merged and hit["problem"]["reason"] == FLAG_REASON


def test_the_watcher_takes_in_a_merged_body_without_a_commit_and_a_resolution_clears_it(
    watched: Vault, vault_path: Path
) -> None:
    made = watched.remember(create_args("Wombats dig burrows", body="They dig at night."))
    file = vault_path / made["path"]
    merged = commit_as_a_merge_would(vault_path, made["path"], marked(file.read_text()))
    eventually(lambda: reason_of(watched, made["path"]) == FLAG_REASON)
    eventually(lambda: watched.search({"query": "dusk dawn"})["selected_hits"])
    assert hit_of(watched, "dusk dawn")["problem"]["reason"] == FLAG_REASON
    assert git(vault_path, "rev-parse", "HEAD") == merged  # nothing committed over it
    # A person keeps the right lines and deletes the marker lines: committed as any edit.
    file.write_text(file.read_text().replace(MARKERS, "They dig at dusk and at dawn.\n"))
    eventually(lambda: git(vault_path, "rev-parse", "HEAD") != merged)
    assert git(vault_path, "log", "-1", "--format=%s") == "Hand edit: Wombats dig burrows"
    eventually(lambda: "problem" not in hit_of(watched, "dusk dawn"))
    # (the index is written before the list of problems: wait for both)
    eventually(lambda: reason_of(watched, made["path"]) == "")
    assert "<<<<<<<" not in git(vault_path, "show", "HEAD:" + made["path"])


def test_an_update_with_a_resolved_body_succeeds_and_clears_the_flag(
    flagged: tuple[Vault, dict], vault_path: Path
) -> None:
    vault, made = flagged
    done = vault.remember(update_args(made, made["merged"], "They dig at dusk and at dawn."))
    assert done["status"] == "updated"
    assert "<<<<<<<" not in (vault_path / made["path"]).read_text()
    hit = hit_of(vault, "dusk dawn")
    assert "problem" not in hit and hit["version_id"] == done["version_id"]
    assert "problem" not in vault.search({"memory_id": made["memory_id"]})
    assert reason_of(vault, made["path"]) == ""


def test_an_update_that_keeps_the_markers_is_refused_naming_the_fix(
    flagged: tuple[Vault, dict], vault_path: Path
) -> None:
    vault, made = flagged
    before = snapshot(vault_path)
    body = MARKERS.removesuffix("\n")
    with pytest.raises(InvalidInput) as refused:
        vault.remember(update_args(made, made["merged"], body))
    assert refused.value.field == "content_md"
    message = refused.value.message
    assert "conflict markers" in message and made["memory_id"] in message
    assert "delete the marker lines" in refused.value.hint
    assert snapshot(vault_path) == before
    assert hit_of(vault, "dusk dawn")["problem"]["reason"] == FLAG_REASON


def test_a_delete_of_a_flagged_memory_is_allowed(flagged: tuple[Vault, dict]) -> None:
    vault, made = flagged
    done = vault.remember(
        {"mode": "delete", "memory_id": made["memory_id"], "expected_version_id": made["merged"]}
    )
    assert done["status"] == "deleted"
    assert vault.search({"query": "dusk dawn"})["selected_hits"] == []
    assert reason_of(vault, made["path"]) == ""


def test_markers_in_the_front_matter_stay_unparseable_and_unserved(
    vault: Vault, vault_path: Path
) -> None:
    made = vault.remember(create_args("Wombats dig burrows", body="They dig at night."))
    file = vault_path / made["path"]
    text = file.read_text().replace(
        "tags:\n", "<<<<<<< ours\ntags:\n- dusk\n=======\ntags:\n- dawn\n>>>>>>> theirs\ntags:\n"
    )
    assert text != file.read_text()
    commit_as_a_merge_would(vault_path, made["path"], text)
    vault.catch_up()
    assert "holds merge conflict markers" in reason_of(vault, made["path"])
    assert reason_of(vault, made["path"]) != FLAG_REASON
    # The last good version stays searchable, carrying the problem.
    hit = hit_of(vault, "wombats night")
    assert hit["version_id"] == made["version_id"] and "problem" in hit


def test_markers_a_stopped_merge_left_uncommitted_are_a_problem_never_committed(
    vault: Vault, vault_path: Path
) -> None:
    made = vault.remember(create_args("Wombats dig burrows", body="They dig at night."))
    file = vault_path / made["path"]
    head = git(vault_path, "rev-parse", "HEAD")
    file.write_text(marked(file.read_text()))  # as `git stash pop` leaves it, once `git add`ed
    report = vault.sync_paths([made["path"]])
    assert report.commits == [] and git(vault_path, "rev-parse", "HEAD") == head
    reason = reason_of(vault, made["path"])
    assert "conflict markers" in reason and reason != FLAG_REASON
    vault.catch_up()
    assert hit_of(vault, "wombats night")["version_id"] == made["version_id"]
    assert vault.search({"query": "dawn"})["selected_hits"] == []


@pytest.mark.parametrize(
    ("text", "in_front_matter"),
    [
        (f"---\ntitle: A\n---\n# A\n\n{MARKERS}", False),
        (f"# A\n\n{MARKERS}", False),  # no front matter: all body
        (f"---\n{MARKERS}title: A\n---\n# A\n", True),
        (f"\ufeff---\ntags:\n{MARKERS}---\n# A\n", True),
        (f"---\ntitle: A\n{MARKERS}# never closed\n", True),
        ("---\ntitle: A\n---\n# A\n\nHabits\n=======\n", False),
    ],
)
def test_markers_are_told_in_a_front_matter_from_markers_in_a_body(
    text: str, in_front_matter: bool
) -> None:
    assert markers_in_front_matter(text.encode()) is in_front_matter
