"""Ontology: listing entities and predicates, and renaming or merging them as one commit."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers import git, snapshot
from vault_tool.core.memory import parse
from vault_tool.engine.vault import Vault
from vault_tool.errors import InvalidInput, NotFound, VersionConflict
from vault_tool.ops import ontology
from vault_tool.storage.store import Store

ENGINEER = {"n": "Ana", "kind": "person", "is": "backend engineer on the platform team"}
DESIGNER = {"n": "Ana", "kind": "person", "is": "product designer of the checkout flow"}
BILLING = {"n": "billing service", "kind": "service", "is": "the service that issues invoices"}
CHECKOUT = {"n": "checkout", "kind": "service", "is": "the web checkout flow"}
LEDGER_DB = {"n": "ledger db", "kind": "database", "is": "the Postgres database of the ledger"}


def remember(vault, title: str, entities: list[dict], facts: list[tuple[str, str, str]]) -> dict:
    """Create one memory with these entities and (subject, predicate, object) facts."""
    return vault.remember(
        {
            "mode": "create",
            "content_md": f"# {title}\n\nWritten by a test.\n",
            "semantic_delta": {
                "memory_type": "fact",
                "title": title,
                "entities": entities,
                "facts": [{"subject": s, "predicate": p, "object": o} for s, p, o in facts],
                "tags": ["team"],
            },
        }
    )


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict]]:
    """Two people called Ana (an engineer, a designer) and the services they work on.

    Made once; each test works on its own copy.
    """
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        patch.setenv("GIT_CONFIG_GLOBAL", str(home / "gitconfig"))
        patch.setenv("GIT_CONFIG_NOSYSTEM", "1")
        root = tmp_path_factory.mktemp("template") / "vault"
        Store.init(root).close()
        with Vault.open(root, client="pytest") as vault:
            made = {
                "owns": remember(
                    vault,
                    "Ana owns the billing service",
                    [ENGINEER, BILLING],
                    [("Ana", "owns", "billing service")],
                ),
                "pages": remember(
                    vault,
                    "Ana is paged for billing",
                    [{**ENGINEER, "is": "backend engineer who owns billing"}, BILLING],
                    [("Ana", "owns", "billing service"), ("billing service", "pages", "Ana")],
                ),
                "designs": remember(
                    vault,
                    "Ana designs checkout",
                    [DESIGNER, CHECKOUT],
                    [("Ana", "designs", "checkout")],
                ),
                "unrelated": remember(
                    vault,
                    "Billing writes to the ledger db",
                    [BILLING, LEDGER_DB],
                    [("billing service", "writes_to", "ledger db")],
                ),
            }
    return root, made


@pytest.fixture
def vault_path(tmp_path: Path, template: tuple[Path, dict[str, dict]]) -> Path:
    """A copy of the template vault (files, git and index, with their times)."""
    path = tmp_path / "vault"
    shutil.copytree(template[0], path, symlinks=True)
    return path


@pytest.fixture
def team(vault, template: tuple[Path, dict[str, dict]]) -> dict[str, dict]:
    """The template's memories, by role."""
    return template[1]


def commits(path: Path) -> int:
    return int(git(path, "rev-list", "--count", "HEAD"))


def file_of(vault_path: Path, made: dict) -> bytes:
    return (vault_path / made["path"]).read_bytes()


# --- listing -------------------------------------------------------------------------------


def test_entities_carry_glosses_with_counts_mentions_and_memories(vault, team):
    found = ontology.list_entities(vault)
    billing = next(e for e in found if e["name"] == "billing service")
    assert billing["kind"] == "service"
    assert billing["mentions"] == 3 and billing["memories"] == 3
    assert billing["glosses"] == [{"gloss": BILLING["is"], "mentions": 3}]
    engineer = next(
        e for e in found if e["name"] == "Ana" and "engineer" in e["glosses"][0]["gloss"]
    )
    assert engineer["mentions"] == 2
    assert sorted(g["gloss"] for g in engineer["glosses"]) == [
        "backend engineer on the platform team",
        "backend engineer who owns billing",
    ]
    assert set(engineer["memory_ids"]) == {team["owns"]["memory_id"], team["pages"]["memory_id"]}
    assert found[0]["name"] == "billing service"  # most mentioned first


def test_homonyms_are_the_two_anas_and_nothing_else(vault, team):
    found = ontology.list_entities(vault, homonyms=True)
    assert [e["name"] for e in found] == ["Ana", "Ana"]
    glosses = {e["glosses"][0]["gloss"].split()[0] for e in found}
    assert glosses == {"backend", "product"}


def test_kind_filter_keeps_only_that_kind(vault, team):
    found = ontology.list_entities(vault, kind="service")
    assert {e["name"] for e in found} == {"billing service", "checkout"}


