"""Fuzzing both tools through the real server, and its stdio with malformed JSON-RPC.

One `vault-tool serve` per module, driven by the official MCP client, takes every
generated call. Each answer must be a result that matches the tool's output schema, or
an isError result whose structuredContent is the error shape with a message; a refused
call must leave HEAD and the working tree exactly as they were.

Examples per test are bounded (VAULT_FUZZ_EXAMPLES scales them for a long run).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import create_args, delta
from vault_tool.core import schema
from vault_tool.storage.store import Store

EXAMPLES = int(os.environ.get("VAULT_FUZZ_EXAMPLES", "60"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
CALLS = {"count": 0}


# --- one real server for the module -------------------------------------------------------


class Served:
    """The vault, the server's session (driven from a blocking portal), and its ids."""

    def __init__(self, vault: Path, portal: Any, session: Any) -> None:
        self.vault = vault
        self.portal = portal
        self.session = session
        self.ids: list[str] = []

    def call(self, tool: str, arguments: Any) -> Any:
        CALLS["count"] += 1
        return self.portal.call(self._call, tool, arguments)

    async def _call(self, tool: str, arguments: Any) -> Any:
        import anyio

        with anyio.fail_after(60):
            return await self.session.call_tool(tool, arguments)

    def state(self) -> tuple[str, str]:
        """HEAD and `git status`: what a refused call must not change."""
        return _git(self.vault, "rev-parse", "HEAD"), _git(
            self.vault, "status", "--porcelain", "--untracked-files=all"
        )

    def version(self, memory_id: str) -> str:
        result = self.call("search", {"memory_id": memory_id})
        return result.structured_content.get("version_id", "0" * 40)


def _git(vault: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=vault, capture_output=True, text=True, check=True
    ).stdout.strip()


