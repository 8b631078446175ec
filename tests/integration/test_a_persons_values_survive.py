"""A person's own values in a note survive every change the tool makes to one field:
a team's merge (tags as written, a file named like an option) and dismiss/undismiss."""

from __future__ import annotations

from pathlib import Path

from tests.clones import memory_problems, team
from tests.helpers import git
from vault_tool.core.hand_made import tag_values
from vault_tool.core.yaml_safe import load_yaml
from vault_tool.engine.vault import Vault
from vault_tool.storage import merge_setup

NOTE = """---
title: Trip to Kyoto
status: draft  # still planning
tags: [Travel, 日本]
---
# Trip to Kyoto

Book the ryokan in March.
"""


def _front(path: Path) -> dict:
    return load_yaml(path.read_text(encoding="utf-8").split("---\n")[1], path.name)


def _hand_commit(path: Path, rel: str, text: str) -> None:
    (path / rel).write_text(text, encoding="utf-8")
    with Vault.open(path, client=path.name) as vault:
        vault.commit_hand_edits()


def _both_edit_and_sync(tmp_path: Path, rel: str, edit_a, edit_b) -> tuple[Path, Path]:
    _, (a_path, b_path) = team(tmp_path)
    _hand_commit(a_path, rel, NOTE)
    with Vault.open(a_path, client="a") as a:
        assert a.team.sync().status == "synced"
    with Vault.open(b_path, client="b") as b:
        assert b.team.sync().status == "synced"
    _hand_commit(a_path, rel, edit_a(NOTE))
    _hand_commit(b_path, rel, edit_b(NOTE))
    with Vault.open(a_path, client="a") as a:
        assert a.team.sync().status == "synced"
    return a_path, b_path


def test_a_merge_keeps_every_tag_as_a_side_wrote_it_non_ascii_and_case_included(tmp_path: Path):
    rel = "trip.md"
    a_path, b_path = _both_edit_and_sync(
        tmp_path,
        rel,
        lambda text: text.replace("[Travel, 日本]", "[Travel, 日本, urgent]"),
        lambda text: text.replace("[Travel, 日本]", "[Travel, 日本, Kyoto]"),
    )
    for path in (b_path, a_path):
        with Vault.open(path, client=path.name) as clone:
            assert clone.team.sync().status == "synced"
    for path in (a_path, b_path):
        tags = tag_values(_front(path / rel)["tags"])
        assert sorted(tags) == sorted(["Travel", "日本", "urgent", "Kyoto"]), path.name
        assert _front(path / rel)["status"] == "draft"
    assert memory_problems(b_path) == []


def test_a_file_named_like_an_option_is_merged_by_the_driver_not_read_as_help(tmp_path: Path):
    rel = "-how-we-deploy.md"
    _, b_path = _both_edit_and_sync(
        tmp_path,
        rel,
        lambda text: text.replace("[Travel, 日本]", "[Travel, 日本, urgent]"),
        lambda text: text.replace("[Travel, 日本]", "[Travel, 日本, Kyoto]"),
    )
    git(b_path, "pull", "--no-rebase", "--quiet", "--no-edit")  # a person, not vault-tool
    assert sorted(tag_values(_front(b_path / rel)["tags"])) == sorted(
        ["Travel", "日本", "urgent", "Kyoto"]
    )


def test_a_driver_registered_without_the_end_of_options_is_written_again_on_open(
    tmp_path: Path,
):
    _, (a_path, _b) = team(tmp_path)
    old = merge_setup.driver_command().replace("merge-driver -- ", "merge-driver ")
    git(a_path, "config", "merge.vault-tool.driver", old)
    Vault.open(a_path).close()
    assert git(a_path, "config", "merge.vault-tool.driver") == merge_setup.driver_command()


def test_dismiss_then_undismiss_leaves_a_persons_note_as_they_wrote_it(vault: Vault):
    (vault.root / "trip.md").write_text(NOTE, encoding="utf-8")
    vault.commit_hand_edits()
    memory_id = vault.listing()["memories"][0]["memory_id"]
    vault.set_status(memory_id, "dismissed")
    dismissed = (vault.root / "trip.md").read_text(encoding="utf-8")
    assert dismissed == NOTE.replace("status: draft  # still planning\n", "status: dismissed\n")
    assert vault.search({"query": "ryokan"})["selected_hits"] == []
    vault.set_status(memory_id, "active")
    assert (vault.root / "trip.md").read_text(encoding="utf-8") == NOTE
    assert vault.search({"query": "ryokan"})["selected_hits"][0]["memory_id"] == memory_id


def test_undismiss_of_a_note_that_had_no_status_removes_the_key(vault: Vault):
    note = NOTE.replace("status: draft  # still planning\n", "")
    (vault.root / "trip.md").write_text(note, encoding="utf-8")
    vault.commit_hand_edits()
    memory_id = vault.listing()["memories"][0]["memory_id"]
    vault.set_status(memory_id, "dismissed")
    assert "status: dismissed\n" in (vault.root / "trip.md").read_text(encoding="utf-8")
    vault.set_status(memory_id, "active")
    assert (vault.root / "trip.md").read_text(encoding="utf-8") == note


def test_a_rewrite_of_one_key_over_many_notes_leaves_every_other_line_as_written(vault: Vault):
    from vault_tool.ops import ontology

    note = (
        "---\n"
        "title: Who runs billing\n"
        "status: draft  # ask Ana\n"
        "entities:\n"
        "  - {n: Ana, kind: person, is: backend engineer}\n"
        "  - {n: billing, kind: service, is: the invoicing service}\n"
        "facts:\n"
        "  - {subject: Ana, predicate: owns, object: billing}\n"
        "tags: [Travel, 日本]\n"
        "---\n"
        "# Who runs billing\n\nAna, since March.\n"
    )
    (vault.root / "billing.md").write_text(note, encoding="utf-8")
    vault.commit_hand_edits()
    ontology.apply(vault, ontology.plan_rename_predicate(vault, "owns", "maintains"))
    text = (vault.root / "billing.md").read_text(encoding="utf-8")
    assert text.replace("    predicate: maintains\n", "").count("owns") == 0
    kept = note.split("facts:\n")
    assert text.startswith(kept[0]) and text.endswith(kept[1].split("\n", 1)[1])