def test_predicates_count_facts_and_memories(vault, team):
    found = {p["predicate"]: p for p in ontology.list_predicates(vault)}
    assert found["owns"] == {"predicate": "owns", "facts": 2, "memories": 2}
    assert found["pages"]["facts"] == 1 and found["designs"]["facts"] == 1
    assert set(found) == {"owns", "pages", "designs", "writes_to"}


# --- renaming an entity --------------------------------------------------------------------


def test_rename_entity_is_one_commit_that_renames_mentions_and_facts(vault, vault_path, team):
    before = commits(vault_path)
    untouched = {k: file_of(vault_path, team[k]) for k in ("designs", "unrelated")}
    old_updated = parse(file_of(vault_path, team["owns"]).decode(), "x").updated
    rewrite = ontology.plan_rename_entity(vault, "ana", "Ana Lima", gloss_contains="backend")
    result = ontology.apply(vault, rewrite)
    assert commits(vault_path) == before + 1
    assert result["version_id"] == git(vault_path, "rev-parse", "HEAD")
    message = git(vault_path, "log", "-1", "--format=%B")
    assert message.startswith("Rename entity: Ana -> Ana Lima (2 memories)\n")
    assert "Client: cli" in message and f"Memory-Id: {team['owns']['memory_id']}" in message
    assert git(vault_path, "status", "--porcelain") == ""
    pages = parse(file_of(vault_path, team["pages"]).decode(), "x")
    assert [e.n for e in pages.entities] == ["Ana Lima", "billing service"]
    assert [(f.subject, f.object) for f in pages.facts] == [
        ("Ana Lima", "billing service"),
        ("billing service", "Ana Lima"),
    ]
    owns = parse(file_of(vault_path, team["owns"]).decode(), "x")
    assert owns.title == "Ana owns the billing service"  # the words a person wrote stay
    assert owns.updated == old_updated
    assert {k: file_of(vault_path, team[k]) for k in untouched} == untouched


def test_search_finds_the_renamed_entity_afterwards(vault, team):
    rewrite = ontology.plan_rename_entity(vault, "Ana", "Ana Lima", gloss_contains="backend")
    ontology.apply(vault, rewrite)
    hits = vault.search({"query": "Lima"})["selected_hits"]
    assert {h["memory_id"] for h in hits} == {team["owns"]["memory_id"], team["pages"]["memory_id"]}
    names = [e["name"] for e in ontology.list_entities(vault)]
    assert "Ana Lima" in names and names.count("Ana") == 1


def test_rename_of_a_name_shared_by_two_entities_is_refused_naming_both(vault, vault_path, team):
    before = snapshot(vault_path)
    with pytest.raises(InvalidInput) as refused:
        ontology.plan_rename_entity(vault, "Ana", "Ana Lima")
    assert "2 entities" in refused.value.message
    assert "backend engineer" in refused.value.message
    assert "product designer" in refused.value.message
    assert "--gloss-contains" in refused.value.hint
    assert snapshot(vault_path) == before


def test_kind_picks_among_entities_of_one_name(vault, team):
    region = {"n": "Ana", "kind": "place", "is": "a test region"}
    remember(vault, "Checkout runs in Ana", [region, CHECKOUT], [("checkout", "runs_in", "Ana")])
    rewrite = ontology.plan_rename_entity(vault, "Ana", "ana-1", kind="place")
    assert rewrite.subject == "Rename entity: Ana -> ana-1 (1 memory)"


def test_renaming_an_unknown_entity_is_not_found(vault, team):
    with pytest.raises(NotFound):
        ontology.plan_rename_entity(vault, "Bob", "Robert")


def test_renaming_to_a_name_the_memory_already_declares_is_refused(vault, team):
    with pytest.raises(InvalidInput) as refused:
        ontology.plan_rename_entity(vault, "Ana", "billing service", gloss_contains="backend")
    assert "merge-entity" in refused.value.hint


def test_dry_run_shows_the_diff_and_writes_nothing(vault, vault_path, team):
    before = snapshot(vault_path)
    rewrite = ontology.plan_rename_entity(vault, "Ana", "Ana Lima", gloss_contains="designer")
    result = ontology.apply(vault, rewrite, dry_run=True)
    assert result["version_id"] is None and result["paths"] == [team["designs"]["path"]]
    assert "-  - n: Ana\n" in result["diff"] and "+  - n: Ana Lima\n" in result["diff"]
    assert "+  - subject: Ana Lima\n" in result["diff"]
    assert snapshot(vault_path) == before
    assert vault.search({"query": "Lima"})["selected_hits"] == []


def test_a_hand_edited_file_refuses_the_rename_and_nothing_changes(vault, vault_path, team):
    edited = vault_path / team["owns"]["path"]
    edited.write_text(edited.read_text() + "\nA person is typing here.\n")
    before = snapshot(vault_path)
    with pytest.raises(VersionConflict) as refused:
        rewrite = ontology.plan_rename_entity(vault, "Ana", "Ana Lima", gloss_contains="backend")
        ontology.apply(vault, rewrite)
    assert team["owns"]["path"] in refused.value.message
    assert "vault-tool commit" in refused.value.hint
    assert snapshot(vault_path) == before


