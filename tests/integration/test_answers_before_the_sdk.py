"""What the stdio server answers while the SDK is still importing: exactly what the SDK would.

A host sends tools/list right after initialize, and often a search at once; the SDK takes
most of a second to import. EarlyServer answers ping, tools/list and search/remember calls
itself meanwhile (early.py), keeps notifications for the SDK, and leaves the first request
it cannot answer, and every line after it, to the SDK in order.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from tests.helpers import create_args
from vault_tool.engine.vault import Vault
from vault_tool.server import early, handshake
from vault_tool.server.before_sdk import EarlyServer, Inbox
from vault_tool.server.runtime import Runtime

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


def _boundless(result: dict) -> dict:
    """A call result with its per-response data-block boundary made constant."""
    text = re.sub(r"(memory(?: \d+)?) [0-9a-f]{8} >>>", r"\1 ? >>>", result["content"][0]["text"])
    return {**result, "content": [{**result["content"][0], "text": text}]}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("profile", ["core", "extended"])
def test_the_early_tool_list_is_exactly_the_sdks(version: str, profile: str) -> None:
    listing_only = SimpleNamespace(profile=profile)  # (tools/list asks the runtime nothing else)
    [answer] = anyio.run(_sdk_answers, listing_only, version, [_message(1, "tools/list")])
    assert answer["result"] == early.tools_list_result(profile=profile)


@pytest.fixture
def runtime(vault_path: Path):
    with Vault.open(vault_path) as vault:
        vault.remember(create_args("Ana owns the billing service"))
    opened = Runtime(vault_path, "stdio")
    opened.open(watch=False)
    yield opened
    opened.shutdown()


@pytest.mark.parametrize("version", ["2025-11-25", "2024-11-05"])
def test_an_early_call_answer_is_exactly_the_sdks(runtime: Runtime, version: str) -> None:
    calls = [
        ("search", {"query": "billing"}),
        ("search", {"query": "billing", "top_k": 99}),  # a refusal
        ("remember", {"mode": "create"}),  # a refusal with several problems
    ]
    lines = [
        _message(n, "tools/call", {"name": t, "arguments": a}) for n, (t, a) in enumerate(calls)
    ]
    sdk = anyio.run(_sdk_answers, runtime, version, lines)
    for (tool, arguments), answer in zip(calls, sdk, strict=True):
        ours = early.call_result(runtime.call(tool, arguments, client="t"))
        assert _boundless(answer["result"]) == _boundless(ours)


def test_requests_are_read_for_what_can_be_answered_before_the_sdk() -> None:
    assert early.read(_message(1, "ping")) == early.Request(early.PING, 1)
    assert early.read(_message("a", "tools/list", {"_meta": {}})) == early.Request(early.LIST, "a")
    search = _message(2, "tools/call", {"name": "search", "arguments": {"query": "x"}})
    assert early.read(search) == early.Request(early.CALL, 2, "search", {"query": "x"})
    assert early.read(INITIALIZED) == early.Request(early.NOTIFICATION)
    for line in [
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


def test_the_early_server_answers_in_order_and_leaves_the_rest_to_the_sdk(runtime: Runtime) -> None:
    hello = handshake.early_answer(_initialize("2025-11-25"))
    assert hello is not None
    inbox, sent = Inbox(), []
    opened, answered, ready = threading.Event(), threading.Event(), threading.Event()
    opened.set()
    later = [_message(4, "tools/list"), INITIALIZED]
    for line in [
        INITIALIZED,
        _message(1, "tools/list"),
        _message(2, "tools/call", {"name": "search", "arguments": {"query": "billing"}}),
        _message(3, "resources/list"),
        *later,
    ]:
        inbox.put(line)
    kept = EarlyServer(runtime, inbox, sent.append, hello).serve(opened, answered, ready)

    assert kept == [INITIALIZED, _message(3, "resources/list")]
    assert inbox.hand_over(lambda line: None) == later  # still held, for the SDK, in order
    answers = [json.loads(line) for line in sent]
    assert [a["id"] for a in answers] == [1, 2]
    assert answers[0]["result"] == early.tools_list_result()
    hits = answers[1]["result"]["structuredContent"]["selected_hits"]
    assert [h["title"] for h in hits] == ["Ana owns the billing service"]
    assert answered.is_set()  # the first call was answered: the watcher and the SDK may start


def test_the_early_server_stops_when_the_sdk_is_ready_or_stdin_closes(runtime: Runtime) -> None:
    hello = handshake.early_answer(_initialize("2025-11-25"))
    assert hello is not None
    opened, answered, ready = threading.Event(), threading.Event(), threading.Event()
    opened.set()
    inbox, sent = Inbox(), []
    inbox.put(INITIALIZED)
    ready.set()
    inbox.wake()
    assert EarlyServer(runtime, inbox, sent.append, hello).serve(opened, answered, ready) == []
    assert inbox.hand_over(lambda line: None) == [INITIALIZED]  # left for the SDK

    inbox, ready = Inbox(), threading.Event()
    inbox.put(_message(1, "ping"))
    inbox.put(None)
    assert EarlyServer(runtime, inbox, sent.append, hello).serve(opened, answered, ready) is None
    assert json.loads(sent[-1]) == {"jsonrpc": "2.0", "id": 1, "result": {}}
