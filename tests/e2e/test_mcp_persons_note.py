"""Over the real stdio server, an agent adds a line to a note a person wrote: it reads the
note by its path id, sends back what it read with one more sentence, and a host that checks
the call against the listed input schema lets it through. The person's front matter (a
comment, their own fields and dates) stays; the path id still reads the note; a retitle
names the old title in the commit."""

from __future__ import annotations

from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from tests.e2e.mcp_client import (  # noqa: F401 (anyio_backend is a fixture)
    anyio_backend,
    call,
    stdio_session,
)
from tests.helpers import git
from vault_tool.engine.vault import Vault

pytestmark = pytest.mark.anyio

NOTE = """---
title: Zoë's onboarding
# kept short on purpose
created: 2023-05-01
author: Zoë
tags: [Onboarding, people]
---
# Zoë's onboarding

Zoë starts on Monday.
"""


def _persons_note(vault_path: Path) -> None:
    (vault_path / "notes").mkdir()
    (vault_path / "notes" / "zoe.md").write_text(NOTE, encoding="utf-8")
    with Vault.open(vault_path, client="person") as vault:
        vault.commit_hand_edits()


async def _checked_call(session, arguments: dict):
    """A remember call as a host that validates arguments against the listing sends it."""
    listed = {t.name: t for t in (await session.list_tools()).tools}
    Draft202012Validator(listed["remember"].input_schema).validate(arguments)
    return await call(session, "remember", arguments)


async def test_an_agent_adds_a_line_to_a_persons_note_and_the_person_keeps_theirs(
    vault_path: Path,
) -> None:
    _persons_note(vault_path)
    async with stdio_session(vault_path) as (session, _):
        read = (await call(session, "search", {"memory_id": "notes/zoe"})).structured_content
        assert read["semantic_delta"]["entities"] == read["semantic_delta"]["facts"] == []
        added = read["content_md"].rstrip() + "\n\nShe pairs with Ana in week one.\n"
        update = {
            "mode": "update",
            "memory_id": "notes/zoe",
            "expected_version_id": read["version_id"],
            "content_md": added,
            "semantic_delta": read["semantic_delta"],
        }
        written = await _checked_call(session, update)
        assert not written.is_error, written.content
        result = written.structured_content
        assert result["status"] == "updated" and result["path"] == "notes/zoe.md"

        text = (vault_path / "notes" / "zoe.md").read_text(encoding="utf-8")
        head = text.split("\n---\n", 1)[0]
        for kept in ("# kept short on purpose", "created: 2023-05-01", "author: Zoë",
                     "tags: [Onboarding, people]"):  # fmt: skip
            assert kept in head, (kept, text)
        assert "source:" not in head
        assert f"id: {result['memory_id']}" in head
        assert text.endswith("Zoë starts on Monday.\n\nShe pairs with Ana in week one.\n")

        again = (await call(session, "search", {"memory_id": "notes/zoe"})).structured_content
        assert again["memory_id"] == result["memory_id"]  # the path id still reads it
        assert again["created"] == read["created"] == "2023-05-01"

        retitled = {
            **update,
            "expected_version_id": again["version_id"],
            "content_md": added.replace("# Zoë's onboarding", "# Zoë's first week", 1),
            "semantic_delta": {**again["semantic_delta"], "title": "Zoë's first week"},
        }
        assert not (await _checked_call(session, retitled)).is_error
    subject = git(vault_path, "log", "-1", "--format=%s")
    assert subject == "Update note: Zoë's first week (was Zoë's onboarding)"


async def test_the_core_listing_takes_every_field_the_server_accepts(vault_path: Path) -> None:
    async with stdio_session(vault_path) as (session, _):
        made = await _checked_call(
            session,
            {
                "mode": "create",
                "ttl_seconds": 3600,
                "content_md": "# Staging runs in eu-west-1\n\nSince the move.\n",
                "semantic_delta": {
                    "memory_type": "fact",
                    "title": "Staging runs in eu-west-1",
                    "project": "billing-api",
                    "entities": [
                        {"n": "staging", "kind": "service", "is": "the staging cluster"},
                        {"n": "eu-west-1", "kind": "region", "is": "the Irish cloud region"},
                    ],
                    "facts": [
                        {"subject": "staging", "predicate": "runs_in", "object": "eu-west-1"}
                    ],
                },
            },
        )
        assert not made.is_error, made.content
    text = (vault_path / made.structured_content["path"]).read_text(encoding="utf-8")
    assert "project: billing-api" in text and "expires_at:" in text
