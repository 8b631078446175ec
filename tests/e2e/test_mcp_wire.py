"""The real `vault-tool serve` over raw JSON-RPC lines: the first answers, and big answers to a
host that reads slowly.

The first requests may be answered before the SDK is ready and the rest by the SDK: whichever
answers, the host sees the same answers, in the order it asked.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.e2e.mcp_client import SERVE, server_env
from tests.helpers import create_args
from vault_tool.engine.vault import Vault


def _line(request_id: Any, method: str, params: dict | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if request_id is not None:
        message["id"] = request_id
    if params is not None:
        message["params"] = params
    return (json.dumps(message) + "\n").encode()


HELLO = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "w", "version": "1"},
}


def _session(vault: Path, requests: list[bytes], answers: int) -> dict[Any, dict]:
    """The answers to requests, by id, read before stdin is closed."""
    process = subprocess.Popen(
        [*SERVE, "--vault", str(vault)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=server_env(),
    )
    assert process.stdin and process.stdout
    process.stdin.write(b"".join(requests))
    process.stdin.flush()
    read = [json.loads(process.stdout.readline()) for _ in range(answers)]
    process.stdin.close()
    assert process.wait(30) == 0
    return {answer["id"]: answer for answer in read}


def test_the_first_answers_are_the_sdks_whoever_gives_them(vault_path: Path) -> None:
    with Vault.open(vault_path) as vault:
        vault.remember(create_args("Ana owns the billing service"))
    search = {"name": "search", "arguments": {"query": "billing"}}
    answers = _session(
        vault_path,
        [
            _line(0, "initialize", HELLO),
            _line(None, "notifications/initialized"),
            _line(1, "tools/list"),
            _line(2, "tools/call", search),
            _line(3, "resources/list"),  # only the SDK answers this: it has everything after it
            _line(4, "tools/list"),
            _line(5, "tools/call", search),
            _line(6, "ping"),
        ],
        answers=7,
    )
    assert sorted(answers) == [0, 1, 2, 3, 4, 5, 6]  # (calls answer in any order)
    assert answers[3]["error"]["code"] == -32601  # method not found: no resources here
    assert answers[1]["result"] == answers[4]["result"]
    first, again = (answers[n]["result"]["structuredContent"] for n in (2, 5))
    assert first == again and first["selected_hits"]
    assert answers[6]["result"] == {}


def test_an_answer_bigger_than_the_pipe_reaches_a_host_that_reads_late(vault_path: Path) -> None:
    body = "Wombats dig long burrows. " * 2400  # ~62 KB a memory
    with Vault.open(vault_path) as vault:
        for n in range(6):
            vault.remember(create_args(f"Wombat burrow {n}", body=body))
    process = subprocess.Popen(
        [*SERVE, "--vault", str(vault_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=server_env(),
    )
    assert process.stdin and process.stdout
    arguments = {"query": "wombat burrow", "top_k": 20, "maximum_context_bytes": 200000}
    for line in [
        _line(0, "initialize", HELLO),
        _line(None, "notifications/initialized"),
        _line(1, "resources/list"),  # (the SDK answers from here on)
        _line(2, "tools/call", {"name": "search", "arguments": arguments}),
        _line(3, "ping"),
    ]:
        process.stdin.write(line)
    process.stdin.flush()
    time.sleep(1.0)  # the host is busy: the answer fills the pipe and waits for it
    answers = {a["id"]: a for a in (json.loads(process.stdout.readline()) for _ in range(4))}
    process.stdin.close()
    assert process.wait(30) == 0
    assert sorted(answers) == [0, 1, 2, 3]  # (calls answer in any order)
    big = answers[2]["result"]
    assert len(json.dumps(big)) > 2 * 65536
    assert len(big["structuredContent"]["selected_hits"]) == 6
