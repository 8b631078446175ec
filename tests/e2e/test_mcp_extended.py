"""The extended profile (`serve --tools extended`, or `[server] tools` in the vault's config)
over the real server and the official SDK client (stdio): it lists search and remember and
the tools it adds, each described with its schemas and annotations, and each answers good
input with a result its output schema accepts and bad input with an isError naming the
field and the fix. The default profile still lists exactly the two tools."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError

from tests.e2e.mcp_client import anyio_backend, call, stdio_session, text_of  # noqa: F401
from tests.e2e.test_mcp_search_pages import NOTES, make_billing, ready
from tests.helpers import git

pytestmark = pytest.mark.anyio

EXTENDED = [
    "search", "remember", "session_context", "read", "timeline", "fact_history", "dismiss",
    "restore_dismissed", "add_rule", "list_rules", "confirm_rule", "work_state_read",
    "work_state_write",
]  # fmt: skip


@pytest.fixture
def billing(tmp_path: Path) -> Path:
    return make_billing(tmp_path)


async def test_the_default_profile_lists_exactly_search_and_remember(billing: Path):
    async with stdio_session(billing) as (session, _):
        listed = (await session.list_tools()).tools
        with pytest.raises(MCPError, match="Unknown tool: 'timeline'; this server has search"):
            await session.call_tool("timeline", {"query": "billing"})
    assert [t.name for t in listed] == ["search", "remember"]


async def test_the_extended_profile_lists_its_tools_each_described(billing: Path):
    async with stdio_session(billing, options=("--tools", "extended")) as (session, _):
        listed = (await session.list_tools()).tools
    assert [t.name for t in listed] == EXTENDED
    for tool in listed:
        assert tool.description and tool.input_schema["type"] == "object"
        assert tool.output_schema and tool.annotations is not None
    read_only = {t.name: t.annotations.read_only_hint for t in listed}
    assert read_only == {
        "search": True,
        "remember": False,
        "session_context": True,
        "read": True,
        "timeline": True,
        "fact_history": True,
        "dismiss": False,
        "restore_dismissed": False,
        "add_rule": False,
        "list_rules": True,
        "confirm_rule": False,
        "work_state_read": True,
        "work_state_write": False,
    }
    destructive = {t.name: t.annotations.destructive_hint for t in listed if t.name != "search"}
    assert destructive == {
        "remember": True, "session_context": None, "read": None, "timeline": None,
        "fact_history": None, "dismiss": False, "restore_dismissed": False, "add_rule": False,
        "list_rules": None, "confirm_rule": False, "work_state_read": None,
        "work_state_write": True,
    }  # fmt: skip


async def test_the_vaults_setting_chooses_the_profile(billing: Path):
    config = billing / ".vault" / "config.toml"
    config.write_text(config.read_text().replace('tools = "core"', 'tools = "extended"'))
    async with stdio_session(billing) as (session, _):
        assert [t.name for t in (await session.list_tools()).tools] == EXTENDED


async def test_read_gives_several_memories_in_full_and_lists_unknown_ids(billing: Path):
    async with stdio_session(billing, options=("--tools", "extended")) as (session, _):
        await ready(session)
        hits = await call(session, "search", {"query": "billing", "top_k": 3})
        ids = [h["memory_id"] for h in hits.structured_content["selected_hits"]]
        result = await call(session, "read", {"memory_ids": [*ids, "notes/never-stored"]})
    assert not result.is_error
    memories = result.structured_content["memories"]
    assert [m["memory_id"] for m in memories] == ids
    assert all(m["content_md"].startswith("# Billing") for m in memories)
    assert result.structured_content["unknown"] == ["notes/never-stored"]
    assert "notes/never-stored" in text_of(result) and "<<< BEGIN memory" in text_of(result)


async def test_a_timeline_is_oldest_first_around_its_anchor(billing: Path):
    by_date = [t for t, _, _ in sorted(NOTES, key=lambda n: (n[1], n[2]))]
    async with stdio_session(billing, options=("--tools", "extended")) as (session, _):
        await ready(session)
        found = await call(session, "search", {"key": "billing.retention"})
        anchor = found.structured_content["selected_hits"][0]["memory_id"]
        around = await call(session, "timeline", {"memory_id": anchor, "before": 1, "after": 1})
        by_query = await call(session, "timeline", {"query": "receipts seven years"})
    at = by_date.index("Billing keeps receipts seven years")
    entries = around.structured_content["entries"]
    assert [e["title"] for e in entries] == by_date[at - 1 : at + 2]
    assert [e["anchor"] for e in entries] == [False, True, False]
    assert around.structured_content["earlier"] == at - 1
    assert around.structured_content["later"] == len(NOTES) - at - 2
    assert by_query.structured_content["anchor"] == anchor
    assert [e["title"] for e in by_query.structured_content["entries"]] == by_date


async def test_dismiss_hides_a_memory_and_restore_brings_it_back_each_one_commit(billing: Path):
    async with stdio_session(billing, options=("--tools", "extended")) as (session, _):
        await ready(session)
        found = await call(session, "search", {"key": "billing.retention"})
        memory_id = found.structured_content["selected_hits"][0]["memory_id"]
        hidden = await call(
            session, "dismiss", {"memory_id": memory_id, "reason": "the policy changed"}
        )
        again = await call(session, "dismiss", {"memory_id": memory_id})
        gone = await call(session, "search", {"query": "receipts seven years"})
        back = await call(session, "restore_dismissed", {"memory_id": memory_id})
        seen = await call(session, "search", {"query": "receipts seven years"})
    assert hidden.structured_content["status"] == "dismissed"
    assert again.structured_content["status"] == "unchanged"
    assert memory_id not in [h["memory_id"] for h in gone.structured_content["selected_hits"]]
    assert back.structured_content["status"] == "restored"
    assert seen.structured_content["selected_hits"][0]["memory_id"] == memory_id
    log = git(billing, "log", "-2", "--format=%s%n%b")
    assert "Undismiss fact: Billing keeps receipts seven years" in log
    assert "Dismiss fact: Billing keeps receipts seven years\nReason: the policy changed" in log
    assert git(billing, "log", "-1", "--format=%H") == back.structured_content["version_id"]


async def test_fact_history_answers_over_the_wire_in_its_schema(billing: Path):
    async with stdio_session(billing, options=("--tools", "extended")) as (session, _):
        await ready(session)
        result = await call(session, "fact_history", {"subject": "billing service"})
    assert not result.is_error
    assert result.structured_content["facts"] == [] and "No fact" in text_of(result)


@pytest.mark.parametrize(
    ("tool", "arguments", "field", "fix"),
    [
        ("read", {}, "memory_ids", "memory_ids"),
        ("read", {"memory_ids": []}, "memory_ids", "at least one"),
        ("read", {"memory_ids": [f"notes/n{i}" for i in range(21)]}, "memory_ids", "20"),
        ("timeline", {}, "memory_id", "exactly one"),
        ("timeline", {"memory_id": "notes/x", "query": "billing"}, "memory_id", "exactly one"),
        ("timeline", {"query": "billing", "before": 50}, "before", "0 to 20"),
        ("timeline", {"memory_id": "notes/never-stored"}, "memory_id", "search"),
        ("timeline", {"query": "zebra unicorn"}, "query", "other words"),
        ("fact_history", {}, "subject", "subject"),
        ("fact_history", {"subject": "billing", "predicate": "Runs In"}, "predicate", "predicate"),
        ("fact_history", {"subject": "billing", "limit": 0}, "limit", "1 to 100"),
        ("dismiss", {}, "memory_id", "memory_id"),
        ("dismiss", {"memory_id": "notes/never-stored"}, "memory_id", "search"),
        ("dismiss", {"memory_id": "fact/note-1", "reason": "two\nlines"}, "reason", "reason"),
        ("restore_dismissed", {"memory_id": "../outside"}, "memory_id", "memory_id"),
        ("add_rule", {}, "then", "then"),
        ("add_rule", {"then": "x", "scope": "project"}, "scope_name", "scope_name"),
        ("add_rule", {"then": "x", "evidence_memory_ids": ["notes/gone"]}, "evidence", "search"),
        ("list_rules", {"limit": 0}, "limit", "1 to 100"),
        ("confirm_rule", {"id": "fact/note-1"}, "id", "list_rules"),
        ("work_state_read", {"name": "To Do"}, "name", "lowercase"),
        ("work_state_write", {"name": "todo"}, "items", "items"),
        ("work_state_write", {"name": "todo", "items": [[1, 2]]}, "items[0]", "string"),
        ("session_context", {"project": "Not A Project"}, "project", "lowercase"),
    ],
)
async def test_bad_input_to_an_extended_tool_names_the_field_and_the_fix(
    billing: Path, tool: str, arguments: dict, field: str, fix: str
):
    async with stdio_session(billing, options=("--tools", "extended")) as (session, _):
        await ready(session)
        result = await call(session, tool, arguments)
    assert result.is_error, text_of(result)
    error = result.structured_content["error"]
    assert field in error["message"] and fix in error["message"] + error["hint"], error
