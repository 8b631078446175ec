"""`vault-tool list`: browsing the vault newest first, narrowed by type, tag and dates, paged,
as text (one memory a line) or JSON; with --deleted, the memories that were deleted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_support import invoke, invoke_json
from tests.helpers import create_args, git
from tests.integration.test_search_query_syntax import NOTES, write_note
from vault_tool.engine.vault import Vault

ENTRY_KEYS = {
    "memory_id",
    "version_id",
    "memory_type",
    "title",
    "path",
    "tags",
    "created",
    "updated",
}


@pytest.fixture
def notes(vault_path: Path) -> Path:
    for name, (memory_type, updated, tags, body) in NOTES.items():
        write_note(vault_path, name, memory_type, updated, tags, body)
    git(vault_path, "add", "-A")
    git(vault_path, "commit", "-q", "-m", "Four notes")
    return vault_path


def stems(entries: list[dict]) -> list[str]:
    return [Path(e["path"]).stem for e in entries]


def test_list_shows_every_memory_newest_first_one_a_line(notes: Path):
    done = invoke("list", "--vault", notes)
    assert done.exit_code == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert [line.split()[2] for line in lines[:4]] == ["Checkout", "Webhooks", "Stripe", "Ideas"]
    first = lines[0]
    assert "decision" in first and "Checkout memory" in first and "2026-12-01 09:00" in first
    assert lines[-1] == "4 memories, newest first."


def test_list_json_is_the_list_of_memories(notes: Path):
    entries = invoke_json("list", "--vault", notes)
    assert stems(entries) == ["checkout", "webhooks", "stripe", "ideas"]
    assert set(entries[0]) == ENTRY_KEYS
    assert entries[0]["tags"] == ["payments"]
    assert entries[0]["updated"] == "2026-12-01T09:00:00Z"


def test_list_narrows_by_type_tag_and_dates(notes: Path):
    assert stems(invoke_json("list", "--type", "decision", "--vault", notes)) == [
        "checkout",
        "stripe",
    ]
    assert stems(invoke_json("list", "--type", "note", "--type", "gotcha", "--vault", notes)) == [
        "webhooks",
        "ideas",
    ]
    assert stems(invoke_json("list", "--tag", "billing", "--vault", notes)) == [
        "webhooks",
        "stripe",
    ]
    since = invoke_json("list", "--since", "2026-11-02", "--until", "2026-11-30", "--vault", notes)
    assert stems(since) == ["webhooks", "stripe"]


def test_list_pages_with_limit_and_offset_and_says_how_to_see_more(notes: Path):
    assert stems(invoke_json("list", "-n", "2", "--vault", notes)) == ["checkout", "webhooks"]
    assert stems(invoke_json("list", "-n", "2", "--offset", "2", "--vault", notes)) == [
        "stripe",
        "ideas",
    ]
    done = invoke("list", "--limit", "2", "--vault", notes)
    assert done.stdout.strip().splitlines()[-1] == (
        "Memories 1-2 of 4, newest first (--offset 2 shows the next)."
    )


def test_list_of_an_empty_vault_says_so(vault_path: Path):
    done = invoke("list", "--vault", vault_path)
    assert done.exit_code == 0 and done.stdout.strip() == "The vault has no memories yet."


def test_list_of_filters_that_match_nothing_says_so(notes: Path):
    done = invoke("list", "--type", "rule", "--vault", notes)
    assert done.exit_code == 0 and done.stdout.strip() == "No memory matches these filters."
    assert invoke_json("list", "--type", "rule", "--vault", notes) == []


def test_list_refuses_an_unknown_type_naming_the_types(notes: Path):
    done = invoke("list", "--type", "bogus", "--vault", notes)
    assert done.exit_code == 2
    assert "unknown memory type 'bogus'" in done.stderr
    assert "decision, fact" in done.stderr


def test_list_prints_titles_as_text_not_markup(vault_path: Path):
    write_note(vault_path, "odd", "note", "2026-11-01T00:00:00Z", [], "x")
    path = vault_path / "note" / "odd.md"
    text = path.read_text().replace("title: Odd memory", 'title: "[red]Odd[/red] memory"')
    path.write_text(text.replace("# Odd memory", "# [red]Odd[/red] memory"))
    git(vault_path, "add", "-A")
    git(vault_path, "commit", "-q", "-m", "odd")
    done = invoke("list", "--vault", vault_path)
    assert "[red]Odd[/red] memory" in done.stdout


def test_list_deleted_shows_deleted_memories_narrowed_by_type(vault_path: Path):
    with Vault.open(vault_path) as vault:
        kept = vault.remember(create_args("Ana owns the billing service"))
        gone = vault.remember(create_args("Bob owns the payments service", memory_type="fact"))
        vault.remember(
            {
                "mode": "delete",
                "memory_id": gone["memory_id"],
                "expected_version_id": gone["version_id"],
            }
        )
    listed = invoke_json("list", "--deleted", "--vault", vault_path)
    assert [e["memory_id"] for e in listed] == [gone["memory_id"]]
    assert listed == invoke_json("deleted", "--vault", vault_path)  # the same entries
    assert invoke_json("list", "--deleted", "--type", "decision", "--vault", vault_path) == []
    assert [e["memory_id"] for e in invoke_json("list", "--vault", vault_path)] == [
        kept["memory_id"]
    ]
    done = invoke("list", "--deleted", "--vault", vault_path)
    assert gone["memory_id"] in done.stdout and "deleted " in done.stdout
    assert "Bob owns the payments service" in done.stdout


def test_list_deleted_refuses_a_tag_filter_it_cannot_apply(vault_path: Path):
    done = invoke("list", "--deleted", "--tag", "billing", "--vault", vault_path)
    assert done.exit_code == 2
    assert "--tag" in done.stderr and "deleted" in done.stderr


def test_search_with_a_minus_word_after_the_words_explains_how_to_write_it(notes: Path):
    done = invoke("search", "billing", "-draft", "--vault", notes)
    assert done.exit_code == 2
    assert "search -- billing -draft" in done.stderr and "in quotes" in done.stderr
    done = invoke("search", "--json", "--vault", notes, "--", "billing", "-draft")
    assert done.exit_code == 0, done.stderr
    assert sorted(Path(h["path"]).stem for h in json.loads(done.stdout)["selected_hits"]) == [
        "stripe",
        "webhooks",
    ]


def test_search_of_filters_alone_counts_what_it_lists(notes: Path):
    done = invoke("search", "type:decision", "--vault", notes)
    assert done.exit_code == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "2 memories match, newest first."


def test_the_library_listing_takes_search_filters_and_refuses_anything_else(notes: Path):
    from vault_tool.errors import InvalidInput

    with Vault.open(notes) as vault:
        listed = vault.listing({"memory_types": ["decision"], "since": "2026-11-10"}, limit=5)
        assert listed["total"] == 1 and stems(listed["memories"]) == ["checkout"]
        assert vault.listing(limit=1, offset=3)["memories"][0]["path"] == "note/ideas.md"
        for bad, field in (
            ({"query": "billing"}, "query"),
            ({"memory_types": ["bogus"]}, "memory_types[0]"),
            ({"since": "last week"}, "since"),
        ):
            with pytest.raises(InvalidInput) as refused:
                vault.listing(bad)
            assert refused.value.field == field
        with pytest.raises(InvalidInput):
            vault.listing(limit=0)
        with pytest.raises(InvalidInput):
            vault.listing(offset=-1)
