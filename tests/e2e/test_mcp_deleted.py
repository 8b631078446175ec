"""An agent that reads a deleted memory over MCP is told when and by whom it was deleted,
and that a person can restore it; after `vault-tool restore` the same read finds it again."""

from __future__ import annotations

from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from tests.cli_support import invoke
from tests.e2e.mcp_client import (  # noqa: F401 (anyio_backend is a fixture)
    CLIENT_NAME,
    anyio_backend,
    stdio_session,
    text_of,
)
from tests.helpers import create_args, eventually_async
from vault_tool.core import schema

pytestmark = pytest.mark.anyio

ERROR_SCHEMA = Draft202012Validator(schema.bundled("error.schema.json"))


async def test_a_deleted_memory_read_by_id_says_when_who_and_how_to_restore(vault_path: Path):
    async with stdio_session(vault_path) as (session, _):
        made = (await session.call_tool("remember", create_args())).structured_content
        delete = {"mode": "delete", "memory_id": made["memory_id"],
                  "expected_version_id": made["version_id"]}  # fmt: skip
        gone = (await session.call_tool("remember", delete)).structured_content
        read = await session.call_tool("search", {"memory_id": made["memory_id"]})
        assert read.is_error
        ERROR_SCHEMA.validate(read.structured_content)
        error = read.structured_content["error"]
        assert error["code"] == "not_found", error
        assert "was deleted on" in error["message"] and CLIENT_NAME in error["message"]
        assert gone["version_id"][:10] in error["message"]
        assert f"vault-tool restore {made['memory_id']}" in error["hint"]
        assert error["message"] in text_of(read) and error["hint"] in text_of(read)

        restored = invoke("restore", made["memory_id"], "--vault", vault_path)
        assert restored.exit_code == 0, restored.stdout + restored.stderr

        async def found() -> dict | None:
            again = await session.call_tool("search", {"memory_id": made["memory_id"]})
            return None if again.is_error else again.structured_content

        back = await eventually_async(found, timeout=10, interval=0.1, what="the restored read")
        assert back["path"] == made["path"]
