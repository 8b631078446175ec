"""A memory whose file does not parse, as an agent meets it: every read says a person must
fix the file, and a write to it is refused with the file's problem, never as a conflict."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import create_args, git
from vault_tool.core import schema
from vault_tool.engine.vault import Vault
from vault_tool.engine.writer import Planned
from vault_tool.errors import UnparseableFile, VaultError, VersionConflict
from vault_tool.server import render, tools


def break_yaml(path: Path) -> str:
    """Break the file's front matter as a slip of a person's hand would; the new text."""
    broken = path.read_text().replace("\ntitle: ", "\ntitle: [", 1)
    path.write_text(broken)
    return broken


def update_args(made: dict, version: str, body: str = "They dig at night.") -> dict:
    return {
        **create_args("Wombats dig burrows", body=body),
        "mode": "update",
        "memory_id": made["memory_id"],
        "expected_version_id": version,
    }


def delete_args(made: dict, version: str) -> dict:
    return {"mode": "delete", "memory_id": made["memory_id"], "expected_version_id": version}


@pytest.fixture
def broken(vault: Vault, vault_path: Path) -> tuple[Vault, dict]:
    """A memory whose file a person has broken (uncommitted), taken in by a sync."""
    made = vault.remember(create_args("Wombats dig burrows", body="Cube-shaped droppings."))
    made["broken"] = break_yaml(vault_path / made["path"])
    vault.sync_paths([made["path"]])
    assert made["path"] in vault.problems()
    return vault, made


def test_a_search_hit_of_a_broken_file_carries_its_problem_and_says_a_person_must_fix_it(
    broken: tuple[Vault, dict],
) -> None:
    vault, made = broken
    result = vault.search({"query": "cube droppings"})
    (hit,) = result["selected_hits"]
    problem = hit["problem"]
    assert problem["file"] == made["path"]
    assert isinstance(problem["line"], int) and problem["line"] > 1
    assert "YAML" in problem["reason"]
    assert schema.errors_of(result, "search.output.schema.json") == []
    text = render.search_text(result)
    assert "a person must fix" in text and made["path"] in text and "last good version" in text


def test_an_addressed_read_of_a_broken_file_carries_its_problem(
    broken: tuple[Vault, dict],
) -> None:
    vault, made = broken
    result = vault.search({"memory_id": made["memory_id"]})
    assert result["problem"]["file"] == made["path"]
    assert "YAML" in result["problem"]["reason"]
    assert schema.errors_of(result, "search.output.schema.json") == []
    text = render.search_text(result)
    assert "a person must fix" in text and "YAML" in text


def test_a_healthy_memory_carries_no_problem(vault: Vault) -> None:
    made = vault.remember(create_args("Wombats dig burrows", body="Cube-shaped droppings."))
    assert "problem" not in vault.search({"query": "cube droppings"})["selected_hits"][0]
    assert "problem" not in vault.search({"memory_id": made["memory_id"]})
    assert "person must fix" not in render.search_text(vault.search({"query": "wombats"}))


@pytest.mark.parametrize("mode", ["update", "delete"])
def test_a_write_to_a_broken_file_is_refused_with_its_problem_not_as_a_conflict(
    broken: tuple[Vault, dict], vault_path: Path, mode: str
) -> None:
    vault, made = broken
    version = vault.search({"memory_id": made["memory_id"]})["version_id"]
    head = git(vault_path, "rev-parse", "HEAD")
    args = update_args(made, version) if mode == "update" else delete_args(made, version)
    with pytest.raises(VaultError) as caught:
        vault.remember(args)
    refused = caught.value
    assert not isinstance(refused, VersionConflict)
    assert isinstance(refused, UnparseableFile)
    assert refused.field == "memory_id"
    assert made["path"] in refused.message and "YAML" in refused.message
    assert "person" in refused.message + refused.hint
    text = tools.refusal(refused).text
    assert "unparseable_file" in text and "YAML" in text
    assert (vault_path / made["path"]).read_text() == made["broken"]  # what the person typed
    assert git(vault_path, "rev-parse", "HEAD") == head


def test_a_broken_file_committed_by_a_person_is_refused_with_its_problem(
    vault: Vault, vault_path: Path
) -> None:
    made = vault.remember(create_args("Wombats dig burrows", body="Cube-shaped droppings."))
    break_yaml(vault_path / made["path"])
    git(vault_path, "commit", "-qam", "broken by hand")
    vault.catch_up()
    hit = vault.search({"query": "cube droppings"})["selected_hits"][0]
    assert "YAML" in hit["problem"]["reason"]
    with pytest.raises(UnparseableFile):
        vault.remember(update_args(made, hit["version_id"]))


def test_once_the_person_fixes_the_file_the_problem_is_gone_and_the_update_goes_through(
    broken: tuple[Vault, dict], vault_path: Path
) -> None:
    vault, made = broken
    path = vault_path / made["path"]
    path.write_text(path.read_text().replace("title: [", "title: ", 1))
    vault.sync_paths([made["path"]])
    read = vault.search({"memory_id": made["memory_id"]})
    assert "problem" not in read
    updated = vault.remember(update_args(made, read["version_id"]))
    assert updated["status"] == "updated"


def test_a_stale_record_of_a_file_put_back_as_indexed_does_not_refuse_the_write(
    broken: tuple[Vault, dict], vault_path: Path
) -> None:
    # The person undid the breakage (git checkout) and nothing has re-read the file yet.
    vault, made = broken
    git(vault_path, "checkout", "--", made["path"])
    assert made["path"] in vault.problems()
    version = vault.search({"memory_id": made["memory_id"]})["version_id"]
    assert vault.remember(update_args(made, version))["status"] == "updated"


def test_a_plan_over_a_broken_file_says_to_fix_it_not_to_commit_it(
    broken: tuple[Vault, dict],
) -> None:
    # `vault-tool commit` cannot take in a file that does not parse, so that way out would loop.
    vault, made = broken
    with pytest.raises(VersionConflict) as caught:
        vault.apply_plan([Planned(made["path"], None, made["memory_id"])], "Delete one")
    assert "YAML" in caught.value.hint and "vault-tool commit" not in caught.value.hint


def test_the_cli_search_says_a_hit_s_file_does_not_parse(broken, vault_path: Path):
    from tests.cli_support import invoke

    vault, made = broken
    line = vault.problems()[made["path"]]["line"]
    done = invoke("search", "wombats", "--vault", vault_path)
    assert done.exit_code == 0, done.stdout + done.stderr
    flat = " ".join(done.stdout.split())
    assert f"{made['path']}:{line} does not parse" in flat and "fix the file" in flat
