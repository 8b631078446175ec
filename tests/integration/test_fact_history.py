"""fact_history: what the vault states about a subject, with valid time (the facts' own
dates) and record time (the commits that asserted and retracted them, from git), over a
memory updated twice and then superseded by another. Real repository, real index; the
extended tool is called as the server calls it (tools.run_tool)."""

from __future__ import annotations

import json

import pytest

from tests.helpers import git
from vault_tool.engine.vault import Vault
from vault_tool.server import tools

STAGING = {"n": "staging cluster", "kind": "service", "is": "the cluster staging runs on"}


def _region(region: str) -> dict:
    return {"n": region, "kind": "region", "is": f"the {region} cloud region"}


def _call(title: str, facts: list[dict], **extra: object) -> dict:
    regions = {f["object"] for f in facts if f["predicate"] == "runs_in"}
    entities = [STAGING, *(_region(r) for r in sorted(regions))]
    if any(f["predicate"] == "owned_by" for f in facts):
        entities.append({"n": "platform team", "kind": "team", "is": "the team owning infra"})
    delta = {"memory_type": "fact", "title": title, "entities": entities, "facts": facts}
    return {"content_md": f"# {title}\n\nWhere staging runs.\n", "semantic_delta": delta | extra}


WEST = {"subject": "staging cluster", "predicate": "runs_in", "object": "eu-west-1"}
CENTRAL = {
    "subject": "staging cluster", "predicate": "runs_in", "object": "eu-central-1",
    "valid_from": "2026-11-01",
}  # fmt: skip
OWNER = {"subject": "staging cluster", "predicate": "owned_by", "object": "platform team"}


@pytest.fixture
def story(vault: Vault) -> dict[str, str]:
    """Created, updated twice (its west fact bounded, then taken out), then superseded."""
    made = vault.remember({"mode": "create", **_call("Staging region", [WEST])})
    ended = {**WEST, "valid_until": "2026-10-31"}
    first = vault.remember(
        {"mode": "update", "memory_id": made["memory_id"],
         "expected_version_id": made["version_id"], **_call("Staging region", [ended, CENTRAL])}
    )  # fmt: skip
    second = vault.remember(
        {"mode": "update", "memory_id": made["memory_id"],
         "expected_version_id": first["version_id"],
         **_call("Staging region", [CENTRAL, OWNER])}
    )  # fmt: skip
    return {"id": made["memory_id"], "created": made["version_id"],
            "first": first["version_id"], "second": second["version_id"]}  # fmt: skip


def _facts(vault: Vault, day: str, include: bool = False, predicate: str | None = None) -> list:
    found = vault.views.facts(
        "Staging Cluster", predicate=predicate, as_of=day, include_superseded=include
    )
    return found["facts"]


def _shown(facts: list[dict]) -> list[tuple]:
    return [(f["object"], f.get("valid_until"), f["status"]) for f in facts]


def test_current_facts_as_of_today_and_as_of_an_earlier_day(vault: Vault, story: dict):
    today = _facts(vault, "2026-12-02")
    assert _shown(today) == [("eu-central-1", None, "current"), ("platform team", None, "current")]
    assert {f["asserted"]["version_id"] for f in today} == {story["first"], story["second"]}
    june = _facts(vault, "2026-06-01", include=True, predicate="runs_in")
    assert ("eu-central-1", None, "ended") in _shown(june)  # not valid yet on that day


def test_every_version_of_a_fact_with_the_commits_that_asserted_and_retracted_it(
    vault: Vault, story: dict
):
    facts = _facts(vault, "2026-12-02", include=True, predicate="runs_in")
    by = {(f["object"], f.get("valid_until")): f for f in facts}
    unbounded, bounded = by[("eu-west-1", None)], by[("eu-west-1", "2026-10-31")]
    assert unbounded["status"] == "retracted"  # bounded in its place: that one speaks for it
    assert bounded["status"] == "ended"  # taken out once eu-central-1 held: it had ended
    assert unbounded["asserted"]["version_id"] == story["created"]
    assert unbounded["retracted"]["version_id"] == story["first"]  # bounded in its place
    assert bounded["asserted"]["version_id"] == story["first"]
    assert bounded["retracted"]["version_id"] == story["second"]  # taken out
    assert by[("eu-central-1", None)]["status"] == "current"
    dated = [f["asserted"]["date"] for f in facts]
    assert dated == sorted(dated)  # oldest asserted first
    assert git(vault.root, "log", "-1", "--format=%cI", story["created"]) == dated[0]


def test_a_superseding_memory_makes_the_old_facts_superseded(vault: Vault, story: dict):
    moved = {**CENTRAL, "object": "us-east-1", "valid_from": "2026-12-01"}
    newer = vault.remember(
        {"mode": "create", **_call("Staging moved", [moved], supersedes=[story["id"]])}
    )
    current = _facts(vault, "2026-12-02")
    assert [(f["object"], f["memory_id"]) for f in current] == [("us-east-1", newer["memory_id"])]
    every = _facts(vault, "2026-12-02", include=True)
    old = [f for f in every if f["memory_id"] == story["id"] and f["object"] == "eu-central-1"]
    assert old[0]["status"] == "superseded" and old[0]["superseded_by"] == [newer["memory_id"]]


