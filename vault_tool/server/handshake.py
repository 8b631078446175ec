"""Answering `initialize` before the SDK has finished importing.

Importing the `mcp` SDK takes most of a second on a small machine, longer than hosts
should wait for a handshake. So `vault-tool serve` reads the first line itself and, when it
is a well-formed `initialize`, answers it at once with what the SDK would answer (the same
version negotiation, capabilities, server info and instructions; a test holds the two
equal). The request is then replayed into the SDK, which takes the connection over from
there; its own answer to that replayed request is dropped. Anything else (a malformed
first line, a 2026-era request without a handshake) goes to the SDK untouched.

Pure: JSON in, JSON out; no `mcp` import.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any

from vault_tool import __version__
from vault_tool.server import tools

# mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS, newest first; a test keeps them equal.
HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
SERVER_INFO = {"name": "vault-tool", "title": "vault-tool memory vault", "version": __version__}
CAPABILITIES = {"tools": {"listChanged": False}}


@dataclass(frozen=True)
class EarlyAnswer:
    """The response line to send now, the request id whose SDK answer must be dropped, and
    the client's name (clientInfo.name, as commits and the ledger record it)."""

    line: str
    request_id: Any
    client_name: str | None = None

    @property
    def client(self) -> str:
        return client_label(self.client_name)


def early_answer(line: str) -> EarlyAnswer | None:
    """The answer to an `initialize` request line, or None if the SDK should see it first."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):  # not JSON, or nested too deep to read
        return None
    if not _is_initialize(message):
        return None
    params = message["params"]
    requested = params["protocolVersion"]
    version = requested if requested in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[0]
    result = initialize_result(version)
    response = {"jsonrpc": "2.0", "id": message["id"], "result": result}
    line = json.dumps(response, ensure_ascii=False)
    return EarlyAnswer(line, message["id"], params["clientInfo"]["name"])


@cache
def client_label(name: str | None) -> str:
    """A client's name as commits and the ledger record it ("mcp" when it gives none).

    The host chooses it, so it is redacted like any other text that reaches git history
    (a `Client:` trailer and the `source:` of the memory).
    """
    from vault_tool.core.redact import redact_text

    name = (name or "mcp").strip() or "mcp"
    return redact_text(name, "client")[0]


def initialize_result(version: str) -> dict[str, Any]:
    """The InitializeResult this server gives for a negotiated protocol version."""
    return {
        "protocolVersion": version,
        "capabilities": CAPABILITIES,
        "serverInfo": SERVER_INFO,
        "instructions": tools.INSTRUCTIONS,
    }


def is_answer_to(line: str, request_id: Any) -> bool:
    """Whether an outgoing JSON-RPC line is the response to request_id."""
    try:
        message = json.loads(line)
    except ValueError:
        return False
    return (
        isinstance(message, dict)
        and message.get("id") == request_id
        and ("result" in message or "error" in message)
    )


def _is_initialize(message: Any) -> bool:
    # Only a request the SDK would accept as it is: otherwise its own error must be the answer.
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return False
    if message.get("method") != "initialize" or not _is_request_id(message.get("id")):
        return False
    params = message.get("params")
    if not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), str):
        return False
    info = params.get("clientInfo")
    return (
        isinstance(params.get("capabilities"), dict)
        and isinstance(info, dict)
        and isinstance(info.get("name"), str)
        and isinstance(info.get("version"), str)
    )


def _is_request_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