def _env(home: Path) -> dict[str, str]:
    return {
        "HOME": str(home),
        "GIT_CONFIG_GLOBAL": str(home / "gitconfig"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "PATH": os.environ["PATH"],
        "LANG": os.environ.get("LANG", "C.UTF-8"),
    }


@contextlib.asynccontextmanager
async def _session(vault: Path, env: dict[str, str], errlog: Any) -> Any:
    import mcp_types as types
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "vault_tool", "serve", "--vault", str(vault)], env=env
    )
    async with (
        stdio_client(params, errlog=errlog) as (read, write),
        ClientSession(
            read, write, client_info=types.Implementation(name="fuzzer", version="1")
        ) as session,
    ):
        await session.initialize()
        await session.list_tools()  # the client then checks results against outputSchema
        yield session


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A vault with a few memories, and one server over it for the whole module."""
    from anyio.from_thread import start_blocking_portal

    home = tmp_path_factory.mktemp("fuzz-home")
    vault = tmp_path_factory.mktemp("fuzz") / "vault"
    env = _env(home)
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        Store.init(vault).close()
    with (
        open(home / "server.stderr", "w") as errlog,
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(_session(vault, env, errlog)) as session,
    ):
        served = Served(vault, portal, session)
        for title in ("Ana owns the billing service", "Staging deploys need the VPN"):
            result = served.call("remember", create_args(title=title))
            served.ids.append(result.structured_content["memory_id"])
        yield served
        # The server is still there and still answers.
        assert not served.call("search", {"query": "billing"}).is_error
    assert (home / "server.stderr").read_text() == ""
    log = (vault / ".vault" / "run" / "server.log").read_text()
    assert " ERROR " not in log and "Traceback" not in log, log[-3000:]
    print(f"\nfuzzed {CALLS['count']} calls through one server")


# --- what every answer must be --------------------------------------------------------------


def _validator(name: str) -> Any:
    return jsonschema.Draft202012Validator(schema.bundled(name))


OUTPUT = {
    "search": _validator("search.output.schema.json"),
    "remember": _validator("remember.output.schema.json"),
}
ERROR = jsonschema.Draft202012Validator(schema.load("error.schema.json"))


def check_answer(served: Served, tool: str, arguments: Any) -> Any:
    """Call, and hold the answer to the contract; returns the result."""
    before = served.state()
    result = served.call(tool, arguments)
    structured = result.structured_content
    assert isinstance(structured, dict), result
    OUTPUT[tool].validate(structured)
    assert result.content and result.content[0].text.strip()
    if result.is_error:
        ERROR.validate(structured)
        assert structured["error"]["message"].strip()
        assert structured["error"]["code"] != "internal_error", structured
        assert served.state() == before, f"a refused call changed the vault: {arguments!r}"
    else:
        assert "error" not in structured
        if tool == "remember" and structured.get("status") == "created":
            served.ids.append(structured["memory_id"])
    return result


# --- strategies -----------------------------------------------------------------------------

JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
)
JSON = st.recursive(
    JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)
TRICKY_TEXT = st.sampled_from(
    [
        "",
        " ",
        "\x00",
        "a\x00b",
        "../../etc/passwd",
        "/etc/passwd",
        ".git/config",
        "notes/../../x",
        "C:\\windows",
        "notes//x",
        "x" * 5000,
        "é" * 300,
        "\u202e\u2028\u2029",
        "$(rm -rf ~)",
        "'; DROP TABLE memories; --",
        "# Title\n\nbody",
        "AND OR NOT ( ) * ? ~ ^ [ ] { } :",
        "01JDXK3M6Q8W1J4T0P9R7V2B5C",
        "0" * 40,
    ]
)
TEXT = st.text(max_size=60) | TRICKY_TEXT
SEARCH_KEYS = [
    "query",
    "memory_id",
    "top_k",
    "maximum_context_bytes",
    "memory_types",
    "tags",
    "since",
    "until",
    "ledger",
]
REMEMBER_KEYS = [
    "mode",
    "memory_id",
    "expected_version_id",
    "content_md",
    "semantic_delta",
    "items",
]


DELTA_FIELDS = [
    "memory_type",
    "title",
    "entities",
    "facts",
    "tags",
    "key",
    "expires_at",
    "supersedes",
    "pinned",
    "status",
]


def _mutate(data: Any, base: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    """A valid call with a few keys dropped, retyped, replaced or added."""
    call = json.loads(json.dumps(base))
    for _ in range(data.draw(st.integers(1, 3))):
        action = data.draw(st.sampled_from(["drop", "replace", "add", "deep"]))
        if action == "drop" and call:
            call.pop(data.draw(st.sampled_from(sorted(call))))
        elif action == "replace":
            call[data.draw(st.sampled_from(keys))] = data.draw(JSON | TEXT)
        elif action == "add":
            call[data.draw(st.text(min_size=1, max_size=10))] = data.draw(JSON)
        elif action == "deep" and isinstance(call.get("semantic_delta"), dict):
            field = data.draw(st.sampled_from(DELTA_FIELDS))
            call["semantic_delta"][field] = data.draw(JSON | TEXT)
    return call


# --- the properties ---------------------------------------------------------------------


@FUZZ
@given(
    arguments=st.dictionaries(
        st.sampled_from(SEARCH_KEYS) | st.text(max_size=8), JSON | TEXT, max_size=5
    )
)
def test_any_search_arguments_get_a_result_or_a_refusal(served: Served, arguments: dict) -> None:
    check_answer(served, "search", arguments)


@FUZZ
@given(
    arguments=st.dictionaries(
        st.sampled_from(REMEMBER_KEYS) | st.text(max_size=8), JSON | TEXT, max_size=5
    )
)
def test_any_remember_arguments_get_a_result_or_a_refusal(served: Served, arguments: dict) -> None:
    check_answer(served, "remember", arguments)


@FUZZ
@given(data=st.data())
def test_near_valid_searches_get_a_result_or_a_refusal(served: Served, data: Any) -> None:
    base = data.draw(
        st.sampled_from(
            [
                {"query": "who owns billing", "top_k": 3, "tags": ["billing"]},
                {"query": "vpn", "memory_types": ["decision"], "since": "2020-01-01"},
                {"memory_id": served.ids[0]},
            ]
        )
    )
    check_answer(served, "search", _mutate(data, base, SEARCH_KEYS))


@FUZZ
@given(data=st.data())
def test_near_valid_remembers_get_a_result_or_a_refusal(served: Served, data: Any) -> None:
    # Only the memories made at the start: generated data must not depend on earlier examples.
    memory_id = data.draw(st.sampled_from(served.ids[:2]))
    version = served.version(memory_id)
    title = f"Fuzzed memory {data.draw(st.integers(0, 10**9))}"
    create = create_args(title=title)
    base = data.draw(
        st.sampled_from(
            [
                create,
                {"mode": "create", "items": [create_args(title=f"{title} {k}") for k in range(2)]},
                {
                    "mode": "update",
                    "memory_id": memory_id,
                    "expected_version_id": version,
                    "content_md": f"# {title}\n\nUpdated.\n",
                    "semantic_delta": delta(title),
                },
                {"mode": "delete", "memory_id": memory_id, "expected_version_id": "f" * 40},
            ]
        )
    )
    check_answer(served, "remember", _mutate(data, base, REMEMBER_KEYS))


@pytest.mark.parametrize(
    "memory_id",
    [
        "../../etc/passwd",
        "/etc/passwd",
        ".git/config",
        "notes/../../../etc/passwd",
        "a\x00b",
        "notes\\..\\x",
        "~/.ssh/id_rsa",
        "notes/.hidden",
        "notes/x/",
        "%2e%2e/etc/passwd",
    ],
)
def test_ids_crafted_as_paths_are_refused_and_read_nothing(served: Served, memory_id: str) -> None:
    for tool, arguments in (
        ("search", {"memory_id": memory_id}),
        ("remember", {"mode": "delete", "memory_id": memory_id, "expected_version_id": "0" * 40}),
    ):
        result = check_answer(served, tool, arguments)
        assert result.is_error
        assert result.structured_content["error"]["code"] in ("invalid_input", "not_found")
        assert "root:" not in result.content[0].text


# --- malformed JSON-RPC on stdio -------------------------------------------------------------

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}


class RawServer:
    """`vault-tool serve` spoken to line by line, with nothing between."""

    def __init__(self, vault: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "vault_tool", "serve", "--vault", str(vault)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=os.environ.copy(),
        )
        self.next_id = 1000
        self.send(json.dumps(INITIALIZE).encode())
        assert self.receive()["id"] == 0
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')

    def send(self, line: bytes) -> None:
        self.process.stdin.write(line + b"\n")  # type: ignore[union-attr]
        self.process.stdin.flush()  # type: ignore[union-attr]

    def receive(self) -> dict[str, Any]:
        line = self.process.stdout.readline()  # type: ignore[union-attr]
        assert line, "the server closed its stdout: " + self._stderr()
        return json.loads(line)

    def answers_still(self, awaited: frozenset[Any] = frozenset()) -> list[dict[str, Any]]:
        """Send a valid call; every message up to its answer (which must be right) and the
        answers to the awaited ids (calls run side by side: a slow one may answer last)."""
        self.next_id += 1
        call = {
            "jsonrpc": "2.0",
            "id": self.next_id,
            "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": "billing"}},
        }
        self.send(json.dumps(call).encode())
        seen: list[dict[str, Any]] = []
        answered = False
        while not answered or not awaited <= {m.get("id") for m in seen}:
            message = self.receive()
            if message.get("id") == self.next_id:
                assert message["result"]["isError"] is False, message
                answered = True
            else:
                seen.append(message)
        return seen

    def _stderr(self) -> str:
        self.process.kill()
        return self.process.stderr.read().decode(errors="replace")[-3000:]  # type: ignore[union-attr]

    def close(self) -> None:
        self.process.stdin.close()  # type: ignore[union-attr]
        assert self.process.wait(10) == 0
        assert self.process.stderr.read() == b""  # type: ignore[union-attr]


@pytest.fixture
def raw(vault_path: Path) -> Iterator[RawServer]:
    server = RawServer(vault_path)
    yield server
    server.close()
    log = (vault_path / ".vault" / "run" / "server.log").read_text()
    assert " ERROR " not in log and "Traceback" not in log, log[-3000:]


def _call(request_id: Any, tool: str, arguments: Any) -> bytes:
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    return json.dumps(message).encode()


MALFORMED = [
    (b"{this is not json", -32700),
    (b"\xff\xfe\x00\x80 binary \xc3\x28 invalid utf-8", -32700),
    (b"[" * 100_000 + b"]" * 100_000, -32700),  # deeper than any parser reads
    (
        b'{"jsonrpc":"2.0","id":7,"method":"tools/list","params":' + b"[" * 400 + b"]" * 400 + b"}",
        -32700,
    ),
    (
        b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"search",'
        b'"arguments":{"query":"lone \\ud800 surrogate"}}}',
        -32700,
    ),
    (b"null", -32600),
    (b"42", -32600),
    (b'"a string"', -32600),
    (b"[]", -32600),
    (b'[{"jsonrpc":"2.0","id":9,"method":"tools/list"}]', -32600),  # a batch
    (b'{"jsonrpc":"1.0","id":10,"method":"tools/list"}', -32600),
    # The SDK reads this one as a notification (ids of other types are ignored): no answer.
    (b'{"jsonrpc":"2.0","id":{"an":"object"},"method":"tools/list"}', None),
    (b'{"jsonrpc":"2.0","id":11,"method":42}', -32600),
    (b'{"jsonrpc":"2.0","id":12,"method":"tools/call","params":[1,2]}', -32600),
]


@pytest.mark.parametrize(("line", "code"), MALFORMED, ids=[str(i) for i in range(len(MALFORMED))])
def test_a_malformed_line_gets_a_json_rpc_error_and_the_server_carries_on(
    raw: RawServer, line: bytes, code: int | None
) -> None:
    raw.send(line)
    seen = raw.answers_still()
    errors = [m["error"]["code"] for m in seen if "error" in m]
    assert errors == ([code] if code else []), seen


def test_wrong_types_in_tool_calls_are_answered_and_change_nothing(
    raw: RawServer, vault_path: Path
) -> None:
    before = _git(vault_path, "rev-parse", "HEAD")
    calls = [
        _call(1, "search", "not an object"),
        _call(2, "search", [1, 2]),
        _call(3, "remember", None),
        _call(4, "remember", {"mode": ["create"]}),
        _call(5, "remember", {"mode": "create", "content_md": 42, "semantic_delta": "x"}),
        _call(6, "no-such-tool", {}),
        _call(7.5, "search", {"query": "x"}),
        _call(True, "search", {"query": "x"}),
        b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"search"}}',
        b'{"jsonrpc":"2.0","id":9,"method":"no/such/method"}',
    ]
    for line in calls:
        raw.send(line)
    seen = raw.answers_still(frozenset({1, 2, 3, 4, 5, 6, 8, 9}))
    answered = {m.get("id") for m in seen}
    assert {1, 2, 3, 4, 5, 6, 8, 9} <= answered, seen
    for message in seen:
        if "result" in message:
            assert message["result"]["isError"] is True, message
    assert _git(vault_path, "rev-parse", "HEAD") == before
    assert _git(vault_path, "status", "--porcelain") == ""


def test_huge_lines_and_binary_floods_never_kill_the_server(raw: RawServer) -> None:
    raw.send(b"x" * (17 * 1024 * 1024))  # past the line limit: dropped whole
    raw.send(_call(20, "search", {"query": "q" * 3_000_000}))  # under it: refused, answered
    raw.send(bytes(b for b in range(256) if b != 10) * 4000)  # one binary line of 1 MB
    seen = raw.answers_still(frozenset({20}))
    assert any(m.get("id") == 20 and m["result"]["isError"] for m in seen), seen


@settings(
    max_examples=max(20, EXAMPLES // 3),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(lines=st.lists(st.binary(min_size=1, max_size=300), min_size=1, max_size=5))
def test_random_bytes_on_stdin_never_kill_the_server(raw: RawServer, lines: list[bytes]) -> None:
    for line in lines:
        raw.send(line.replace(b"\n", b" "))
    raw.answers_still()
