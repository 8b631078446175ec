"""apply_plan: the one-commit primitive behind import, expiry and ontology rewrites."""

from __future__ import annotations

import pytest

from tests.helpers import create_args, git
from vault_tool.core.memory import parse
from vault_tool.core.times import utc_now
from vault_tool.engine.vault import Planned
from vault_tool.errors import VersionConflict


def test_create_rewrite_and_delete_land_in_one_commit(vault, vault_path):
    keep = vault.remember(create_args("Kept memory"))
    gone = vault.remember(create_args("Removed memory"))
    before = int(git(vault_path, "rev-list", "--count", "HEAD"))
    kept = parse((vault_path / keep["path"]).read_text(), keep["path"])
    fresh = kept.with_changes(id="01ARZ3NDEKTSV4RRFFQ69G5FAV", title="Brand new", created=utc_now())
    plan = [
        Planned(keep["path"], kept.with_changes(tags=("renamed",))),
        Planned(gone["path"], None, gone["memory_id"]),
        Planned(vault.path_for(fresh), fresh),
    ]
    result = vault.apply_plan(plan, "Rewrite 3 memories", client="pytest")
    assert int(git(vault_path, "rev-list", "--count", "HEAD")) == before + 1
    assert result.version_id == git(vault_path, "rev-parse", "HEAD")
    assert git(vault_path, "status", "--porcelain") == ""
    body = git(vault_path, "log", "-1", "--format=%B")
    assert body.startswith("Rewrite 3 memories")
    assert f"Memory-Id: {gone['memory_id']}" in body and "Client: pytest" in body
    assert vault.read(keep["memory_id"])["semantic_delta"]["tags"] == ["renamed"]
    assert vault.read("01ARZ3NDEKTSV4RRFFQ69G5FAV")["title"] == "Brand new"
    hits = vault.search({"query": "removed memory"})["selected_hits"]
    assert all(h["memory_id"] != gone["memory_id"] for h in hits)


def test_dry_run_shows_the_diff_and_changes_nothing(vault, vault_path):
    made = vault.remember(create_args("Kept memory"))
    head = git(vault_path, "rev-parse", "HEAD")
    memory = parse((vault_path / made["path"]).read_text(), made["path"])
    result = vault.apply_plan(
        [Planned(made["path"], memory.with_changes(tags=("other",)))], "Retag", dry_run=True
    )
    assert result.version_id is None and result.paths == [made["path"]]
    assert "-  - billing" in result.diff and "+  - other" in result.diff
    assert git(vault_path, "rev-parse", "HEAD") == head


def test_a_plan_touching_a_hand_edited_file_is_refused_whole(vault, vault_path):
    made = vault.remember(create_args("Kept memory"))
    path = vault_path / made["path"]
    memory = parse(path.read_text(), made["path"])
    path.write_text(path.read_text() + "\nA person typed this.\n")
    with pytest.raises(VersionConflict):
        vault.apply_plan([Planned(made["path"], memory.with_changes(tags=("x",)))], "Retag")
    assert path.read_text().endswith("A person typed this.\n")


def test_a_plan_that_changes_no_byte_makes_no_commit(vault, vault_path):
    made = vault.remember(create_args("Kept memory"))
    head = git(vault_path, "rev-parse", "HEAD")
    memory = parse((vault_path / made["path"]).read_text(), made["path"])
    result = vault.apply_plan([Planned(made["path"], memory)], "Nothing")
    assert result.paths == [] and result.version_id is None
    assert git(vault_path, "rev-parse", "HEAD") == head
