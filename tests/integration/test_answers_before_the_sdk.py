"""What the stdio server answers while the SDK is still importing: exactly what the SDK would.

A host sends tools/list right after initialize; the SDK takes most of a second to import.
EarlyServer answers ping and tools/list itself meanwhile (early.py), keeps notifications
for the SDK, and leaves the first request it cannot answer (every tool call: the SDK's
dispatch is their one door), and every line after it, to the SDK in order.
"""

from __future__ import annotations

import json
import threading
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from vault_tool.server import early
from vault_tool.server.before_sdk import EarlyServer, Inbox

VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]


def _message(request_id: Any, method: str, params: dict | None = None) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message)


def _initialize(version: str) -> str:
    hello = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    return _message(0, "initialize", hello)


INITIALIZED = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
# tools/list asks the runtime nothing but its profile.
LISTING_ONLY: Any = SimpleNamespace(profile="core")


async def _sdk_answers(runtime: Any, version: str, lines: list[str]) -> list[dict]:
    """The SDK's own answers to these requests, after a handshake at version."""
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    from vault_tool.server.app import build_server

    server = build_server(runtime)
    to_server, server_reads = anyio.create_memory_object_stream(8)
    server_writes, from_server = anyio.create_memory_object_stream(8)
    answers = []
    async with anyio.create_task_group() as group:
        group.start_soon(
            server.run, server_reads, server_writes, server.create_initialization_options()
        )
        for line in [_initialize(version), INITIALIZED, *lines]:
            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
            await to_server.send(SessionMessage(message))
            if "id" in json.loads(line):
                answer = await from_server.receive()
                answers.append(
                    json.loads(answer.message.model_dump_json(by_alias=True, exclude_unset=True))
                )
        await to_server.aclose()
    return answers[1:]  # (not initialize's)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("profile", ["core", "extended"])
def test_the_early_tool_list_is_exactly_the_sdks(version: str, profile: str) -> None:
    listing_only = SimpleNamespace(profile=profile)  # (tools/list asks the runtime nothing else)
    [answer] = anyio.run(_sdk_answers, listing_only, version, [_message(1, "tools/list")])
    assert answer["result"] == early.tools_list_result(profile=profile)


def test_requests_are_read_for_what_can_be_answered_before_the_sdk() -> None:
    assert early.read(_message(1, "ping")) == early.Request(early.PING, 1)
    assert early.read(_message("a", "tools/list", {"_meta": {}})) == early.Request(early.LIST, "a")
    assert early.read(INITIALIZED) == early.Request(early.NOTIFICATION)
    for line in [
        _message(2, "tools/call", {"name": "search", "arguments": {"query": "x"}}),  # the SDK's
        _message(3, "tools/list", {"cursor": "next"}),  # a page the SDK knows how to refuse
        _message(4, "tools/call", {"name": "erase", "arguments": {}}),  # an unknown tool
        _message(5, "tools/call", {"name": "search", "arguments": [1]}),
        _message(6, "tools/call", {"name": "search", "task": {}}),
        _message(True, "ping"),
        _message(7, "resources/list"),
        "not json",
        _message(9, "tools/call", {"name": "search", "arguments": {"query": "lone \ud800"}}),
        json.dumps([{"jsonrpc": "2.0", "id": 8, "method": "ping"}]),
    ]:
        assert early.read(line) is None, line


def test_the_early_server_answers_in_order_and_leaves_the_rest_to_the_sdk() -> None:
    inbox, sent = Inbox(), []
    search = _message(2, "tools/call", {"name": "search", "arguments": {"query": "billing"}})
    later = [_message(4, "tools/list"), INITIALIZED]
    for line in [INITIALIZED, _message(1, "tools/list"), search, *later]:
        inbox.put(line)
    kept = EarlyServer(LISTING_ONLY, inbox, sent.append).serve(threading.Event())

    assert kept == [INITIALIZED, search]
    assert inbox.hand_over(lambda line: None) == later  # still held, for the SDK, in order
    answers = [json.loads(line) for line in sent]
    assert [a["id"] for a in answers] == [1]
    assert answers[0]["result"] == early.tools_list_result()


def test_the_early_server_stops_when_the_sdk_is_ready_or_stdin_closes() -> None:
    ready = threading.Event()
    inbox, sent = Inbox(), []
    inbox.put(INITIALIZED)
    ready.set()
    inbox.wake()
    assert EarlyServer(LISTING_ONLY, inbox, sent.append).serve(ready) == []
    assert inbox.hand_over(lambda line: None) == [INITIALIZED]  # left for the SDK

    inbox = Inbox()
    inbox.put(_message(1, "ping"))
    inbox.put(None)
    assert EarlyServer(LISTING_ONLY, inbox, sent.append).serve(threading.Event()) is None
    assert json.loads(sent[-1]) == {"jsonrpc": "2.0", "id": 1, "result": {}}
