"""The extended profile's rules, work state, projects and lifetimes, over the real server and
the official SDK client (stdio): each result valid against its output schema, each write one
commit of a file in git, and what was written still there after a restart."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.e2e.mcp_client import anyio_backend, call, stdio_session, text_of  # noqa: F401
from tests.helpers import create_args, eventually_async, git
from vault_tool.storage.store import Store

pytestmark = pytest.mark.anyio
EXTENDED = ("--tools", "extended", "--project", "shop")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    Store.init(root).close()
    return root


def commits(root: Path) -> int:
    return int(git(root, "rev-list", "--count", "HEAD"))


async def test_rules_are_added_once_listed_marked_for_a_recheck_and_confirmed(vault: Path):
    async with stdio_session(vault, options=EXTENDED) as (session, _):
        made = (await call(session, "remember", create_args())).structured_content
        before = commits(vault)
        rule = {
            "then": "Ask Ana before changing how invoices are issued",
            "when": "you touch the billing service",
            "evidence_memory_ids": [made["memory_id"]],
        }
        added = await call(session, "add_rule", rule)
        again = await call(session, "add_rule", {**rule, "then": rule["then"].upper()})
        listed = await call(session, "list_rules", {})
        update = create_args(body="She took it over, and runs it now.")
        update.update(
            mode="update", memory_id=made["memory_id"], expected_version_id=made["version_id"]
        )
        await call(session, "remember", update)
        stale = await call(session, "list_rules", {})
        rule_id = added.structured_content["id"]
        confirmed = await call(session, "confirm_rule", {"id": rule_id})
        fresh = await call(session, "list_rules", {})
    assert added.structured_content["status"] == "added"
    assert again.structured_content["status"] == "unchanged"
    assert again.structured_content["id"] == rule_id
    assert commits(vault) == before + 3  # the rule, the update, the confirmation
    [shown] = listed.structured_content["rules"]
    assert shown["when"] == rule["when"] and shown["recheck"] is None
    assert shown["evidence_memory_ids"] == [made["memory_id"]]
    assert "[re-check" in text_of(stale)
    assert f"When {rule['when']}: {rule['then']}  [everywhere]" in text_of(fresh)
    assert f"{made['memory_id']} changed" in stale.structured_content["rules"][0]["recheck"]
    assert confirmed.structured_content["status"] == "confirmed"
    assert fresh.structured_content["rules"][0]["recheck"] is None
    path = shown["path"]
    assert path.startswith("rule/") and git(vault, "log", "-1", "--format=%s", "--", path) == (
        "Confirm rule: Ask Ana before changing how invoices are issued"
    )
    text = (vault / path).read_text()
    assert "memory_type: rule" in text and "when: you touch the billing service" in text

    async with stdio_session(vault, options=EXTENDED) as (session, _):  # after a restart
        again = await call(session, "list_rules", {})
        context = await call(session, "session_context", {})
    assert [r["id"] for r in again.structured_content["rules"]] == [rule_id]
    assert "Ask Ana before changing" in context.structured_content["block"]


async def test_work_state_is_replaced_whole_one_commit_a_write_and_kept_in_git(vault: Path):
    async with stdio_session(vault, options=EXTENDED) as (session, _):
        empty = await call(session, "work_state_read", {"name": "todo"})
        before = commits(vault)
        first = await call(
            session, "work_state_write", {"name": "todo", "items": ["ship docs", "fix hooks"]}
        )
        items = ["fix hooks", {"task": "release", "done": False}, 3]
        second = await call(session, "work_state_write", {"name": "todo", "items": items})
        other = await call(
            session, "work_state_write", {"name": "todo", "items": ["x"], "project": "blog"}
        )
    assert empty.structured_content == {
        "project": "shop", "name": "todo", "path": "state/shop/todo.yaml", "exists": False,
        "items": [], "lists": [],
    }  # fmt: skip
    assert "No list named shop/todo" in text_of(empty)
    assert first.structured_content["replaced"] is None
    assert second.structured_content["replaced"] == 2 and second.structured_content["items"] == 3
    assert other.structured_content["path"] == "state/blog/todo.yaml"
    assert commits(vault) == before + 3
    assert git(vault, "log", "-1", "--format=%s", "--", "state/shop/todo.yaml") == (
        "Work state: shop/todo (3 items)"
    )
    assert git(vault, "status", "--porcelain") == ""

    async with stdio_session(vault, options=EXTENDED) as (session, _):  # after a restart
        read = await call(session, "work_state_read", {"name": "todo"})
        (vault / "state/shop/todo.yaml").write_text("items:\n  - a person's own edit\n")
        refused = await call(session, "work_state_write", {"name": "todo", "items": []})
    assert read.structured_content["items"] == items
    assert read.structured_content["version_id"] == second.structured_content["version_id"]
    assert refused.is_error
    assert refused.structured_content["error"]["code"] == "version_conflict"
    assert "git restore state/shop/todo.yaml" in refused.structured_content["error"]["hint"]
    assert "a person's own edit" in (vault / "state/shop/todo.yaml").read_text()


async def test_memories_go_into_the_servers_project_and_search_narrows_to_one(vault: Path):
    async with stdio_session(vault, options=EXTENDED) as (session, _):
        mine = await call(session, "remember", create_args("Ana owns the billing service"))
        theirs = create_args("Ana owns the blog engine")
        theirs["semantic_delta"]["project"] = "blog"
        await call(session, "remember", theirs)
        everywhere = await call(session, "search", {"query": "Ana owns"})
        shop = await call(session, "search", {"query": "Ana owns", "project": "shop"})
        blog = await call(session, "search", {"query": "Ana owns", "project": "blog"})
        context = await call(session, "session_context", {"project": "blog"})
    assert everywhere.structured_content["total_matches"] == 2  # not narrowed unless asked
    assert [h["title"] for h in shop.structured_content["selected_hits"]] == [
        "Ana owns the billing service"
    ]
    assert [h["title"] for h in blog.structured_content["selected_hits"]] == [
        "Ana owns the blog engine"
    ]
    assert "project: shop\n" in (vault / mine.structured_content["path"]).read_text()
    assert context.structured_content["project"] == "blog"
    assert "blog engine" in context.structured_content["block"]
    assert "Ana owns the billing service" not in context.structured_content["block"]


async def test_ttl_seconds_sets_expires_at_and_the_memory_is_hidden_once_it_passes(vault: Path):
    async with stdio_session(vault, options=EXTENDED) as (session, _):
        listed = {t.name: t for t in (await session.list_tools()).tools}
        asked = datetime.now(UTC)
        made = await call(session, "remember", {**create_args(), "ttl_seconds": 2})
        expires = made.structured_content["path"]
        clash = create_args(title="Other", expires_at="2030-01-01")
        refused = await call(session, "remember", {**clash, "ttl_seconds": 60})

        async def hidden() -> bool:
            found = await session.call_tool("search", {"query": "billing service"})
            return found.structured_content["total_matches"] == 0

        await eventually_async(hidden, what="the memory past its ttl hidden from search")
    assert "ttl_seconds" in listed["remember"].input_schema["properties"]
    text = (vault / expires).read_text()
    at = datetime.fromisoformat(text.split("expires_at: ")[1].split("\n")[0].replace("Z", "+00:00"))
    assert asked + timedelta(seconds=1) <= at <= datetime.now(UTC) + timedelta(seconds=2)
    assert refused.is_error and "ttl_seconds" in refused.structured_content["error"]["message"]


async def test_the_core_profile_lists_every_field_it_accepts(vault: Path):
    async with stdio_session(vault, options=("--project", "shop")) as (session, _):
        listed = {t.name: t for t in (await session.list_tools()).tools}
        made = await call(session, "remember", {**create_args(), "ttl_seconds": 3600})
    assert "ttl_seconds" in listed["remember"].input_schema["properties"]
    assert "project" in listed["search"].input_schema["properties"]
    assert (
        not made.is_error and "expires_at:" in (vault / made.structured_content["path"]).read_text()
    )
