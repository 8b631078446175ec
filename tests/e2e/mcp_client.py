"""Running the real `vault-tool serve` as a subprocess and talking to it with the official SDK.

Imported by the MCP e2e tests (fixtures included), so it needs no conftest of its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import eventually

SERVE = [sys.executable, "-m", "vault_tool", "serve"]


async def call(session: Any, tool: str, arguments: dict[str, Any]) -> Any:
    """One tools/call; structuredContent checked against the tool's declared outputSchema.

    Refusals too: hosts on the TypeScript SDK validate isError results against it as well.
    """
    from jsonschema import Draft202012Validator

    result = await session.call_tool(tool, arguments)
    listed = {t.name: t for t in (await session.list_tools()).tools}
    Draft202012Validator(listed[tool].output_schema).validate(result.structured_content)
    return result


def text_of(result: Any) -> str:
    """The text rendering of a result."""
    return "\n".join(block.text for block in result.content if block.type == "text")


CLIENT_NAME = "e2e-client"


@pytest.fixture
def anyio_backend() -> str:
    """The SDK runs on asyncio."""
    return "asyncio"


def server_env() -> dict[str, str]:
    """The test's isolated environment, passed on explicitly (stdio children inherit little)."""
    names = ("HOME", "PATH", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "LANG", "TMPDIR")
    return {n: os.environ[n] for n in names if n in os.environ}


@contextlib.asynccontextmanager
async def stdio_session(
    vault: Path, errlog: Any = None, options: tuple[str, ...] = ()
) -> AsyncIterator[tuple[Any, Any]]:
    """(ClientSession, InitializeResult) over stdio, after the 2025-11-25 handshake;
    options: more of `vault-tool serve`'s options."""
    import mcp_types as types
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=SERVE[0], args=[*SERVE[1:], "--vault", str(vault), *options], env=server_env()
    )
    with contextlib.ExitStack() as files:
        err = errlog or files.enter_context(open(os.devnull, "w"))
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(
                read, write, client_info=types.Implementation(name=CLIENT_NAME, version="1.0")
            ) as session,
        ):
            result = await session.initialize()
            yield session, result


def children_of(pid: int) -> list[tuple[int, str]]:
    """Live child processes of pid, from /proc: (pid, command line)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append((int(entry.name), cmdline))
    return found


def is_alive(pid: int) -> bool:
    """Whether pid exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def free_port() -> int:
    """A port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class HttpServer:
    """A `vault-tool serve --http` subprocess and its URL."""

    # How long the server may take to listen (a bound on a wait, not a speed).
    start_timeout = 15.0

    def __init__(self, vault: Path, *options: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.vault = vault
        self.process = subprocess.Popen(
            [*SERVE, "--http", "--port", str(self.port), "--vault", str(vault), *options],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=server_env(),
        )
        eventually(
            self._listening,
            timeout=self.start_timeout,
            interval=0.05,
            what="the HTTP server to listen",
        )

    def _listening(self) -> bool:
        if self.process.poll() is not None:
            raise RuntimeError(self.process.stderr.read().decode())  # type: ignore[union-attr]
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port)):
            return True
        return False

    def __enter__(self) -> HttpServer:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:
            self.stop()

    def stop(self) -> int:
        """SIGTERM, then the exit code (30 s: a bound on a hang, not a speed)."""
        self.process.terminate()
        try:
            return self.process.wait(30)
        finally:
            if self.process.poll() is None:
                self.process.kill()
            self.process.stderr.close()  # type: ignore[union-attr]


@contextlib.asynccontextmanager
async def http_session(url: str, headers: dict[str, str] | None = None) -> AsyncIterator[Any]:
    """An initialized ClientSession over the SDK's Streamable HTTP client."""
    import mcp_types as types
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(
            read, write, client_info=types.Implementation(name=CLIENT_NAME, version="1.0")
        ) as session,
    ):
        await session.initialize()
        yield session


def ledger_queries(vault: Path) -> list[str]:
    """The query of every search record in the vault's ledger, oldest first."""
    queries = []
    for path in sorted((vault / ".vault" / "ledger").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if record.get("type") == "search":
                queries.append(record["query"])
    return queries
