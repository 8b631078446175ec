"""Entries for a remote `vault-tool serve --http`: each host's shape for a Streamable HTTP
server whose requests carry `Authorization: Bearer <token>`.

The token stays out of the config file: each host is told where to read it, in the syntax its
own documentation gives (checked against each host's MCP docs, 2026):

| host | entry | the token |
|---|---|---|
| claude-code | `type: http`, `url`, `headers` | `${NAME}`, from Claude Code's environment |
| codex | `url`, `bearer_token_env_var` | Codex reads the variable itself |
| cursor | `url`, `headers` | `${env:NAME}` |
| gemini-cli | `httpUrl`, `headers` | `${NAME}` (settings.json expands `$NAME` / `${NAME}`) |
| windsurf | `serverUrl`, `headers` | `${env:NAME}` |
| opencode | `type: remote`, `url`, `headers` | `{env:NAME}` |
| vscode | `type: http`, `url`, `headers` | `${input:...}`: asked once, kept in VS Code's secrets |

Only a token the user passes outright is written as it is, and the result says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from vault_tool.errors import InvalidInput

DEFAULT_TOKEN_ENV = "VAULT_TOOL_TOKEN"  # the variable `serve --http` reads its token from
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# How each host's config refers to an environment variable inside a string.
_ENV_SYNTAX = {
    "claude-code": "${{{}}}",
    "cursor": "${{env:{}}}",
    "gemini-cli": "${{{}}}",
    "windsurf": "${{env:{}}}",
    "opencode": "{{env:{}}}",
}
# The key each JSON host gives the server's address.
_URL_KEY = {"gemini-cli": "httpUrl", "windsurf": "serverUrl"}
REMOTE_HOSTS = (*_ENV_SYNTAX, "codex", "vscode")


@dataclass(frozen=True)
class Remote:
    """A remote server: its URL, and the variable the host reads the token from, or the
    token itself when the user passed it outright."""

    url: str
    token_env: str = DEFAULT_TOKEN_ENV
    token: str | None = None

    @property
    def holds_secret(self) -> bool:
        return self.token is not None


def remote(url: str, token_env: str | None, token: str | None) -> Remote:
    """A checked Remote, refusing what no host could use."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InvalidInput(
            f"--url: {url!r} is not an http:// or https:// address",
            hint="give the address `serve --http` serves, for example http://127.0.0.1:8765/mcp",
        )
    if parts.path in ("", "/"):
        raise InvalidInput(
            f"--url: {url!r} has no path; `serve --http` answers at /mcp",
            hint=f"use {parts.scheme}://{parts.netloc}/mcp",
        )
    if token is not None and token_env is not None:
        raise InvalidInput(
            "--token and --token-env: give one (the token itself, or the variable holding it)",
            hint="prefer --token-env, which keeps the token out of the config file",
        )
    if token_env is not None and not _ENV_NAME.fullmatch(token_env):
        raise InvalidInput(
            f"--token-env: {token_env!r} is not an environment variable name",
            hint="use letters, digits and underscores, for example VAULT_TOOL_TOKEN",
        )
    if token is not None and not token.strip():
        raise InvalidInput("--token: is empty", hint="pass the token `serve --http` was given")
    return Remote(url.strip(), token_env or DEFAULT_TOKEN_ENV, token.strip() if token else None)


def require_known(host: str) -> None:
    """Refuse a host whose remote config format is not known, rather than guess one."""
    if host not in REMOTE_HOSTS:
        raise InvalidInput(
            f"--url: the remote (HTTP) config of {host} is not known",
            hint="connect it without --url (the stdio entry), or add the URL by hand "
            "as its documentation describes",
        )


def json_entry(host: str, name: str, server: Remote, v2_opencode: bool) -> dict[str, Any]:
    """The server's entry in a JSON host's file."""
    require_known(host)
    headers = {"Authorization": f"Bearer {_token_reference(host, name, server)}"}
    if host in ("claude-code", "vscode"):
        return {"type": "http", "url": server.url, "headers": headers}
    if host == "opencode":
        entry = {"type": "remote", "url": server.url, "headers": headers}
        return entry if v2_opencode else {**entry, "enabled": True}
    return {_URL_KEY.get(host, "url"): server.url, "headers": headers}


def vscode_input(name: str, server: Remote) -> dict[str, Any] | None:
    """The `inputs` item VS Code prompts with for the token (None when it is written)."""
    if server.holds_secret:
        return None
    return {
        "type": "promptString",
        "id": f"{name}-token",
        "description": f"Token for the vault at {server.url}",
        "password": True,
    }


def codex_fields(server: Remote) -> dict[str, Any]:
    """Codex's [mcp_servers.<name>] keys for the server."""
    if server.holds_secret:
        return {"url": server.url, "http_headers": {"Authorization": f"Bearer {server.token}"}}
    return {"url": server.url, "bearer_token_env_var": server.token_env}


def token_source(host: str, name: str, server: Remote) -> dict[str, Any]:
    """Where the host gets the token, for the result: from, variable, and a sentence."""
    if server.holds_secret:
        return {
            "from": "file",
            "variable": None,
            "note": "The entry holds the token itself: anyone who can read the file can use "
            "the vault. Prefer --token-env NAME, which writes only the variable's name.",
        }
    if host == "vscode":
        return {
            "from": "prompt",
            "variable": None,
            "note": f"VS Code asks for the token the first time it starts {name!r} and keeps "
            "it in its secret storage (its mcp.json reads no header from the environment).",
        }
    return {
        "from": "environment",
        "variable": server.token_env,
        "note": f"{host} reads the token from ${server.token_env} when it starts: set it "
        "(to the token `serve --http` was given) in the environment that starts the host.",
    }


def _token_reference(host: str, name: str, server: Remote) -> str:
    if server.token is not None:
        return server.token
    if host == "vscode":
        return f"${{input:{name}-token}}"
    return _ENV_SYNTAX[host].format(server.token_env)
