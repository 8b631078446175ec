"""The SDK's low-level Server, wired to the profile's tools: tools/list and tools/call only.

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

from vault_tool.core.access import Access
from vault_tool.server import early, handshake, tools
from vault_tool.server.handshake import SERVER_INFO
from vault_tool.server.runtime import Runtime


def build_server(runtime: Runtime) -> Server[Any]:
    """A Server whose two tools call the runtime's vault."""

    # Both handlers answer with the wire's dicts (early.py): the SDK validates a result once
    # as it sends it, so building its models first would only do that work twice.
    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> dict[str, Any]:
        return early.tools_list_result(_access(ctx), profile=runtime.profile)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> dict[str, Any]:
        try:
            spec = tools.spec(params.name, runtime.profile)
        except tools.UnknownTool:
            names = [s.name for s in tools.tool_specs(runtime.profile)]
            offered = ", ".join(names[:-1]) + f" and {names[-1]}"
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"Unknown tool: {params.name!r}; this server has {offered}",
            ) from None
        access = _access(ctx)
        client = client_name(ctx)
        if not access.may_call(spec.name, spec.writes):
            outcome = tools.refusal(access.scope_refusal(spec.name, spec.writes))
            runtime.record_call(
                spec.name, outcome, client=client, token=access.label, started=time.perf_counter()
            )
            return early.call_result(outcome)
        cancelled = threading.Event()
        call = partial(
            runtime.call,
            spec.name,
            params.arguments,
            client=client,
            access=access,
            cancelled=cancelled.is_set,
        )
        try:
            # A cancelled search returns at once and its thread records nothing (the engine
            # checks the flag before the ledger); a write is left to finish, atomically.
            outcome = await anyio.to_thread.run_sync(call, abandon_on_cancel=not spec.writes)
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise
        return early.call_result(outcome)

    return Server(
        SERVER_INFO["name"],
        version=SERVER_INFO["version"],
        title=SERVER_INFO["title"],
        instructions=tools.INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def client_name(ctx: Any) -> str:
    """The client's name from initialize (clientInfo.name), recorded in commits and the ledger."""
    params = ctx.session.client_params
    info = getattr(params, "client_info", None)
    return handshake.client_label(getattr(info, "name", None))


def _access(ctx: Any) -> Access:
    """The rights of the HTTP request's token behind this call; stdio has full access."""
    scope = getattr(ctx.request, "scope", None) or {}
    user = scope.get("user")
    scopes = getattr(user, "scopes", None)
    if scopes is None:
        return Access()
    return Access.from_wire(getattr(user, "username", None), list(scopes))


def listed_tool(spec: tools.ToolSpec) -> types.Tool:
    """A tool as the SDK's model holds it (what tools/list sends, read back)."""
    return types.Tool.model_validate(early.tool_entry(spec))
