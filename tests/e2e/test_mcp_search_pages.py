"""search's optional controls over the real server and the official SDK client (stdio): a key
lookup (hit and miss), pages with has_more / next_offset in a stable order, newest and oldest
first, and the text content as JSON. Every result is checked against the declared
outputSchema (mcp_client.call)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.mcp_client import anyio_backend, call, stdio_session, text_of  # noqa: F401
from tests.helpers import eventually_async, git
from vault_tool.storage.store import Store

pytestmark = pytest.mark.anyio

NOTE = """---
memory_type: fact
title: {title}
{key}updated: 2026-0{month}-0{day}T09:00:00Z
---
# {title}

The billing service {what}.
"""
# (title, month, day): updated on six different days, in no order of title or path.
NOTES = [
    ("Billing invoices go out on the first", 3, 2),
    ("Billing retries failed cards twice", 1, 5),
    ("Billing runs on the payments cluster", 6, 1),
    ("Billing exports to the ledger nightly", 2, 8),
    ("Billing alerts page the on-call", 5, 3),
    ("Billing keeps receipts seven years", 4, 4),
]


@pytest.fixture
def billing(tmp_path: Path) -> Path:
    return make_billing(tmp_path)


def make_billing(tmp_path: Path) -> Path:
    """A vault of six hand-made notes about billing (one with a key), committed by a person."""
    root = tmp_path / "vault"
    Store.init(root).close()
    for n, (title, month, day) in enumerate(NOTES):
        key = "key: billing.retention\n" if "receipts" in title else ""
        text = NOTE.format(title=title, key=key, month=month, day=day, what=f"fact {n}")
        (root / "fact" / f"note-{n}.md").parent.mkdir(exist_ok=True)
        (root / "fact" / f"note-{n}.md").write_text(text)
    git(root, "add", "fact")
    git(root, "commit", "-q", "-m", "A person's billing notes")
    return root


async def ready(session) -> None:
    """Until the server's catch-up has indexed the six notes (the first calls answer
    before it is done, and say so)."""

    async def indexed() -> bool:
        result = await session.call_tool("search", {"query": "billing"})
        return result.structured_content["total_matches"] == len(NOTES)

    await eventually_async(indexed, what="the six notes indexed")


def _titles(result) -> list[str]:
    return [hit["title"] for hit in result.structured_content["selected_hits"]]


async def test_three_pages_follow_each_other_in_one_stable_order(billing: Path):
    async with stdio_session(billing) as (session, _):
        await ready(session)
        whole = await call(session, "search", {"query": "billing", "top_k": 6})
        pages, offset = [], 0
        for _ in range(3):
            page = await call(session, "search", {"query": "billing", "top_k": 2, "offset": offset})
            pages.append(page.structured_content)
            offset = page.structured_content.get("next_offset", offset)
    assert [p["has_more"] for p in pages] == [True, True, False]
    assert [p.get("next_offset") for p in pages] == [2, 4, None]
    assert all(p["total_matches"] == 6 for p in pages)
    paged = [hit["memory_id"] for p in pages for hit in p["selected_hits"]]
    assert paged == [hit["memory_id"] for hit in whole.structured_content["selected_hits"]]
    assert len(set(paged)) == 6


async def test_past_the_last_page_is_empty_and_says_so(billing: Path):
    async with stdio_session(billing) as (session, _):
        await ready(session)
        result = await call(session, "search", {"query": "billing", "offset": 6})
    assert not result.is_error
    assert result.structured_content["selected_hits"] == []
    assert result.structured_content["has_more"] is False
    assert "earlier pages" in text_of(result)


async def test_newest_and_oldest_order_by_updated_one_the_others_reverse(billing: Path):
    by_date = [t for t, _, _ in sorted(NOTES, key=lambda n: (n[1], n[2]))]
    async with stdio_session(billing) as (session, _):
        await ready(session)
        newest = await call(session, "search", {"query": "billing", "top_k": 6, "order": "newest"})
        oldest = await call(session, "search", {"query": "billing", "top_k": 6, "order": "oldest"})
        second = await call(
            session, "search", {"query": "billing", "top_k": 2, "offset": 2, "order": "oldest"}
        )
    assert _titles(oldest) == by_date
    assert _titles(newest) == by_date[::-1]
    assert _titles(second) == by_date[2:4]
    assert "oldest first" in text_of(oldest)


async def test_a_key_finds_its_memory_and_a_missing_key_is_an_empty_result(billing: Path):
    async with stdio_session(billing) as (session, _):
        await ready(session)
        found = await call(session, "search", {"key": "billing.retention"})
        missing = await call(session, "search", {"key": "billing.nothing"})
    assert _titles(found) == ["Billing keeps receipts seven years"]
    assert found.structured_content["selected_hits"][0]["content_md"].startswith("# Billing")
    assert not missing.is_error
    assert missing.structured_content["selected_hits"] == []
    assert "No memory has key 'billing.nothing'" in text_of(missing)


async def test_response_format_json_makes_the_text_the_structured_result(billing: Path):
    async with stdio_session(billing) as (session, _):
        await ready(session)
        hits = await call(session, "search", {"query": "billing", "response_format": "json"})
        read = await call(
            session, "search", {"key": "billing.retention", "response_format": "json"}
        )
        refused = await call(session, "search", {"key": "Not A Key", "response_format": "json"})
    assert json.loads(text_of(hits)) == hits.structured_content
    assert json.loads(text_of(read)) == read.structured_content
    assert refused.is_error and json.loads(text_of(refused)) == refused.structured_content


@pytest.mark.parametrize(
    ("arguments", "field", "fix"),
    [
        ({"key": "billing.retention", "query": "billing"}, "query", "exactly one"),
        ({"key": "billing.retention", "top_k": 3}, "top_k", "remove top_k"),
        ({"memory_id": "fact/note-1", "offset": 2}, "offset", "remove offset"),
        ({"query": "billing", "offset": -1}, "offset", "from 0 to 1000"),
        ({"query": "billing", "order": "sideways"}, "order", "relevance"),
        ({"query": "billing", "response_format": "yaml"}, "response_format", "markdown"),
    ],
)
async def test_a_bad_control_is_refused_naming_the_field_and_the_fix(
    billing: Path, arguments: dict, field: str, fix: str
):
    async with stdio_session(billing) as (session, _):
        await ready(session)
        result = await call(session, "search", arguments)
    assert result.is_error
    error = result.structured_content["error"]
    assert field in error["message"] and fix in error["message"] + error["hint"], error
