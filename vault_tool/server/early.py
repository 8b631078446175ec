"""What the server answers before the SDK has finished importing, and how it words results.

Importing the `mcp` SDK takes most of a second on a small machine, and a host asks for the
tool list right after `initialize`. So until the SDK is ready, the stdio server answers the
two requests whose answers are fixed: `ping` and `tools/list` (precomputed from tools.py).
Notifications are kept for the SDK, in order; the first request of any other kind (every
`tools/call` among them: tool calls have one door, the SDK's dispatch), or one it cannot
read, goes to the SDK with everything after it. The SDK's handlers answer with the same
dicts (`tools_list_result`, `call_result`), and a test holds the tool list equal to what
the SDK itself would send.

Pure: JSON in, JSON out; no `mcp` import.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any

from vault_tool.core.access import Access
from vault_tool.server import tools

PING = "ping"
LIST = "tools/list"
NOTIFICATION = "notification"


@dataclass(frozen=True)
class Request:
    """A line the server can answer before the SDK is ready (or a notification to keep)."""

    kind: str
    request_id: Any = None


def read(line: str) -> Request | None:
    """What line asks, if it is something answered before the SDK; None if the SDK must."""
    try:
        message = json.loads(line)
        # A lone surrogate escape (\ud800) is JSON Python reads but the SDK refuses to parse.
        json.dumps(message, ensure_ascii=False).encode("utf-8")
    except (ValueError, RecursionError):  # (UnicodeEncodeError is a ValueError)
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    method, params = message.get("method"), message.get("params")
    if not isinstance(method, str) or (params is not None and not isinstance(params, dict)):
        return None
    if "id" not in message:
        return Request(NOTIFICATION) if "result" not in message else None
    request_id = message["id"]
    if not (isinstance(request_id, str) or type(request_id) is int):
        return None
    extra = set(params or {}) - {"_meta"}
    if method == PING and not extra:
        return Request(PING, request_id)
    if method == LIST and extra <= {"cursor"} and not (params or {}).get("cursor"):
        return Request(LIST, request_id)
    return None


def answer(request_id: Any, result: dict[str, Any]) -> str:
    """The JSON-RPC response line (without its newline)."""
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}, ensure_ascii=False)


@cache
def tools_list_result(access: Access | None = None, profile: str = "core") -> dict[str, Any]:
    """The ListToolsResult of a profile, as the wire carries it: the tools access may call."""
    listed = tools.tool_specs(profile)
    return {
        "tools": [tool_entry(s) for s in listed if not access or access.may_call(s.name, s.writes)]
    }


def tool_entry(spec: tools.ToolSpec) -> dict[str, Any]:
    """One tool as tools/list describes it."""
    return {
        "name": spec.name,
        "title": spec.title,
        "description": spec.description,
        "inputSchema": spec.input_schema,
        "outputSchema": spec.output_schema,
        "annotations": {"title": spec.title, **spec.annotations},
    }


def call_result(outcome: tools.Outcome) -> dict[str, Any]:
    """The CallToolResult of an outcome, as the wire carries it."""
    return {
        "content": [{"type": "text", "text": outcome.text}],
        "structuredContent": outcome.structured,
        "isError": outcome.is_error,
    }