def test_the_tool_pages_the_facts_and_its_result_fits_its_schema(vault: Vault, story: dict):
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(tools.spec("fact_history", "extended").output_schema)

    def page(offset: int) -> tools.Outcome:
        args = {"subject": "staging cluster", "include_superseded": True, "limit": 3}
        outcome = tools.run_tool(
            vault, "fact_history", {**args, "offset": offset}, client="t", profile="extended"
        )
        assert not outcome.is_error, outcome.text
        validator.validate(outcome.structured)
        return outcome

    first, second, past = page(0), page(3), page(4)
    assert [len(p.structured["facts"]) for p in (first, second, past)] == [3, 1, 0]
    assert [p.structured["has_more"] for p in (first, second, past)] == [True, False, False]
    assert first.structured["next_offset"] == 3 and first.structured["total"] == 4
    paged = first.structured["facts"] + second.structured["facts"]
    assert len({(f["object"], f.get("valid_until")) for f in paged}) == 4
    assert "asserted" in first.text and "send offset 3" in first.text
    refused = tools.run_tool(
        vault, "fact_history", {"subject": "x", "as_of": "last spring"}, client="t",
        profile="extended",
    )  # fmt: skip
    assert refused.is_error and refused.structured["error"]["field"] == "as_of"
    assert json.loads(json.dumps(refused.structured))["error"]["hint"]


def _placed(vault: Vault, entity: dict, facts: list[dict], made: dict | None = None) -> dict:
    """A memory of where staging runs, created, or updated to these facts."""
    regions = [{"n": f["object"], "kind": "region", "is": "a cloud region"} for f in facts]
    args = {
        "content_md": f"# Staging region\n\nWhere {entity['n']} runs.\n",
        "semantic_delta": {
            "memory_type": "fact", "title": "Staging region",
            "entities": [entity, *regions], "facts": facts,
        },
    }  # fmt: skip
    if made is None:
        return vault.remember({"mode": "create", **args})
    return vault.remember(
        {"mode": "update", "memory_id": made["memory_id"],
         "expected_version_id": made["version_id"], **args}
    )  # fmt: skip


STAGED = {"n": "staging", "kind": "service", "is": "the staging cluster"}


def test_a_fact_an_update_replaced_holds_until_its_replacement_begins(vault: Vault) -> None:
    west = {"subject": "staging", "predicate": "runs_in", "object": "eu-west-1",
            "valid_from": "2024-01-01"}  # fmt: skip
    central = {**west, "object": "eu-central-1", "valid_from": "2025-07-01"}
    made = _placed(vault, STAGED, [west])
    _placed(vault, STAGED, [central], made)

    def shown(day: str, include: bool = False) -> list[tuple]:
        found = vault.views.facts("staging", as_of=day, include_superseded=include)["facts"]
        return [(f["object"], f.get("valid_until"), f["status"]) for f in found]

    assert shown("2025-01-01") == [("eu-west-1", "2025-06-30", "current")]
    assert shown("2025-08-01") == [("eu-central-1", None, "current")]
    assert set(shown("2025-08-01", include=True)) == {
        ("eu-west-1", "2025-06-30", "ended"), ("eu-central-1", None, "current"),
    }  # fmt: skip
    assert ("eu-west-1", "2025-06-30", "ended") in shown("2023-06-01", include=True)


def test_a_fact_taken_out_with_no_later_replacement_stays_retracted(vault: Vault) -> None:
    west = {"subject": "staging", "predicate": "runs_in", "object": "eu-west-1",
            "valid_from": "2025-01-01"}  # fmt: skip
    made = _placed(vault, STAGED, [west])
    corrected = {**west, "object": "eu-north-1"}  # a correction: from the same day
    _placed(vault, STAGED, [corrected], made)
    found = vault.views.facts("staging", as_of="2025-03-01", include_superseded=True)["facts"]
    assert {(f["object"], f["status"]) for f in found} == {
        ("eu-west-1", "retracted"), ("eu-north-1", "current"),
    }  # fmt: skip


def test_a_subject_is_found_as_its_entity_is_by_case_and_gloss(vault: Vault) -> None:
    fact = {"subject": "staging", "predicate": "runs_in", "object": "eu-west-1"}
    _placed(vault, STAGED, [fact])
    cluster = {"n": "staging cluster", "kind": "service", "is": "the cluster staging runs on"}
    _placed(vault, cluster, [{**fact, "subject": "staging cluster", "object": "us-east-1"}])

    def objects(subject: str) -> list[str]:
        return sorted(f["object"] for f in vault.views.facts(subject)["facts"])

    assert objects("Staging") == objects("staging cluster") == ["eu-west-1", "us-east-1"]
    assert objects("STAGING CLUSTER") == ["eu-west-1", "us-east-1"]
    assert objects("staging database") == []  # no gloss says it is a database
