"""`vault-tool connect HOST --url ...`: each host's entry for a remote `serve --http`."""

from __future__ import annotations

import json
import os
import stat
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.cli_support import invoke, invoke_json
from tests.e2e.mcp_client import HttpServer, anyio_backend, http_session  # noqa: F401 (fixture)
from vault_tool.ops.hosts import HOSTS

URL = "http://vault.lan:8765/mcp"
SECRET = "s3cret-token-that-is-long-enough"

# How each host reads the header from the environment, as its own docs describe it.
ENV_REFERENCE = {
    "claude-code": "Bearer ${VAULT_TOOL_TOKEN}",
    "cursor": "Bearer ${env:VAULT_TOOL_TOKEN}",
    "gemini-cli": "Bearer ${VAULT_TOOL_TOKEN}",
    "windsurf": "Bearer ${env:VAULT_TOOL_TOKEN}",
    "opencode": "Bearer {env:VAULT_TOOL_TOKEN}",
}


def remote(host: str, vault: Path, *options: str) -> dict[str, Any]:
    return invoke_json("connect", host, "--vault", vault, "--url", URL, *options)


def parsed(host: str, text: str) -> Any:
    return tomllib.loads(text) if host == "codex" else json.loads(text)


def entry_of(host: str, document: Any, name: str = "vault") -> dict[str, Any]:
    if host == "codex":
        return document["mcp_servers"][name]
    if host == "vscode":
        return document["servers"][name]
    if host == "opencode":
        return document["mcp"][name]
    return document["mcpServers"][name]


@pytest.mark.parametrize("host", HOSTS)
def test_each_host_gets_a_url_entry_whose_token_comes_from_the_environment(
    host: str, vault_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAULT_TOOL_TOKEN", SECRET)  # set, and still never written
    result = remote(host, vault_path)
    assert result["url"] == URL and result["command"] is None
    assert result["holds_secret"] is False
    assert SECRET not in result["snippet"]
    entry = entry_of(host, parsed(host, result["snippet"]))
    assert URL in json.dumps(entry)
    assert "command" not in entry
    if host == "codex":
        assert entry == {"url": URL, "bearer_token_env_var": "VAULT_TOOL_TOKEN"}
    elif host == "vscode":  # VS Code asks once and keeps the answer in its secret storage
        assert entry["type"] == "http"
        assert entry["headers"] == {"Authorization": "Bearer ${input:vault-token}"}
        inputs = json.loads(result["snippet"])["inputs"]
        assert inputs[0]["id"] == "vault-token" and inputs[0]["password"] is True
        assert result["token"]["from"] == "prompt"
    else:
        assert entry["headers"] == {"Authorization": ENV_REFERENCE[host]}
        assert result["token"]["from"] == "environment"
        assert result["token"]["variable"] == "VAULT_TOOL_TOKEN"
    assert result["token"]["note"]


def test_token_env_names_the_variable(vault_path: Path) -> None:
    result = remote("cursor", vault_path, "--token-env", "TEAM_VAULT_TOKEN")
    entry = entry_of("cursor", json.loads(result["snippet"]))
    assert entry["headers"]["Authorization"] == "Bearer ${env:TEAM_VAULT_TOKEN}"
    codex = remote("codex", vault_path, "--token-env", "TEAM_VAULT_TOKEN")
    assert tomllib.loads(codex["snippet"])["mcp_servers"]["vault"]["bearer_token_env_var"] == (
        "TEAM_VAULT_TOKEN"
    )


def test_write_fills_every_host_file_without_the_token(
    vault_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAULT_TOOL_TOKEN", SECRET)
    for host in HOSTS:
        result = remote(host, vault_path, "--write")
        assert result["written"] is True
        text = Path(result["config"]).read_text()
        assert SECRET not in text
        assert URL in json.dumps(entry_of(host, parsed(host, text)))
        assert remote(host, vault_path, "--write")["written"] is False  # idempotent


def test_write_replaces_a_stdio_entry_with_the_remote_one(vault_path: Path) -> None:
    for host in ("codex", "cursor", "vscode"):
        invoke_json("connect", host, "--vault", vault_path, "--write")
        result = remote(host, vault_path, "--write")
        entry = entry_of(host, parsed(host, Path(result["config"]).read_text()))
        assert "command" not in entry and "args" not in entry
        assert URL in json.dumps(entry)


def test_a_token_given_outright_is_written_and_the_output_says_so(vault_path: Path) -> None:
    done = invoke("connect", "cursor", "--vault", vault_path, "--url", URL, "--token", SECRET,
                  "--write")  # fmt: skip
    assert done.exit_code == 0, done.stderr
    config = Path(os.environ["HOME"]) / ".cursor" / "mcp.json"
    entry = entry_of("cursor", json.loads(config.read_text()))
    assert entry["headers"] == {"Authorization": f"Bearer {SECRET}"}
    assert "holds the token itself" in done.stdout
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    result = remote("codex", vault_path, "--token", SECRET)
    assert result["holds_secret"] is True and result["token"]["from"] == "file"
    table = tomllib.loads(result["snippet"])["mcp_servers"]["vault"]
    assert table == {"url": URL, "http_headers": {"Authorization": f"Bearer {SECRET}"}}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (("--url", "vault.lan:8765/mcp"), "--url"),
        (("--url", "http://vault.lan:8765"), "/mcp"),
        (("--url", URL, "--token-env", "not a name"), "--token-env"),
        (("--url", URL, "--token-env", "X", "--token", SECRET), "--token"),
        (("--token-env", "X"), "--url"),
    ],
)
def test_bad_remote_options_are_refused_with_the_fix(
    options: tuple[str, ...], message: str, vault_path: Path
) -> None:
    done = invoke("connect", "cursor", "--vault", vault_path, *options)
    assert done.exit_code == 2, done.stdout
    assert message in done.stderr
    assert not (Path(os.environ["HOME"]) / ".cursor").exists()


@pytest.mark.anyio
async def test_the_entry_reaches_a_serve_http_that_wants_the_token(
    vault_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with HttpServer(vault_path, "--token", SECRET) as server:
        cursor = invoke_json("connect", "cursor", "--vault", vault_path, "--url", server.url)
        entry = entry_of("cursor", json.loads(cursor["snippet"]))
        # What Cursor does with ${env:NAME} when it starts: the variable's value, in place.
        monkeypatch.setenv("VAULT_TOOL_TOKEN", SECRET)
        headers = {
            key: value.replace("${env:VAULT_TOOL_TOKEN}", os.environ["VAULT_TOOL_TOKEN"])
            for key, value in entry["headers"].items()
        }
        async with http_session(entry["url"], headers) as session:
            names = sorted(t.name for t in (await session.list_tools()).tools)
        assert names == ["remember", "search"]
        assert server.stop() == 0


def test_opencode_2_files_get_the_remote_entry_under_mcp_servers(vault_path: Path) -> None:
    config = Path(os.environ["HOME"]) / ".config" / "opencode" / "opencode.json"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({"mcp": {"servers": {"docs": {"type": "remote", "url": "x"}}}}))
    assert remote("opencode", vault_path, "--write")["written"] is True
    servers = json.loads(config.read_text())["mcp"]["servers"]
    assert servers["docs"] == {"type": "remote", "url": "x"}
    assert servers["vault"] == {
        "type": "remote",
        "url": URL,
        "headers": {"Authorization": "Bearer {env:VAULT_TOOL_TOKEN}"},
    }
