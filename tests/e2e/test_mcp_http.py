"""`vault-tool serve --http` as a subprocess: the SDK's Streamable HTTP client, and raw refusals."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.e2e.mcp_client import (  # noqa: F401 (fixtures)
    CLIENT_NAME,
    SERVE,
    HttpServer,
    anyio_backend,
    children_of,
    http_session,
    is_alive,
    server_env,
)
from tests.helpers import create_args, git
from vault_tool.engine.vault import Vault

pytestmark = pytest.mark.anyio

TOKEN = "full-token-0123456789abcdef"
READ_ONLY = "read-only-token-0123456789"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def bearer(token: str) -> dict[str, str]:
    """The Authorization header for a token."""
    return {"Authorization": f"Bearer {token}"}


def post(url: str, body: Any = INITIALIZE, **headers: str) -> httpx2.Response:
    """One raw POST to the MCP endpoint."""
    return httpx2.post(url, json=body, headers={**MCP_HEADERS, **headers}, timeout=10)


def audit(vault: Path) -> list[dict[str, Any]]:
    """Every audit record so far."""
    lines = (vault / ".vault/run/audit.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


async def test_both_tools_work_over_http_with_a_full_token(vault_path: Path) -> None:
    with HttpServer(vault_path, "--token", TOKEN, "--read-only-token", READ_ONLY) as server:
        async with http_session(server.url, bearer(TOKEN)) as session:
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert sorted(tools) == ["remember", "search"]
            created = await session.call_tool("remember", create_args())
            made = created.structured_content
            assert made["status"] == "created"
            found = await session.call_tool("search", {"query": "who owns billing"})
            assert found.structured_content["selected_hits"][0]["memory_id"] == made["memory_id"]
            read = await session.call_tool("search", {"memory_id": made["memory_id"]})
            assert read.structured_content["version_id"] == made["version_id"]
            refused = await session.call_tool("remember", {**create_args(), "content_md": "no h1"})
            assert (
                refused.is_error and "content_md" in refused.structured_content["error"]["message"]
            )
        assert f"Client: {CLIENT_NAME}" in git(vault_path, "log", "-1", "--format=%B")
        records = audit(vault_path)
        calls = [r for r in records if "tool" in r]
        assert [(r["tool"], r["result"]) for r in calls] == [
            ("remember", "ok"), ("search", "ok"), ("search", "ok"), ("remember", "error"),
        ]  # fmt: skip
        assert all(r["token"].startswith("full:") and r["client"] == CLIENT_NAME for r in calls)
        text = (vault_path / ".vault/run/audit.jsonl").read_text()
        assert "who owns billing" not in text and TOKEN not in text  # never arguments or secrets
        assert server.stop() == 0


async def test_a_read_only_token_sees_and_may_call_search_only(vault_path: Path) -> None:
    with HttpServer(vault_path, "--token", TOKEN, "--read-only-token", READ_ONLY) as server:
        head = git(vault_path, "rev-parse", "HEAD")
        async with http_session(server.url, bearer(READ_ONLY)) as session:
            assert [t.name for t in (await session.list_tools()).tools] == ["search"]
            refused = await session.call_tool("remember", create_args())
            assert refused.is_error
            error = refused.structured_content["error"]
            assert error["code"] == "forbidden" and "scope is read" in error["message"]
            assert not (await session.call_tool("search", {"query": "billing"})).is_error
        assert git(vault_path, "rev-parse", "HEAD") == head
        assert [r["token"].split(":")[0] for r in audit(vault_path) if "tool" in r] == [
            "read-only", "read-only",
        ]  # fmt: skip

        # A session belongs to the token that opened it: the read-only token cannot borrow one.
        opened = post(server.url, **bearer(TOKEN))
        session_id = opened.headers["mcp-session-id"]
        borrowed = post(
            server.url,
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
             "params": {"name": "remember", "arguments": create_args()}},
            **bearer(READ_ONLY), **{"Mcp-Session-Id": session_id},
        )  # fmt: skip
        assert borrowed.status_code == 404
        assert git(vault_path, "rev-parse", "HEAD") == head


async def test_a_read_only_token_in_the_extended_profile_may_read_but_not_dismiss(
    vault_path: Path,
) -> None:
    with Vault.open(vault_path) as vault:
        made = vault.remember(create_args("Ana owns the billing service"))
    options = ("--token", TOKEN, "--read-only-token", READ_ONLY, "--tools", "extended")
    with HttpServer(vault_path, *options) as server:
        head = git(vault_path, "rev-parse", "HEAD")
        async with http_session(server.url, bearer(READ_ONLY)) as session:
            listed = [t.name for t in (await session.list_tools()).tools]
            assert listed == [
                "search", "session_context", "read", "timeline", "fact_history", "list_rules",
                "work_state_read",
            ]  # fmt: skip
            refused = await session.call_tool("dismiss", {"memory_id": made["memory_id"]})
            assert refused.is_error
            assert refused.structured_content["error"]["code"] == "forbidden"
            read = await session.call_tool("read", {"memory_ids": [made["memory_id"]]})
            assert not read.is_error
        assert git(vault_path, "rev-parse", "HEAD") == head


def test_missing_and_wrong_tokens_get_401_with_a_bearer_challenge(vault_path: Path) -> None:
    with HttpServer(vault_path, "--token", TOKEN) as server:
        missing = post(server.url)
        assert missing.status_code == 401
        assert missing.headers["www-authenticate"].startswith("Bearer")
        wrong = post(server.url, **bearer(TOKEN + "x"))
        assert wrong.status_code == 401
        assert 'error="invalid_token"' in wrong.headers["www-authenticate"]
        assert post(server.url, **bearer(TOKEN)).status_code == 200
        refusals = [(r["refused"], r["reason"]) for r in audit(vault_path) if "refused" in r]
        assert refusals == [(401, "missing token"), (401, "wrong token")]


def test_a_foreign_origin_gets_403_and_a_foreign_host_421(vault_path: Path) -> None:
    with HttpServer(vault_path, "--token", TOKEN) as server:
        evil = post(server.url, Origin="http://evil.example", **bearer(TOKEN))
        assert evil.status_code == 403
        rebinding = post(server.url, Host="evil.example", **bearer(TOKEN))
        assert rebinding.status_code == 421
        local_page = post(server.url, Origin=f"http://127.0.0.1:{server.port}", **bearer(TOKEN))
        assert local_page.status_code == 200
        # A port pattern matches a port, not any text after the colon.
        sneaky_host = post(server.url, Host="localhost:1@evil.example", **bearer(TOKEN))
        assert sneaky_host.status_code == 421
        sneaky_page = post(server.url, Origin="http://localhost:1.evil.example", **bearer(TOKEN))
        assert sneaky_page.status_code == 403


def test_the_rate_limit_answers_429_with_retry_after(vault_path: Path) -> None:
    with HttpServer(vault_path, "--token", TOKEN, "--rate-limit", "3") as server:
        statuses = [post(server.url, **bearer(TOKEN)).status_code for _ in range(3)]
        assert statuses == [200, 200, 200]
        limited = post(server.url, **bearer(TOKEN))
        assert limited.status_code == 429
        assert int(limited.headers["retry-after"]) >= 1


def test_listening_beyond_loopback_needs_a_token_and_known_host_names(vault_path: Path) -> None:
    def serve(*options: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*SERVE, "--http", "--vault", str(vault_path), *options],
            capture_output=True,
            env=server_env(),
            timeout=20,
        )

    no_token = serve("--host", "0.0.0.0")
    assert no_token.returncode == 2
    assert b"--token" in no_token.stderr
    unknown_names = serve("--host", "0.0.0.0", "--token", TOKEN)
    assert unknown_names.returncode == 2
    assert b"--allow-host" in unknown_names.stderr
    weak = serve("--token", "short")
    assert weak.returncode == 2 and b"too short" in weak.stderr


async def test_loopback_without_a_token_serves_and_sigterm_leaves_nothing_behind(
    vault_path: Path,
) -> None:
    with HttpServer(vault_path) as server:
        async with http_session(server.url) as session:
            created = await session.call_tool("remember", create_args())
            assert created.structured_content["status"] == "created"
        helpers = children_of(server.process.pid)
        assert server.stop() == 0
        assert not [pid for pid, _ in helpers if is_alive(pid)]
        assert "server stopped" in (vault_path / ".vault/run/server.log").read_text()
