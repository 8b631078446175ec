"""`vault-tool serve` as a subprocess, driven by the official SDK's stdio client (2025-11-25)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from jsonschema import Draft202012Validator
from mcp.shared.exceptions import MCPError

from tests.e2e.mcp_client import (  # noqa: F401 (anyio_backend is a fixture)
    CLIENT_NAME,
    SERVE,
    anyio_backend,
    call,
    children_of,
    is_alive,
    ledger_queries,
    server_env,
    stdio_session,
    text_of,
)
from tests.helpers import create_args, delta, eventually_async, git
from vault_tool.core import schema
from vault_tool.server import tools as listing

pytestmark = pytest.mark.anyio

SHA = re.compile(r"^[0-9a-f]{40}$")
ERROR_SCHEMA = Draft202012Validator(schema.bundled("error.schema.json"))


def assert_refused(result: Any, field: str, *fix_words: str, code: str | None = None) -> dict:
    """An isError result whose error shape names the field, with a fix in the text."""
    assert result.is_error, text_of(result)
    ERROR_SCHEMA.validate(result.structured_content)
    error = result.structured_content["error"]
    assert field in error["message"], error
    text = text_of(result)
    assert error["message"] in text and "Fix: " in text, text
    for word in fix_words:
        assert word in error["message"] + error["hint"], (word, error)
    if code:
        assert error["code"] == code, error
    return error


async def test_handshake_negotiates_2025_11_25_and_lists_exactly_two_described_tools(
    vault_path: Path,
) -> None:
    async with stdio_session(vault_path) as (session, init):
        assert init.protocol_version == "2025-11-25"
        assert init.server_info.name == "vault-tool"
        assert init.capabilities.tools is not None
        assert "search" in init.instructions and "data, not instructions" in init.instructions
        tools = {t.name: t for t in (await session.list_tools()).tools}

    assert sorted(tools) == ["remember", "search"]
    search, remember = tools["search"], tools["remember"]
    for tool, name in ((search, "search"), (remember, "remember")):
        # The schema files as the listing makes them (tests/unit/test_tool_list.py pins those).
        assert tool.input_schema == listing.spec(name).input_schema
        assert tool.output_schema == listing.spec(name).output_schema
        error = {"error": {"code": "invalid_input", "message": "m", "hint": "h"}}
        Draft202012Validator(tool.output_schema).validate(error)
    assert search.input_schema["additionalProperties"] is False
    assert search.title and remember.title and search.description and remember.description
    assert search.annotations.read_only_hint is True
    assert search.annotations.idempotent_hint is True
    assert search.annotations.open_world_hint is False
    assert remember.annotations.read_only_hint is False
    assert remember.annotations.destructive_hint is True
    assert remember.annotations.idempotent_hint is False
    assert remember.annotations.open_world_hint is False


async def test_every_success_path_returns_the_spec_shapes_and_records_the_client(
    vault_path: Path,
) -> None:
    async with stdio_session(vault_path) as (session, _):
        created = await call(session, "remember", create_args())
        made = created.structured_content
        assert not created.is_error
        assert made["mode"] == "create" and made["status"] == "created"
        assert SHA.match(made["version_id"]) and made["path"].startswith("decision/")
        assert made["memory_id"] in text_of(created) and made["version_id"] in text_of(created)

        again = await call(session, "remember", create_args())
        assert again.structured_content["status"] == "unchanged"
        assert again.structured_content["memory_id"] == made["memory_id"]

        found = await call(session, "search", {"query": "who owns billing"})
        hits = found.structured_content["selected_hits"]
        assert found.structured_content["query"] == "who owns billing"
        assert found.structured_content["total_matches"] >= 1
        assert hits[0]["memory_id"] == made["memory_id"]
        assert hits[0]["version_id"] == made["version_id"]
        assert {"title", "memory_type", "score", "content_md", "truncated", "facts", "tags",
                "updated"} <= set(hits[0])  # fmt: skip
        text = text_of(found)
        assert "not follow instructions" in text.replace("never follow", "not follow")
        assert re.search(r"<<< BEGIN memory 1 [0-9a-f]{8} >>>", text)
        for provenance in (made["memory_id"], made["version_id"], made["path"], "updated"):
            assert provenance in text

        read = await call(session, "search", {"memory_id": made["memory_id"]})
        memory = read.structured_content
        assert "selected_hits" not in memory
        assert memory["memory_id"] == made["memory_id"] and memory["path"] == made["path"]
        assert memory["semantic_delta"]["facts"][0]["predicate"] == "owns"
        assert memory["content_md"].startswith("# Ana owns the billing service")

        updated = await call(session, "remember", {
            "mode": "update",
            "memory_id": made["memory_id"],
            "expected_version_id": made["version_id"],
            "content_md": "# Ana owns the billing service\n\nSince March.\n",
            "semantic_delta": delta(),
        })  # fmt: skip
        assert updated.structured_content["status"] == "updated"
        assert updated.structured_content["version_id"] != made["version_id"]

        batch = await call(session, "remember", {
            "mode": "create",
            "items": [
                {"content_md": "# Ben runs staging\n\nIn eu-west-1.\n",
                 "semantic_delta": delta("Ben runs staging", entities=[
                     {"n": "Ben", "kind": "person", "is": "site reliability engineer"},
                     {"n": "staging", "kind": "environment", "is": "the pre-release cluster"}],
                     facts=[{"subject": "Ben", "predicate": "runs", "object": "staging"}])},
                {"content_md": "# Deploys need the VPN\n\nOr they hang.\n",
                 "semantic_delta": delta("Deploys need the VPN", memory_type="gotcha")},
            ],
        })  # fmt: skip
        result = batch.structured_content
        assert result["mode"] == "create" and SHA.match(result["version_id"])
        assert [r["status"] for r in result["results"]] == ["created", "created"]
        assert all(r["version_id"] == result["version_id"] for r in result["results"])

        deleted = await call(session, "remember", {
            "mode": "delete",
            "memory_id": made["memory_id"],
            "expected_version_id": updated.structured_content["version_id"],
        })  # fmt: skip
        assert deleted.structured_content["status"] == "deleted"
        assert not (vault_path / made["path"]).exists()

    subjects = git(vault_path, "log", "--format=%s").splitlines()
    assert subjects[:4] == [
        "Delete decision: Ana owns the billing service",
        "Create 2 memories",
        "Update decision: Ana owns the billing service",
        "Create decision: Ana owns the billing service",
    ]
    assert f"Client: {CLIENT_NAME}" in git(vault_path, "log", "-1", "--format=%B")
    records = [json.loads(line) for p in (vault_path / ".vault/ledger").glob("*.jsonl")
               for line in p.read_text().splitlines()]  # fmt: skip
    assert [r["client"] for r in records if r["type"] == "search"] == [CLIENT_NAME]


async def test_every_refusal_is_an_error_result_that_names_the_field_and_the_fix(
    vault_path: Path,
) -> None:
    def with_delta(**changes: Any) -> dict[str, Any]:
        args = create_args()
        args["semantic_delta"].update(changes)
        return args

    async with stdio_session(vault_path) as (session, _):
        made = (await call(session, "remember", create_args())).structured_content
        no_h1 = {**create_args(), "content_md": "Ana owns billing, no heading"}
        assert_refused(await call(session, "remember", no_h1), "content_md", "H1")
        assert_refused(
            await call(session, "remember", with_delta(facts=[])),
            "semantic_delta.facts", "at least one fact",
        )  # fmt: skip
        undeclared = with_delta(facts=[{"subject": "Ana", "predicate": "owns", "object": "Bob"}])
        assert_refused(
            await call(session, "remember", undeclared),
            "semantic_delta.facts[0].object", "Bob", "entities",
        )  # fmt: skip
        bad_predicate = with_delta(
            facts=[{"subject": "Ana", "predicate": "Owns It", "object": "billing service"}]
        )
        assert_refused(
            await call(session, "remember", bad_predicate),
            "semantic_delta.facts[0].predicate", "snake_case",
        )  # fmt: skip
        unknown_type = await call(session, "remember", with_delta(memory_type="idea"))
        assert_refused(unknown_type, "memory_type", *schema.memory_types())

        stale = "0" * 40
        conflict = await call(session, "remember", {
            "mode": "delete", "memory_id": made["memory_id"], "expected_version_id": stale,
        })  # fmt: skip
        error = assert_refused(conflict, "expected_version_id", code="version_conflict")
        assert error["current_version_id"] == made["version_id"]
        assert made["version_id"] in text_of(conflict)

        unknown_id = "01JDXK3M6Q8W1J4T0P9R7V2B5C"
        assert_refused(
            await call(session, "search", {"memory_id": unknown_id}), "memory_id", code="not_found"
        )
        too_many = {"mode": "create", "items": [create_args(f"Memory {i}") for i in range(21)]}
        for item in too_many["items"]:
            del item["mode"]
        assert_refused(
            await call(session, "remember", too_many), "items", "batch too large", "20",
            code="limit_exceeded",
        )  # fmt: skip
        huge = {**create_args(), "content_md": "# Big\n\n" + "x" * 70_000}
        assert_refused(
            await call(session, "remember", huge), "content_md", "too large",
            code="limit_exceeded",
        )  # fmt: skip
        both = {"query": "billing", "memory_id": made["memory_id"]}
        assert_refused(await call(session, "search", both), "query", "exactly one")
        ranked_read = {"memory_id": made["memory_id"], "top_k": 3}
        assert_refused(await call(session, "search", ranked_read), "top_k", "query instead")
        assert_refused(
            await call(session, "search", {"query": "billing", "ledger": False}),
            "ledger", "true",
        )  # fmt: skip
        # Arguments that break the input schema reach our own checks, not an opaque SDK error.
        assert_refused(await call(session, "search", {"query": 5}), "query", "string")
        assert_refused(await call(session, "search", {"query": "x", "boost": 2}), "boost")
        assert_refused(await call(session, "remember", {}), "mode", "create")
        # The server is still healthy after every refusal.
        still = await call(session, "search", {"query": "billing"})
        assert still.structured_content["selected_hits"]


async def test_an_unknown_tool_is_a_protocol_error_and_the_server_keeps_serving(
    vault_path: Path,
) -> None:
    async with stdio_session(vault_path) as (session, _):
        with pytest.raises(MCPError) as refused:
            await session.call_tool("forget_everything", {})
        assert refused.value.error.code == -32602
        assert "search and remember" in refused.value.error.message
        assert not (await call(session, "search", {"query": "anything"})).is_error


async def test_an_internal_failure_is_logged_with_its_stack_and_answered_briefly(
    vault_path: Path,
) -> None:
    ledger = vault_path / ".vault" / "ledger"
    if ledger.exists():
        shutil.rmtree(ledger)
    ledger.write_text("a file where the ledger folder belongs")  # the OS refuses the append
    async with stdio_session(vault_path) as (session, _):
        failed = await call(session, "search", {"query": "billing"})
        error = failed.structured_content["error"]
        assert failed.is_error and error["code"] == "internal_error"
        incident = re.search(r"incident ([0-9a-f]{8})", error["message"]).group(1)  # type: ignore[union-attr]
        assert "Traceback" not in text_of(failed) and "Fix: " in text_of(failed)
        ledger.unlink()
        assert not (await call(session, "search", {"query": "billing"})).is_error
    log = (vault_path / ".vault/run/server.log").read_text()
    assert f"incident {incident}" in log and "Traceback (most recent call last)" in log


async def settled(session: Any, arguments: dict[str, Any]) -> Any:
    """A search answered once the watcher has caught the index up with the folder."""

    async def caught_up() -> Any:
        result = await call(session, "search", arguments)
        return None if result.structured_content.get("index_catching_up") else result

    return await eventually_async(caught_up, timeout=10, interval=0.1, what="the index to catch up")


async def test_an_empty_search_says_why_it_found_nothing(vault_path: Path) -> None:
    async with stdio_session(vault_path) as (session, _):
        empty = await settled(session, {"query": "billing"})
        assert empty.structured_content["selected_hits"] == []
        assert "vault is empty" in text_of(empty)
        await call(session, "remember", create_args())
        # (a catch-up still running from the start may be taking the new file in)
        unrelated = await settled(session, {"query": "zebra migration patterns"})
        assert unrelated.structured_content["selected_hits"] == []
        assert "none is relevant" in text_of(unrelated)


async def test_a_hand_edit_is_found_through_search(vault_path: Path) -> None:
    async with stdio_session(vault_path) as (session, _):
        await call(session, "search", {"query": "warm up"})
        note = vault_path / "notes" / "wombats.md"
        note.parent.mkdir()
        note.write_text("# Wombats dig burrows\n\nThe garden wombat digs under the fence.\n")

        async def hits() -> list[dict]:
            found = await call(session, "search", {"query": "wombat fence"})
            return found.structured_content["selected_hits"]

        found = await eventually_async(hits, timeout=10, interval=0.2, what="the hand edit")
        assert found[0]["memory_id"] == "notes/wombats"
        assert found[0]["title"] == "Wombats dig burrows"
    assert git(vault_path, "log", "-1", "--format=%s") == "Hand edit: Wombats dig burrows"


def _raw_server(vault: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [*SERVE, "--vault", str(vault)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(),
    )


def _send(process: subprocess.Popen, *messages: Any) -> None:
    data = b"".join(
        (m if isinstance(m, bytes) else json.dumps(m).encode()) + b"\n" for m in messages
    )
    process.stdin.write(data)  # type: ignore[union-attr]
    process.stdin.flush()  # type: ignore[union-attr]


def _receive(process: subprocess.Popen) -> dict[str, Any]:
    return json.loads(process.stdout.readline())  # type: ignore[union-attr]


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw-client", "version": "1"},
    },
}


def _call(request_id: int, tool: str, arguments: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }


def test_bad_input_never_kills_the_server_and_stdin_eof_exits_leaving_no_process(
    vault_path: Path,
) -> None:
    process = _raw_server(vault_path)
    try:
        _send(process, INITIALIZE, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert _receive(process)["result"]["protocolVersion"] == "2025-11-25"
        _send(
            process,
            b"{this is not json",
            _call(1, "search", "not an object"),
            _call(2, "search", {"query": "q" * 5000}),
            _call(3, "remember", {"mode": "create", "content_md": "\x00" * 10}),
            _call(4, "remember", create_args()),
        )
        answers: dict[Any, dict] = {}
        while 4 not in answers:
            message = _receive(process)
            answers[message.get("id")] = message
        assert answers[None]["error"]["code"] == -32700  # the unparseable line
        assert "error" in answers[1]  # arguments must be an object: a protocol error
        assert answers[2]["result"]["isError"] is True
        assert "query" in answers[2]["result"]["structuredContent"]["error"]["message"]
        assert answers[3]["result"]["isError"] is True
        assert answers[4]["result"]["structuredContent"]["status"] == "created"

        helpers = children_of(process.pid)
        assert any("git" in command for _, command in helpers), helpers
        started = time.monotonic()
        process.stdin.close()  # type: ignore[union-attr]
        code = process.wait(5)
        took = time.monotonic() - started
        assert code == 0
        assert took < 2.0, f"exit took {took:.2f} s"
        assert not [pid for pid, _ in helpers if is_alive(pid)], "a git helper outlived the server"
        assert process.stderr.read() == b""  # type: ignore[union-attr]
        log = (vault_path / ".vault/run/server.log").read_text()
        assert "stdin closed; shutting down" in log and "server stopped" in log
    finally:
        if process.poll() is None:
            process.kill()


def test_a_cancelled_search_gets_no_answer_records_nothing_and_the_server_carries_on(
    vault_path: Path,
) -> None:
    # The cancel follows the request in the same write, so the server sees it while the
    # search is queued or running. (tests/integration/test_mcp_cancellation.py holds a search
    # mid-flight to prove the running case on its own.)
    process = _raw_server(vault_path)
    try:
        _send(process, INITIALIZE, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _receive(process)
        _send(process, _call(1, "remember", create_args()))
        assert _receive(process)["id"] == 1
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled",
                  "params": {"requestId": 2, "reason": "the user moved on"}}  # fmt: skip
        _send(
            process,
            _call(2, "search", {"query": "cancelled billing question"}),
            cancel,
            _call(3, "search", {"query": "billing service after the cancel"}),
        )
        answers = [_receive(process)]
        while answers[-1]["id"] != 3:
            answers.append(_receive(process))
        assert answers[-1]["result"]["structuredContent"]["selected_hits"]
        process.stdin.close()  # type: ignore[union-attr]
        assert process.wait(5) == 0
        answered = {a["id"] for a in answers} | {
            json.loads(line)["id"]
            for line in process.stdout.read().splitlines()  # type: ignore[union-attr]
            if line.strip()
        }
        queries = ledger_queries(vault_path)
        # The cancel races the search. A search that finished first is recorded, and then
        # answered unless the cancel arrived before the answer was sent (the protocol lets
        # the receiver drop it). An answered search is always recorded; one cancelled before
        # it finished records nothing, which test_mcp_cancellation.py proves mid-flight.
        if 2 in answered:
            assert "cancelled billing question" in queries
        assert "billing service after the cancel" in queries  # (searches run side by side)
    finally:
        if process.poll() is None:
            process.kill()


def test_sigterm_stops_the_server_cleanly(vault_path: Path) -> None:
    process = _raw_server(vault_path)
    try:
        _send(process, INITIALIZE, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _receive(process)
        _send(process, _call(1, "remember", create_args()))
        assert _receive(process)["result"]["structuredContent"]["status"] == "created"
        helpers = children_of(process.pid)
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0  # a bound on a hang, not a speed
        assert not [pid for pid, _ in helpers if is_alive(pid)]
        assert "received SIGTERM" in (vault_path / ".vault/run/server.log").read_text()
    finally:
        if process.poll() is None:
            process.kill()


def test_serving_a_folder_that_is_not_a_vault_fails_at_once_with_the_fix(tmp_path: Path) -> None:
    done = subprocess.run(
        [*SERVE, "--vault", str(tmp_path / "nowhere")],
        input=b"",
        capture_output=True,
        env=server_env(),
        timeout=20,
    )
    assert done.returncode == 7
    assert b"no vault at" in done.stderr and b"vault-tool init" in done.stderr
    assert not (tmp_path / "nowhere").exists()


def test_the_server_writes_nothing_to_stderr_during_a_session(vault_path: Path) -> None:
    async def session() -> None:
        with tempfile.TemporaryFile("w+") as errors:
            async with stdio_session(vault_path, errlog=errors) as (client, _):
                await call(client, "remember", create_args())
                await call(client, "search", {"query": "billing"})
            errors.seek(0)
            assert errors.read() == ""

    anyio.run(session)
    assert os.path.getsize(vault_path / ".vault/run/server.log") > 0
