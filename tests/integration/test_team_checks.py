"""The safety nets of a team vault: doctor names a clone whose merge driver git would not
use, bodies a merge left in conflict, values a merge set aside, and ids two files share
after a merge, each with its fix; verify fails on any file that does not parse or holds
conflict markers, and `verify --files` checks a fresh clone (a hook, a CI job) that has no
index. Real git, real index."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_support import invoke
from tests.helpers import create_args, git
from vault_tool.checks import doctor as doctor_module
from vault_tool.checks import verify as verify_module
from vault_tool.checks.checkup import Checkup
from vault_tool.checks.files_only import verify_files
from vault_tool.engine.vault import Vault
from vault_tool.storage import merge_setup

MARKERS = "<<<<<<< ours\nThey dig at dusk.\n=======\nThey dig at dawn.\n>>>>>>> theirs\n"
SET_ASIDE = (
    "merge_conflicts:\n- field: title\n  kept: Wombats dig burrows\n"
    "  set_aside: Wombats dig tunnels\n"
)


def commit_all(path: Path, message: str = "Merge branch 'other'") -> None:
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", message)


def check(path: Path, name: str) -> doctor_module.Check:
    with Checkup(path) as checkup:
        report = doctor_module.doctor(checkup)
    (found,) = [c for c in report.checks if c.name == name]
    return found


def issues(path: Path, *, files_only: bool = False) -> list[verify_module.Issue]:
    with Checkup(path) as checkup:
        if files_only:
            return verify_files(checkup).issues
        return verify_module.verify(checkup).issues


def merged_body(vault: Vault, path: Path) -> dict:
    """A memory whose body a merge committed with conflict markers, caught up with."""
    made = vault.remember(create_args("Wombats dig burrows", body="They dig at night."))
    file = path / made["path"]
    file.write_text(file.read_text().replace("They dig at night.\n", MARKERS))
    commit_all(path)
    vault.catch_up()
    made["line"] = file.read_text().splitlines().index("<<<<<<< ours") + 1
    return made


# --- the merge driver ----------------------------------------------------------------------


def unregister(path: Path) -> None:
    git(path, "config", "--unset-all", f"merge.{merge_setup.DRIVER}.driver")


def test_doctor_names_a_clone_whose_merge_driver_git_does_not_know(vault_path: Path) -> None:
    git_dir = vault_path / ".git"
    merge_setup.register(lambda *a: git(vault_path, *a), git_dir, vault_path)
    assert check(vault_path, "merge_driver").status == "ok"
    unregister(vault_path)
    found = check(vault_path, "merge_driver")
    assert found.status == "warn"
    assert "merge.vault-tool.driver is unset" in found.summary
    assert "git config merge.vault-tool.driver" in found.fix and "merge-driver" in found.fix
    done = invoke("doctor", "--vault", vault_path, "--json")
    (shown,) = [c for c in json.loads(done.stdout)["checks"] if c["name"] == "merge_driver"]
    assert shown["status"] == "warn"


def test_doctor_names_a_clone_whose_attributes_do_not_name_the_driver(vault_path: Path) -> None:
    git_dir = vault_path / ".git"
    merge_setup.register(lambda *a: git(vault_path, *a), git_dir, vault_path)
    for attributes in (vault_path / ".gitattributes", git_dir / "info" / "attributes"):
        if attributes.exists():
            attributes.write_text(attributes.read_text().replace(merge_setup.ATTRIBUTE_LINE, ""))
    found = check(vault_path, "merge_driver")
    assert found.status == "warn" and merge_setup.ATTRIBUTE_LINE in found.summary
    assert merge_setup.ATTRIBUTE_LINE in found.fix


# --- bodies a merge left in conflict ---------------------------------------------------------


def test_doctor_and_verify_report_a_body_a_merge_left_in_conflict(
    vault: Vault, vault_path: Path
) -> None:
    made = merged_body(vault, vault_path)
    found = check(vault_path, "merged_bodies")
    assert found.status == "warn"
    (row,) = found.details
    assert row["path"] == made["path"] and row["line"] == made["line"]
    assert "delete the marker lines" in found.fix
    assert check(vault_path, "files").status == "ok"  # it is taken in, flagged
    (issue,) = issues(vault_path)
    assert (issue.kind, issue.path, issue.line) == ("conflict_markers", made["path"], made["line"])
    done = invoke("verify", "--vault", vault_path)
    assert done.exit_code == 8
    assert "conflict_markers" in done.stdout and "delete the marker lines" in done.stdout
    # A person resolves it: both are healthy again.
    file = vault_path / made["path"]
    file.write_text(file.read_text().replace(MARKERS, "They dig at dusk and at dawn.\n"))
    vault.sync_paths([made["path"]])
    assert check(vault_path, "merged_bodies").status == "ok"
    assert invoke("verify", "--vault", vault_path).exit_code == 0


def test_markers_not_committed_are_a_file_that_cannot_be_taken_in(
    vault: Vault, vault_path: Path
) -> None:
    made = vault.remember(create_args("Wombats dig burrows", body="They dig at night."))
    file = vault_path / made["path"]
    file.write_text(file.read_text().replace("They dig at night.\n", MARKERS))
    vault.sync_paths([made["path"]])
    kinds = {i.kind for i in issues(vault_path)}
    assert kinds == {"conflict_markers"}  # not also "uncommitted": commit would refuse it
    assert check(vault_path, "files").status == "fail"
    assert check(vault_path, "merged_bodies").status == "ok"


# --- values a merge set aside ----------------------------------------------------------------


def test_doctor_lists_values_a_merge_set_aside_for_review(vault: Vault, vault_path: Path) -> None:
    made = vault.remember(create_args("Wombats dig burrows", body="They dig at night."))
    file = vault_path / made["path"]
    file.write_text(file.read_text().replace("\n---\n", "\n" + SET_ASIDE + "---\n", 1))
    commit_all(vault_path)
    vault.catch_up()
    found = check(vault_path, "merge_notes")
    assert found.status == "warn"
    (row,) = found.details
    assert row["path"] == made["path"]
    assert "Wombats dig tunnels" in row["reason"] and "title" in row["reason"]
    assert "merge_conflicts" in found.fix
    assert issues(vault_path) == []  # a note to review is no disagreement


# --- ids two files share after a merge -------------------------------------------------------


def test_doctor_reports_ids_two_files_share_after_a_merge(vault: Vault, vault_path: Path) -> None:
    made = vault.remember(create_args("Wombats dig burrows", body="They dig at night."))
    text = (vault_path / made["path"]).read_text()
    git(vault_path, "switch", "-q", "-c", "other")
    (vault_path / "elsewhere.md").write_text(text.replace("at night", "at dusk"))
    commit_all(vault_path, "Elsewhere")
    git(vault_path, "switch", "-q", "main")
    git(vault_path, "merge", "-q", "--no-edit", "other")
    vault.catch_up()
    found = check(vault_path, "ids")
    assert found.status == "fail"
    assert {r["path"] for r in found.details} == {made["path"], "elsewhere.md"}
    assert made["memory_id"] in found.summary
    assert "id" in found.fix
    assert check(vault_path, "index_drift").status == "ok"
    with_files = {(i.kind, i.path) for i in issues(vault_path, files_only=True)}
    assert with_files == {("duplicate_id", made["path"]), ("duplicate_id", "elsewhere.md")}


# --- verify --files on a fresh clone ---------------------------------------------------------


def test_verify_files_checks_a_fresh_clone_without_an_index(
    vault: Vault, vault_path: Path, tmp_path: Path
) -> None:
    made = vault.remember(create_args("Wombats dig burrows", body="They dig at night."))
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(vault_path), str(clone))
    git(clone, "config", "user.name", "Forge")
    git(clone, "config", "user.email", "forge@example.com")
    done = invoke("verify", "--files", "--vault", clone)
    assert done.exit_code == 0, done.stdout
    assert invoke("verify", "--vault", clone).exit_code == 8  # (no index: index_missing)
    # A merge made in a forge's web UI commits markers: verify --files fails on them.
    file = clone / made["path"]
    file.write_text(file.read_text().replace("They dig at night.\n", MARKERS))
    commit_all(clone)
    done = invoke("verify", "--files", "--vault", clone, "--json")
    assert done.exit_code == 8
    (issue,) = json.loads(done.stdout)["issues"]
    assert issue["kind"] == "conflict_markers" and issue["path"] == made["path"]
    # A front matter that does not parse fails it too.
    file.write_text(file.read_text().replace(MARKERS, "x\n").replace("\ntitle: ", "\ntitle: [", 1))
    commit_all(clone)
    done = invoke("verify", "--files", "--vault", clone, "--json")
    assert [i["kind"] for i in json.loads(done.stdout)["issues"]] == ["unparseable"]
    assert not (clone / ".vault" / "index").exists()  # it only looked