# --- merging -------------------------------------------------------------------------------


def test_merge_gives_mentions_the_targets_name_kind_and_gloss(vault, vault_path, team):
    both = remember(
        vault,
        "Billing and its API",
        [BILLING, {"n": "billing api", "kind": "api", "is": "the HTTP API of billing"}],
        [("billing api", "exposes", "billing service")],
    )
    alone = remember(
        vault,
        "Checkout calls the billing API",
        [CHECKOUT, {"n": "billing api", "kind": "api", "is": "the HTTP API of billing"}],
        [("checkout", "calls", "billing api")],
    )
    before = commits(vault_path)
    untouched = file_of(vault_path, team["designs"])
    rewrite = ontology.plan_merge_entity(vault, "billing api", "billing service")
    ontology.apply(vault, rewrite)
    assert commits(vault_path) == before + 1
    subject = git(vault_path, "log", "-1", "--format=%s")
    assert subject == "Merge entity: billing api -> billing service (2 memories)"
    merged = parse(file_of(vault_path, both).decode(), "x")
    assert [e.to_dict() for e in merged.entities] == [BILLING]  # one declaration, the target's
    assert [f.to_dict() for f in merged.facts] == [
        {"subject": "billing service", "predicate": "exposes", "object": "billing service"}
    ]
    renamed = parse(file_of(vault_path, alone).decode(), "x")
    assert [e.to_dict() for e in renamed.entities] == [CHECKOUT, BILLING]
    assert [(f.subject, f.object) for f in renamed.facts] == [("checkout", "billing service")]
    assert file_of(vault_path, team["designs"]) == untouched
    assert not [e for e in ontology.list_entities(vault) if e["name"] == "billing api"]


def test_merging_one_homonym_into_the_other_makes_one_entity(vault, team):
    rewrite = ontology.plan_merge_entity(
        vault, "Ana", "Ana", gloss_contains="designer", into_gloss_contains="engineer"
    )
    ontology.apply(vault, rewrite)
    anas = [e for e in ontology.list_entities(vault) if e["name"] == "Ana"]
    assert len(anas) == 1 and anas[0]["memories"] == 3


def test_merging_an_entity_into_itself_is_refused(vault, team):
    with pytest.raises(InvalidInput):
        ontology.plan_merge_entity(vault, "checkout", "Checkout")


# --- predicates ----------------------------------------------------------------------------


def test_rename_predicate_is_one_commit_over_every_fact_that_uses_it(vault, vault_path, team):
    before = commits(vault_path)
    untouched = file_of(vault_path, team["designs"])
    result = ontology.apply(vault, ontology.plan_rename_predicate(vault, "owns", "maintains"))
    assert commits(vault_path) == before + 1
    assert git(vault_path, "log", "-1", "--format=%s") == (
        "Rename predicate: owns -> maintains (2 memories)"
    )
    assert sorted(result["paths"]) == sorted([team["owns"]["path"], team["pages"]["path"]])
    pages = parse(file_of(vault_path, team["pages"]).decode(), "x")
    assert [f.predicate for f in pages.facts] == ["maintains", "pages"]
    assert file_of(vault_path, team["designs"]) == untouched
    counts = {p["predicate"]: p["facts"] for p in ontology.list_predicates(vault)}
    assert "owns" not in counts and counts["maintains"] == 2


@pytest.mark.parametrize("bad", ["Maintains", "keeps up", "keeps-up", "_owns", ""])
def test_a_new_predicate_that_is_not_snake_case_is_refused(vault, vault_path, team, bad):
    before = snapshot(vault_path)
    with pytest.raises(InvalidInput):
        ontology.plan_rename_predicate(vault, "owns", bad)
    assert snapshot(vault_path) == before


def test_renaming_an_unused_predicate_is_not_found(vault, team):
    with pytest.raises(NotFound):
        ontology.plan_rename_predicate(vault, "hates", "dislikes")


def test_a_file_committed_after_planning_refuses_the_rewrite_and_keeps_that_change(
    vault, vault_path, team
):
    rewrite = ontology.plan_rename_predicate(vault, "owns", "maintains")
    edited = vault_path / team["owns"]["path"]
    edited.write_text(edited.read_text() + "\nAn agent added this meanwhile.\n")
    git(vault_path, "commit", "--quiet", "-am", "Update fact: meanwhile")
    before = snapshot(vault_path)
    with pytest.raises(VersionConflict) as refused:
        ontology.apply(vault, rewrite)
    assert "changed since the rewrite was planned" in refused.value.message
    assert snapshot(vault_path) == before
