"""Over the real stdio server: a broken file is visible and refuses writes with its reason, a
refusal lists every problem at once, and a create that looks stored names the stored one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tests.e2e.mcp_client import (  # noqa: F401 (anyio_backend is a fixture)
    anyio_backend,
    call,
    stdio_session,
    text_of,
)
from tests.helpers import create_args, eventually_async
from vault_tool.core import schema

pytestmark = pytest.mark.anyio

ERROR_SCHEMA = Draft202012Validator(schema.bundled("error.schema.json"))


async def test_a_broken_file_shows_its_problem_and_refuses_the_update_with_it(
    vault_path: Path,
) -> None:
    async with stdio_session(vault_path) as (session, _):
        made = (
            await call(session, "remember", create_args(body="Cube droppings."))
        ).structured_content
        file = vault_path / made["path"]
        broken = file.read_text().replace("\ntitle: ", "\ntitle: [", 1)
        file.write_text(broken)

        # Waited for the YAML problem itself: write_text truncates before it writes, and a
        # watcher that reads in between records "the file is empty" until the next read.
        async def flagged() -> Any:
            found = await call(session, "search", {"query": "cube droppings"})
            hits = found.structured_content["selected_hits"]
            problem = hits[0].get("problem", {}) if hits else {}
            return found if "YAML" in problem.get("reason", "") else None

        found = await eventually_async(flagged, timeout=10, interval=0.1, what="the problem")
        hit = found.structured_content["selected_hits"][0]
        assert hit["problem"]["file"] == made["path"] and "YAML" in hit["problem"]["reason"]
        assert "a person must fix" in text_of(found)
        read = await call(session, "search", {"memory_id": made["memory_id"]})
        assert "YAML" in read.structured_content["problem"]["reason"]
        assert "a person must fix" in text_of(read)

        update = {
            **create_args(body="Square droppings."),
            "mode": "update",
            "memory_id": made["memory_id"],
            "expected_version_id": read.structured_content["version_id"],
        }
        refused = await call(session, "remember", update)
        assert refused.is_error
        ERROR_SCHEMA.validate(refused.structured_content)
        error = refused.structured_content["error"]
        assert error["code"] == "unparseable_file"
        assert "YAML" in error["message"] and "current_version_id" not in error
        assert "person" in text_of(refused)
    assert file.read_text() == broken


async def test_a_call_with_three_mistakes_gets_one_refusal_listing_all_three(
    vault_path: Path,
) -> None:
    args = create_args()
    args["content_md"] = "Ana owns billing, no heading"
    args["semantic_delta"]["facts"] = [
        {"subject": "Ana", "predicate": "Owns It", "object": "Bob"},
    ]
    async with stdio_session(vault_path) as (session, _):
        refused = await call(session, "remember", args)
    assert refused.is_error
    ERROR_SCHEMA.validate(refused.structured_content)
    listed = refused.structured_content["error"]["problems"]
    assert sorted(p["field"] for p in listed) == [
        "content_md",
        "semantic_delta.facts[0].object",
        "semantic_delta.facts[0].predicate",
    ]
    text = text_of(refused)
    assert "3 problems" in text and text.count("Fix: ") == 3


async def test_a_create_with_a_stored_title_succeeds_and_names_the_stored_memory(
    vault_path: Path,
) -> None:
    async with stdio_session(vault_path) as (session, _):
        first = (
            await call(session, "remember", create_args(body="Since March."))
        ).structured_content
        again = await call(session, "remember", create_args(body="She took it over from Bo."))
    made = again.structured_content
    assert not again.is_error and made["status"] == "created"
    assert made["similar"] == [
        {
            "memory_id": first["memory_id"],
            "title": "Ana owns the billing service",
            "version_id": first["version_id"],
        }
    ]
    assert "update that one instead if it is the same memory" in text_of(again)
