"""Times at the ends of the calendar over the real server and the official SDK client: a
memory that expires before year 1000 is written so the tool reads it back (fact_history
answers for its subject, expiry removes it), and a moment an offset carries out of the
calendar is refused naming the field, never an internal error."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.mcp_client import anyio_backend, call, stdio_session  # noqa: F401
from tests.helpers import create_args
from vault_tool.engine.vault import Vault

pytestmark = pytest.mark.anyio


async def test_an_old_expiry_and_moments_at_the_calendars_ends(vault_path: Path):
    async with stdio_session(vault_path, options=("--tools", "extended")) as (session, _):
        made = await call(session, "remember", create_args(expires_at="0999-12-31"))
        assert not made.is_error, made.structured_content
        facts = await call(session, "fact_history", {"subject": "Ana"})
        assert not facts.is_error, facts.structured_content
        since = await call(
            session, "search", {"query": "billing", "since": "0001-01-01T00:00-14:00"}
        )
        assert not since.is_error, since.structured_content
        for moment in ("0001-01-01T00:00+14:00", "9999-12-31T23:00-14:00"):
            refused = await call(session, "search", {"query": "billing", "until": moment})
            error = refused.structured_content["error"]
            assert refused.is_error and error["code"] == "invalid_input", error
            assert error["field"] == "until" and "0001-01-01 to 9999-12-31" in error["message"]
    path = vault_path / made.structured_content["path"]
    assert "expires_at: 0999-12-31T00:00:00Z" in path.read_text(encoding="utf-8")
    with Vault.open(vault_path) as vault:
        assert vault.expire().version_id is not None
    assert not path.exists()
