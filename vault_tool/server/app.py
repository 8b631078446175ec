"""The SDK's low-level Server, wired to the two tools: tools/list and tools/call, nothing else.

The low-level Server is used (not MCPServer) so that the tool schemas are the files in
schema/ (tools.py), and so that a call whose arguments break the schema reaches our own
validation, which names the field and the fix; the low-level Server does not validate
arguments itself.
"""

from __future__ import annotations

import threading
import time
from functools import partial
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.shared.exceptions import MCPError

from vault_tool.server import tools
from vault_tool.server.handshake import SERVER_INFO
from vault_tool.server.runtime import Runtime


def build_server(runtime: Runtime) -> Server[Any]:
    """A Server whose two tools call the runtime's vault."""

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        _, read_only = _access(ctx)
        listed = [s for s in tools.tool_specs() if not (s.writes and read_only)]
        return types.ListToolsResult(tools=[listed_tool(s) for s in listed])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            spec = tools.spec(params.name)
        except tools.UnknownTool:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"Unknown tool: {params.name!r}; this server has search and remember",
            ) from None
        token, read_only = _access(ctx)
        client = client_name(ctx)
        if spec.writes and read_only:
            outcome = tools.read_only_refusal(spec.name)
            runtime.record_call(
                spec.name, outcome, client=client, token=token, started=time.perf_counter()
            )
            return _result(outcome)
        cancelled = threading.Event()
        call = partial(
            runtime.call,
            spec.name,
            params.arguments,
            client=client,
            token=token,
            cancelled=cancelled.is_set,
        )
        try:
            # A cancelled search returns at once and its thread records nothing (the engine
            # checks the flag before the ledger); a write is left to finish, atomically.
            outcome = await anyio.to_thread.run_sync(call, abandon_on_cancel=not spec.writes)
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise
        return _result(outcome)

    return Server(
        SERVER_INFO["name"],
        version=SERVER_INFO["version"],
        title=SERVER_INFO["title"],
        instructions=tools.INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def client_name(ctx: Any) -> str:
    """The client's name from initialize (clientInfo.name), recorded in commits and the ledger.

    The host chooses it, so it is redacted like any other text that reaches git history
    (a `Client:` trailer and the `source:` of the memory).
    """
    from vault_tool.core.redact import redact_text

    params = ctx.session.client_params
    info = getattr(params, "client_info", None)
    name = (getattr(info, "name", None) or "mcp").strip() or "mcp"
    return redact_text(name, "client")[0]


def _access(ctx: Any) -> tuple[str | None, bool]:
    """(token label, read-only?) of the HTTP request behind this call; stdio has full access."""
    scope = getattr(ctx.request, "scope", None) or {}
    user = scope.get("user")
    scopes = getattr(user, "scopes", None)
    if scopes is None:
        return None, False
    return getattr(user, "username", None), tools.SCOPE_REMEMBER not in scopes


def listed_tool(spec: tools.ToolSpec) -> types.Tool:
    """A tool as tools/list describes it."""
    return types.Tool.model_validate(
        {
            "name": spec.name,
            "title": spec.title,
            "description": spec.description,
            "inputSchema": spec.input_schema,
            "outputSchema": spec.output_schema,
            "annotations": {"title": spec.title, **spec.annotations},
        }
    )


def _result(outcome: tools.Outcome) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=outcome.text)],
        structured_content=outcome.structured,
        is_error=outcome.is_error,
    )
