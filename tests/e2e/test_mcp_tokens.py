"""Tokens made with `vault-tool token create`, served by `serve --http` and used through the
SDK's Streamable HTTP client: scopes, projects, each token's own rate limit, the audit."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from tests.cli_support import invoke, invoke_json
from tests.e2e.mcp_client import HttpServer, anyio_backend, http_session  # noqa: F401
from tests.e2e.test_mcp_http import audit, bearer, post
from tests.helpers import create_args, git
from vault_tool.engine.vault import Vault

pytestmark = pytest.mark.anyio
OPTIONS = ("--tools", "extended")


def make(vault: Path, name: str, *options: str) -> str:
    """A new token's secret."""
    return invoke_json("token", "create", name, *options, "--vault", vault)["secret"]


def test_tokens_are_stored_hashed_private_and_listed_without_secrets(vault_path: Path) -> None:
    secret = make(vault_path, "ci-reader", "--project", "shop")
    stored = vault_path / ".git/vault-tool/tokens.json"
    assert secret.startswith("vt_") and secret not in stored.read_text()
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    assert "tokens.json" not in git(vault_path, "status", "--porcelain", "--ignored=no")
    listed = invoke_json("token", "list", "--vault", vault_path)
    assert listed == [
        {"name": "ci-reader", "scope": "read", "projects": ["shop"], "rate_per_minute": 60,
         "created": listed[0]["created"]},
    ]  # fmt: skip
    again = invoke("token", "create", "ci-reader", "--vault", vault_path)
    assert again.exit_code == 2 and "exists" in again.stderr
    assert invoke("token", "revoke", "ci-reader", "--vault", vault_path).exit_code == 0
    assert invoke_json("token", "list", "--vault", vault_path) == []
    missing = invoke("token", "revoke", "ci-reader", "--vault", vault_path)
    assert missing.exit_code == 4 and "no token is named" in missing.stderr


async def test_each_scope_reaches_its_tools_and_is_refused_the_others(vault_path: Path) -> None:
    reader = make(vault_path, "reader")
    writer = make(vault_path, "writer", "--scope", "write")
    admin = make(vault_path, "admin", "--scope", "admin")
    with HttpServer(vault_path, *OPTIONS) as server:
        async with http_session(server.url, bearer(writer)) as session:
            names = [t.name for t in (await session.list_tools()).tools]
            made = (await session.call_tool("remember", create_args())).structured_content
            refused = await session.call_tool("dismiss", {"memory_id": made["memory_id"]})
        async with http_session(server.url, bearer(reader)) as session:
            read_names = [t.name for t in (await session.list_tools()).tools]
            no_write = await session.call_tool("work_state_write", {"name": "a", "items": []})
        async with http_session(server.url, bearer(admin)) as session:
            done = await session.call_tool("dismiss", {"memory_id": made["memory_id"]})
    assert "dismiss" not in names and "remember" in names and "work_state_write" in names
    assert "remember" not in read_names and "work_state_write" not in read_names
    for result, scope in ((refused, "write"), (no_write, "read")):
        assert result.is_error and result.structured_content["error"]["code"] == "forbidden"
        assert f"scope is {scope}" in result.structured_content["error"]["message"]
    assert done.structured_content["status"] == "dismissed"


async def test_a_project_token_reaches_its_projects_only(vault_path: Path) -> None:
    with Vault.open(vault_path) as vault:
        other = create_args("Ana owns the blog engine")
        other["semantic_delta"]["project"] = "blog"
        theirs = vault.remember(other)
    secret = make(vault_path, "shop-agent", "--scope", "write", "--project", "shop")
    with HttpServer(vault_path, *OPTIONS) as server:
        async with http_session(server.url, bearer(secret)) as session:
            mine = (await session.call_tool("remember", create_args())).structured_content
            found = await session.call_tool("search", {"query": "Ana owns"})
            asked = await session.call_tool("search", {"query": "Ana owns", "project": "blog"})
            read = await session.call_tool("search", {"memory_id": theirs["memory_id"]})
            by_path = theirs["path"].removesuffix(".md")  # (the other name a memory answers to)
            read_path = await session.call_tool("read", {"memory_ids": [by_path]})
            update = {**create_args(), "mode": "update", "memory_id": by_path,
                      "expected_version_id": theirs["version_id"]}  # fmt: skip
            update_path = await session.call_tool("remember", update)
            across = await session.call_tool("fact_history", {"subject": "Ana"})
            context = await session.call_tool("session_context", {})
    assert "project: shop\n" in (vault_path / mine["path"]).read_text()
    hits = found.structured_content["selected_hits"]
    assert [h["memory_id"] for h in hits] == [mine["memory_id"]]  # its first project, not all
    refusals = [(asked, "project 'blog'"), (read, "in project 'blog'"), (across, ""),
                (read_path, "in project 'blog'"), (update_path, "in project 'blog'")]  # fmt: skip
    for refused, said in refusals:
        assert refused.is_error and refused.structured_content["error"]["code"] == "forbidden"
        assert said in refused.structured_content["error"]["message"]
    assert context.structured_content["project"] == "shop"
    calls = [r for r in audit(vault_path) if "tool" in r]
    assert {r["project"] for r in calls} == {"shop", "blog"}
    assert all(r["token"] == "token:shop-agent" for r in calls)
    text = (vault_path / ".vault/run/audit.jsonl").read_text()
    assert "Ana owns" not in text and secret not in text  # never arguments or secrets


def test_each_token_has_its_own_rate_limit(vault_path: Path) -> None:
    slow = make(vault_path, "slow", "--rate-limit", "2")
    fast = make(vault_path, "fast")
    with HttpServer(vault_path) as server:
        answers = [post(server.url, **bearer(slow)) for _ in range(3)]
        other = post(server.url, **bearer(fast)).status_code
        refusals = [r for r in audit(vault_path) if r.get("refused") == 429]
    assert [a.status_code for a in answers] == [200, 200, 429] and other == 200
    assert int(answers[2].headers["retry-after"]) >= 1
    assert [r["token"] for r in refusals] == ["token:slow"]
    assert json.dumps(refusals).count(slow) == 0


def test_tokens_outlive_git_clean_and_a_damaged_file_is_named(vault_path: Path) -> None:
    make(vault_path, "reader")
    git(vault_path, "clean", "-xfdq")
    assert [t["name"] for t in invoke_json("token", "list", "--vault", vault_path)] == ["reader"]
    stored = vault_path / ".git/vault-tool/tokens.json"
    data = json.loads(stored.read_text())
    data["tokens"][0]["sha256"] = "not hex"
    stored.write_text(json.dumps(data))
    listed = invoke("token", "list", "--vault", vault_path)
    assert listed.exit_code != 0 and "token 'reader': its sha256 is not valid" in listed.stderr
