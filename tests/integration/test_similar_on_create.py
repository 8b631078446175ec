"""A create that looks like a memory already stored still succeeds, and names that memory."""

from __future__ import annotations

from tests.helpers import create_args
from vault_tool.core import schema
from vault_tool.engine.vault import Vault
from vault_tool.server import render

TITLE = "Lena prefers psql"


def psql(body: str, title: str = TITLE) -> dict:
    args = create_args(title, body=body)
    args["semantic_delta"]["entities"] = [
        {"n": "Lena", "kind": "person", "is": "data engineer on the analytics team"},
        {"n": "psql", "kind": "tool", "is": "the PostgreSQL command-line client"},
    ]
    args["semantic_delta"]["facts"] = [
        {"subject": "Lena", "predicate": "prefers", "object": "psql"}
    ]
    return args


def brief(result: dict, title: str = TITLE) -> dict:
    return {"memory_id": result["memory_id"], "title": title, "version_id": result["version_id"]}


def test_creates_with_the_same_title_each_name_the_ones_already_stored(vault: Vault) -> None:
    first = vault.remember(psql("She uses psql rather than a GUI client."))
    assert first["status"] == "created" and "similar" not in first
    second = vault.remember(psql("Lena reaches for psql whenever she queries the warehouse."))
    assert second["status"] == "created"
    assert second["memory_id"] != first["memory_id"]
    assert second["similar"] == [brief(first)]
    third = vault.remember(psql("Psql is her tool for every ad hoc query."))
    assert {s["memory_id"] for s in third["similar"]} == {first["memory_id"], second["memory_id"]}
    assert schema.errors_of(third, "remember.output.schema.json") == []
    text = render.remember_text(third)
    assert "update that one instead if it is the same memory" in text
    assert first["memory_id"] in text and second["memory_id"] in text


def test_nearly_the_same_content_under_another_title_is_named(vault: Vault) -> None:
    body = "She uses psql rather than a GUI client, with her own psqlrc and pager settings."
    first = vault.remember(psql(body))
    again = vault.remember(psql(body + " Always.", title="Lena likes psql"))
    assert again["status"] == "created"
    assert [s["memory_id"] for s in again["similar"]] == [first["memory_id"]]


def test_an_unrelated_create_names_nothing(vault: Vault) -> None:
    vault.remember(psql("She uses psql rather than a GUI client."))
    other = vault.remember(create_args("Ana owns the billing service", body="Since March."))
    assert "similar" not in other
    assert "instead" not in render.remember_text(other)


def test_a_deleted_memory_is_not_named(vault: Vault) -> None:
    first = vault.remember(psql("She uses psql rather than a GUI client."))
    vault.remember(
        {
            "mode": "delete",
            "memory_id": first["memory_id"],
            "expected_version_id": first["version_id"],
        }
    )
    assert "similar" not in vault.remember(psql("Lena reaches for psql for every query."))


def test_items_of_one_batch_with_the_same_title_name_the_earlier_items(vault: Vault) -> None:
    stored = vault.remember(psql("She uses psql rather than a GUI client."))
    items = [
        {k: psql(body)[k] for k in ("content_md", "semantic_delta")}
        for body in ("Psql for every ad hoc query.", "Psql with her own psqlrc.")
    ]
    batch = vault.remember({"mode": "create", "items": items})
    one, two = batch["results"]
    assert [s["memory_id"] for s in one["similar"]] == [stored["memory_id"]]
    assert {s["memory_id"] for s in two["similar"]} == {stored["memory_id"], one["memory_id"]}
    assert all(
        s["version_id"] in (stored["version_id"], batch["version_id"]) for s in two["similar"]
    )
    assert schema.errors_of(batch, "remember.output.schema.json") == []
    assert "update that one instead" in render.remember_text(batch)


def test_an_exact_repeat_is_still_unchanged_and_names_nothing_more(vault: Vault) -> None:
    first = vault.remember(psql("She uses psql rather than a GUI client."))
    again = vault.remember(psql("She uses psql rather than a GUI client."))
    assert again["status"] == "unchanged" and again["memory_id"] == first["memory_id"]
    assert "similar" not in again


def _staging(title: str, body: str, gloss: str = "the staging cluster") -> dict:
    args = create_args(title, body=body)
    args["semantic_delta"]["entities"] = [
        {"n": "Staging", "kind": "service", "is": gloss},
        {"n": "eu-west-1", "kind": "region", "is": "the Irish cloud region"},
    ]
    args["semantic_delta"]["facts"] = [
        {"subject": "Staging", "predicate": "runs_in", "object": "eu-west-1"}
    ]
    return args


def test_a_memory_stating_the_same_fact_in_other_words_is_named(vault: Vault) -> None:
    first = vault.remember(_staging("Where staging lives", "Moved there after the outage."))
    again = vault.remember(
        # The same fact, its names written otherwise, in a memory sharing few words.
        {
            **_staging("Cluster placement", "Ops chose Ireland for latency reasons."),
            "semantic_delta": {
                **_staging("Cluster placement", "")["semantic_delta"],
                "entities": [
                    {"n": "staging", "kind": "service", "is": "staging cluster of the team"},
                    {"n": "EU-West-1", "kind": "region", "is": "the Irish cloud region"},
                ],
                "facts": [{"subject": "staging", "predicate": "runs_in", "object": "EU-West-1"}],
            },
        }
    )
    assert again["status"] == "created"
    assert again["similar"] == [brief(first, "Where staging lives")]


def test_the_same_names_for_other_entities_or_another_predicate_are_not_named(
    vault: Vault,
) -> None:
    vault.remember(_staging("Where staging lives", "Moved there after the outage."))
    other = _staging("Billing placement", "Chosen for the invoices.", gloss="billing database")
    assert "similar" not in vault.remember(other)  # another staging: no gloss in common
    moved = _staging("Staging plans", "Next quarter, perhaps.")
    moved["semantic_delta"]["facts"][0]["predicate"] = "moves_to"
    assert "similar" not in vault.remember(moved)


def test_an_earlier_item_of_a_batch_stating_the_same_fact_is_named(vault: Vault) -> None:
    items = [
        {k: _staging(title, body)[k] for k in ("content_md", "semantic_delta")}
        for title, body in (("Where staging lives", "After the outage."),
                            ("Cluster placement", "Ops chose it for latency."))
    ]  # fmt: skip
    one, two = vault.remember({"mode": "create", "items": items})["results"]
    assert [s["memory_id"] for s in two["similar"]] == [one["memory_id"]]
