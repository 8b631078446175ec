"""Search's query syntax against a real index: type: and tag: filter as memory_types and tags
do, -word leaves memories out, "a phrase" needs its words adjacent, filters alone list the
newest first; over MCP the query gets the same syntax and a malformed one is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import git
from vault_tool.engine.vault import Vault
from vault_tool.errors import InvalidInput
from vault_tool.server.tools import run_tool

# name -> (type, updated, tags, body)
NOTES = {
    "stripe": (
        "decision",
        "2026-11-02T09:00:00Z",
        ["billing", "payments"],
        "The billing service moves to Stripe. The old plan was Adyen.",
    ),
    "webhooks": (
        "gotcha",
        "2026-11-20T09:00:00Z",
        ["billing"],
        "Webhooks reach the service twice; billing must dedupe them.",
    ),
    "ideas": (
        "note",
        "2026-10-01T09:00:00Z",
        ["draft"],
        "Draft ideas for the billing service, not decided.",
    ),
    "checkout": (
        "decision",
        "2026-12-01T09:00:00Z",
        ["payments"],
        "The payments team owns checkout from December.",
    ),
}


def write_note(root: Path, name: str, memory_type: str, updated: str, tags: list, body: str):
    title = f"{name.capitalize()} memory"
    text = (
        f"---\nmemory_type: {memory_type}\ntitle: {title}\ntags: [{', '.join(tags)}]\n"
        f"created: {updated}\nupdated: {updated}\n---\n# {title}\n\n{body}\n"
    )
    folder = root / memory_type
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.md").write_text(text, encoding="utf-8")


@pytest.fixture
def notes(vault_path: Path):
    for name, (memory_type, updated, tags, body) in NOTES.items():
        write_note(vault_path, name, memory_type, updated, tags, body)
    git(vault_path, "add", "-A")
    git(vault_path, "commit", "-q", "-m", "Four notes")
    opened = Vault.open(vault_path, client="pytest")
    yield opened
    opened.close()


def found(vault: Vault, query: str, **args) -> list[str]:
    result = vault.search({"query": query, "top_k": 20, **args})
    return [Path(h["path"]).stem for h in result["selected_hits"]]


def test_type_in_the_query_filters_as_memory_types_does(notes: Vault):
    assert found(notes, "billing type:decision") == ["stripe"]
    assert found(notes, "billing type:decision") == found(
        notes, "billing", memory_types=["decision"]
    )


def test_type_in_the_query_and_memory_types_both_hold(notes: Vault):
    assert found(notes, "billing type:gotcha", memory_types=["gotcha", "note"]) == ["webhooks"]
    assert found(notes, "billing type:decision", memory_types=["gotcha"]) == []


def test_tag_in_the_query_filters_as_tags_does(notes: Vault):
    assert sorted(found(notes, "billing tag:billing")) == ["stripe", "webhooks"]
    assert found(notes, "billing tag:billing tag:payments") == ["stripe"]


def test_a_minus_word_leaves_out_the_memories_holding_it(notes: Vault):
    assert "ideas" in found(notes, "billing")
    assert sorted(found(notes, "billing -draft")) == ["stripe", "webhooks"]
    assert sorted(found(notes, 'billing -"old plan"')) == ["ideas", "webhooks"]


def test_a_phrase_needs_its_words_adjacent(notes: Vault):
    # "webhooks" holds billing and service, apart: only the other two hold the phrase.
    assert "webhooks" in found(notes, "billing service")
    assert sorted(found(notes, '"billing service"')) == ["ideas", "stripe"]
    result = notes.search({"query": '"billing service" stripe'})
    assert result["total_matches"] == 2


def test_filters_alone_list_the_memories_newest_first(notes: Vault):
    assert found(notes, "type:decision") == ["checkout", "stripe"]
    assert found(notes, "*") == ["checkout", "webhooks", "stripe", "ideas"]
    assert found(notes, "*", since="2026-11-10") == ["checkout", "webhooks"]
    assert found(notes, "-draft tag:billing") == ["webhooks", "stripe"]
    result = notes.search({"query": "tag:payments", "top_k": 1})
    assert result["total_matches"] == 2
    assert [Path(h["path"]).stem for h in result["selected_hits"]] == ["checkout"]


def test_the_query_is_returned_and_recorded_as_it_was_sent(notes: Vault):
    result = notes.search({"query": "type:decision"})
    assert result["query"] == "type:decision"  # as sent; the ledger records it so too
    records = list(notes.ledger_records("search"))
    assert records[-1]["query"] == "type:decision"


def test_a_malformed_query_is_refused_and_not_recorded(notes: Vault):
    before = len(list(notes.ledger_records("search")))
    with pytest.raises(InvalidInput) as refused:
        notes.search({"query": 'billing "service'})
    assert "never closed" in refused.value.message
    assert len(list(notes.ledger_records("search"))) == before


def test_over_mcp_the_query_has_the_same_syntax_and_the_same_refusal(notes: Vault):
    outcome = run_tool(notes, "search", {"query": "billing -draft type:note"}, client="agent")
    assert not outcome.is_error and outcome.structured["selected_hits"] == []
    outcome = run_tool(notes, "search", {"query": "type:bogus"}, client="agent")
    assert outcome.is_error
    error = outcome.structured["error"]
    assert error["code"] == "invalid_input"
    assert "unknown memory type 'bogus'" in error["message"]
    assert "decision, fact" in error["hint"]


def test_a_search_as_of_a_moment_has_the_same_syntax(notes: Vault):
    result = notes.search_as_of({"query": "billing -draft type:decision"}, notes.head())
    assert [Path(h["path"]).stem for h in result["selected_hits"]] == ["stripe"]
    with pytest.raises(InvalidInput):
        notes.search_as_of({"query": "tag:"}, notes.head())


def test_over_mcp_a_listing_says_it_is_newest_first_not_best_first(notes: Vault):
    listed = run_tool(notes, "search", {"query": "type:decision"}, client="agent")
    assert "matching memories for 'type:decision', newest first." in listed.text
    ranked = run_tool(notes, "search", {"query": "billing"}, client="agent")
    assert "best first." in ranked.text
