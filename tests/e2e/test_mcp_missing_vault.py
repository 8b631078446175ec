"""A host started on a vault that is not there (a path mistyped in its config, a vault
moved) is answered: `initialize` and the tool list as usual, and every call an error
result that says what is wrong and how to fix it, also written on stderr, where a host
shows a server's complaints. Nothing is created at the path. The real server over stdio,
driven by the official client."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from tests.e2e.mcp_client import (  # noqa: F401 (anyio_backend is a fixture)
    anyio_backend,
    call,
    stdio_session,
    text_of,
)
from tests.helpers import create_args

pytestmark = pytest.mark.anyio


async def test_a_missing_vault_is_answered_and_every_call_says_what_is_wrong(tmp_path: Path):
    missing = tmp_path / "nowhere"
    with tempfile.TemporaryFile("w+") as errors:
        async with stdio_session(missing, errlog=errors) as (session, started):
            assert started.server_info.name
            names = {tool.name for tool in (await session.list_tools()).tools}
            assert names == {"search", "remember"}
            for tool, arguments in (("search", {"query": "billing"}), ("remember", create_args())):
                result = await call(session, tool, arguments)
                assert result.is_error
                said = text_of(result)
                assert f"no vault at {missing}" in said and "vault-tool init" in said
                error = result.structured_content["error"]
                assert error["code"] == "vault_unavailable" and "init" in error["hint"]
        errors.seek(0)
        stderr = errors.read()
    assert f"no vault at {missing}" in stderr and "vault-tool init" in stderr
    assert not missing.exists()
