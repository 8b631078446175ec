"""The history reads like a changelog: a commit that does not name its memory in the subject
(a batch create, an expiry, an import, an ontology rewrite) lists each one in its body."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import create_args, git
from tests.import_fixtures import materialise
from vault_tool.ops import ontology
from vault_tool.ops.transfer import import_source


def body_lines(path: Path) -> list[str]:
    return git(path, "log", "-1", "--format=%b").splitlines()


def listed(path: Path) -> list[str]:
    return [line for line in body_lines(path) if line.startswith("- ")]


def test_a_batch_create_lists_each_memory(vault, vault_path):
    titles = ["First one", "Second one", "Third one"]
    items = [{k: v for k, v in create_args(t).items() if k != "mode"} for t in titles]
    done = vault.remember({"mode": "create", "items": items})
    assert git(vault_path, "log", "-1", "--format=%s") == "Create 3 memories"
    assert listed(vault_path) == [
        f"- decision: {title} ({result['memory_id']})"
        for title, result in zip(titles, done["results"], strict=True)
    ]


def test_expiring_one_memory_names_it(vault, vault_path):
    old = vault.remember(create_args("Old freeze", expires_at="2020-01-01"))
    vault.remember(create_args("Current rule"))
    vault.expire()
    assert git(vault_path, "log", "-1", "--format=%s") == "Expire 1 memory"
    assert listed(vault_path) == [f"- decision: Old freeze ({old['memory_id']})"]


def test_an_import_lists_what_it_imported(vault, vault_path, tmp_path):
    report = import_source(vault, materialise("jsonl", tmp_path), "jsonl")
    lines = listed(vault_path)
    assert len(lines) == len(report["imported"]) > 1
    for entry in report["imported"]:
        assert any(line.endswith(f" ({entry['memory_id']})") for line in lines)


def test_an_ontology_rewrite_lists_the_memories_it_rewrote(vault, vault_path):
    made = [vault.remember(create_args(t)) for t in ("Ana owns billing", "Ana owns invoices")]
    ontology.apply(vault, ontology.plan_rename_predicate(vault, "owns", "maintains"))
    assert git(vault_path, "log", "-1", "--format=%s").startswith("Rename predicate: owns")
    assert sorted(listed(vault_path)) == sorted(
        f"- decision: {title} ({m['memory_id']})"
        for title, m in zip(("Ana owns billing", "Ana owns invoices"), made, strict=True)
    )


def test_a_commit_about_one_named_memory_has_no_list(vault, vault_path):
    made = vault.remember(create_args("Ana owns billing"))
    vault.set_status(made["memory_id"], "dismissed")
    assert git(vault_path, "log", "-1", "--format=%s") == "Dismiss decision: Ana owns billing"
    assert listed(vault_path) == []
    assert f"Memory-Id: {made['memory_id']}" in body_lines(vault_path)
