"""`vault-tool serve`: MCP over stdin/stdout, from the first byte to a clean exit.

1. Take the wire: keep private copies of fd 0 and 1 and point fd 0 at /dev/null and fd 1 at
   stderr, so git and any other child can neither eat requests nor corrupt responses.
2. Answer `initialize` at once (handshake.py); open the vault, then import the SDK, on a
   thread of their own, while this one answers what it can without the SDK (early.py:
   ping and tools/list; tool calls wait for the SDK, their one door).
3. Serve through the SDK, reading the wire on a daemon thread with plain os.read: a
   blocked read then never holds up exit (an SDK file wrapper would need a line to arrive).
   The lines read before the SDK was ready and left to it reach it first, in order.
4. On stdin EOF or SIGTERM/SIGINT/SIGHUP: stop the watcher, close the vault (and git's
   helper processes) and return, well within 2 seconds.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import signal
import stat
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from vault_tool.errors import VaultError
from vault_tool.server import handshake
from vault_tool.server.before_sdk import EarlyServer, Inbox
from vault_tool.server.runtime import Runtime

log = logging.getLogger(__name__)

# One JSON-RPC message per line; a longer line is dropped whole (the SDK reports it as
# unparseable) rather than buffered without bound. A full batch of 20 creates is ~1.5 MB.
MAX_LINE_BYTES = 16 * 1024 * 1024
_CHUNK = 64 * 1024
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_OVERSIZED = "{oversized message dropped}\n"
# How long a stop waits for a vault still being opened, so that it is closed again.
OPENING_SECONDS = 1.0


class WireReader:
    """Lines from a raw file descriptor, without a buffered file object (no lock to hang on)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buffer = bytearray()
        self._eof = False

    def readline(self) -> str:
        """The next line (with its newline), "" at EOF; an oversized line becomes a marker."""
        oversized = False
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[: end + 1])
                del self._buffer[: end + 1]
                if oversized or len(line) > MAX_LINE_BYTES:
                    return _OVERSIZED
                return line.decode("utf-8", errors="replace")
            if len(self._buffer) > MAX_LINE_BYTES:
                oversized = True
                self._buffer.clear()
            if self._eof:
                rest = bytes(self._buffer)
                self._buffer.clear()
                return "" if not rest or oversized else rest.decode("utf-8", errors="replace")
            chunk = os.read(self.fd, _CHUNK)
            if not chunk:
                self._eof = True
            self._buffer.extend(chunk)


def serve_unavailable(problem: VaultError, profile: str) -> int:
    """Serve no vault over stdio (the one asked for is not there): `initialize` and the
    tool list are answered, and every call is refused with the problem and its fix, so a
    host shows them rather than a connection closed. The problem's exit code at the end."""
    serve_stdio(Path.cwd(), profile=profile, unavailable=problem)
    return problem.exit_code


def serve_stdio(
    root: Path,
    sync_every: float | None = None,
    profile: str = "core",
    project: str | None = None,
    unavailable: VaultError | None = None,
) -> None:
    """Serve the vault at root over stdio until stdin closes or a signal arrives."""
    # Until the event loop listens for them, a stop signal unwinds through the finally below.
    for signum in STOP_SIGNALS:
        signal.signal(signum, _exit_now)
    wire_in, wire_out = _take_the_wire()
    # The SDK imports (most of a second) while the host's first line arrives and the vault
    # opens: a first call needs both.
    ready = threading.Event()
    threading.Thread(target=_import_sdk, args=(ready,), name="sdk-import", daemon=True).start()
    reader = WireReader(wire_in)
    first = reader.readline()
    if not first:
        log.info("stdin closed before any request")
        return
    handshake_answer = handshake.early_answer(first)
    if handshake_answer is not None:
        _write_all(wire_out, (handshake_answer.line + "\n").encode("utf-8"))
    runtime = Runtime(root, "stdio", sync_every, profile, project, unavailable)
    inbox = Inbox()
    threading.Thread(target=_pump, args=(reader, inbox), name="stdin-reader", daemon=True).start()
    opened = threading.Event()
    threading.Thread(
        target=_warm_up, args=(runtime, opened, ready, inbox), name="warm-up", daemon=True
    ).start()
    try:
        lines: list[str | None] | None = [first]
        if handshake_answer is not None:

            def send_line(text: str) -> None:
                _write_all(wire_out, (text + "\n").encode("utf-8"))

            rest = EarlyServer(runtime, inbox, send_line).serve(ready)
            lines = None if rest is None else [first, *rest]
        if lines is not None:
            opened.wait()
            import anyio

            anyio.run(_serve, runtime, inbox, wire_out, lines, handshake_answer)
    finally:
        opened.wait(OPENING_SECONDS)
        runtime.shutdown()


def _import_sdk(ready: Any) -> None:
    try:
        import anyio  # noqa: F401
        from mcp.server.stdio import stdio_server  # noqa: F401

        from vault_tool.server import app  # noqa: F401
    finally:
        ready.set()


def _warm_up(runtime: Runtime, opened: Any, ready: Any, inbox: Inbox) -> None:
    """Open the vault (a first call needs it, and the SDK), then start watching (at once if
    the index is empty: no catch-up has filled it, and it answers nothing)."""
    try:
        runtime.open(watch=False)
    finally:
        opened.set()
    if not runtime.index_filled():
        runtime.watch()
    ready.wait()
    inbox.wake()
    runtime.watch()
    runtime.warm()  # (idle now: the first remember's checks, common words' scores)


async def _serve(
    runtime: Runtime,
    inbox: Inbox,
    wire_out: int,
    lines: list[str | None],
    handshake_answer: handshake.EarlyAnswer | None,
) -> None:
    import anyio
    import anyio.from_thread
    from mcp.server.stdio import stdio_server

    from vault_tool.server.app import build_server

    server = build_server(runtime)
    send, receive = anyio.create_memory_object_stream[str](16)
    token = anyio.lowlevel.current_token()

    def forward(line: str | None) -> None:  # on the reader thread
        gone = (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.RunFinishedError)
        with contextlib.suppress(*gone, RuntimeError):  # the server is shutting down
            if line is None:
                anyio.from_thread.run_sync(send.close, token=token)
            else:
                anyio.from_thread.run(send.send, line, token=token)

    held = inbox.hand_over(forward)
    replay = [line for line in [*lines, *held] if line is not None]
    if None in held:
        send.close()  # stdin closed already: the replayed lines are the last
    drop = handshake_answer.request_id if handshake_answer else None
    stdout = _Wire(wire_out, drop_answer_to=drop)
    stdin = _Lines(replay, receive, stdout)
    async with anyio.create_task_group() as group:
        group.start_soon(_stop_on_signal, group.cancel_scope)
        async with stdio_server(stdin=stdin, stdout=stdout) as (read_stream, write_stream):  # type: ignore[arg-type]
            await server.run(read_stream, write_stream, server.create_initialization_options())
        log.info("stdin closed; shutting down")
        group.cancel_scope.cancel()


def _pump(reader: WireReader, inbox: Inbox) -> None:
    """Hand lines from the wire to the inbox until EOF (runs on a daemon thread)."""
    try:
        while line := reader.readline():
            inbox.put(line)
    except OSError:
        log.exception("reading stdin failed; treating it as closed")
    inbox.put(None)


class _Lines:
    """The SDK's stdin: the lines read before it was ready (initialize first: the SDK must see
    it), then the reader thread's.

    A line the SDK would drop without a word gets JSON-RPC's answer here, so a client that
    sent garbage learns it instead of waiting: a parse error for what the SDK's parser
    cannot read (not JSON, nested too deep, a lone surrogate escape), an invalid request
    for JSON that is no JSON-RPC message. The request's id is given back when it can be read.
    """

    def __init__(self, replay: list[str], receive: Any, wire: _Wire) -> None:
        self._replay = replay
        self._receive = receive
        self._wire = wire

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        for line in self._replay:
            if await self._parses(line):
                yield line
        async with self._receive:
            async for line in self._receive:
                if await self._parses(line):
                    yield line

    async def _parses(self, line: str) -> bool:
        if not line.strip():
            return False
        refusal = _refusal_of(line)
        if refusal is None:
            return True
        log.warning("answered an unreadable line of %d characters", len(line))
        await self._wire.write(refusal)
        return False


def _refusal_of(line: str) -> str | None:
    """The JSON-RPC error line for a message the SDK cannot take; None if it can."""
    import mcp_types as types
    from pydantic import ValidationError

    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        return None
    except ValidationError as problem:
        unreadable = any(e["type"] == "json_invalid" for e in problem.errors())
    code, message = (-32700, "Parse error") if unreadable else (-32600, "Invalid Request")
    error = {"jsonrpc": "2.0", "id": _request_id(line), "error": {"code": code, "message": message}}
    return json.dumps(error) + "\n"


def _request_id(line: str) -> str | int | None:
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):  # not JSON, or nested too deep for Python's parser
        return None
    found = message.get("id") if isinstance(message, dict) else None
    if isinstance(found, str) or (isinstance(found, int) and not isinstance(found, bool)):
        return found
    return None


class _Wire:
    """The SDK's stdout: writes to the private copy of fd 1, minus the already-sent answer."""

    def __init__(self, fd: int, drop_answer_to: Any) -> None:
        self._fd = fd
        self._drop = drop_answer_to
        self._dropping = drop_answer_to is not None
        self._broken = False
        self._lock: Any = None
        # A pipe (as hosts connect us) is written without a thread: non-blocking, waiting on
        # the event loop only when the host reads slower than we answer.
        self._direct = stat.S_ISFIFO(os.fstat(fd).st_mode)
        if self._direct:
            os.set_blocking(fd, False)

    async def write(self, text: str) -> None:
        import anyio

        if self._lock is None:
            self._lock = anyio.Lock()  # two writers (the SDK, parse errors): whole lines only
        if self._dropping and handshake.is_answer_to(text, self._drop):
            self._dropping = False
            if '"error"' in text:
                log.warning("the SDK refused an initialize that was already answered: %s", text)
            return
        if self._broken:
            return
        try:
            async with self._lock:
                if self._direct:
                    await _write_when_writable(self._fd, text.encode("utf-8"))
                else:
                    await anyio.to_thread.run_sync(_write_all, self._fd, text.encode("utf-8"))
        except OSError as problem:
            # The client went away mid-answer; EOF on stdin follows and ends the session.
            self._broken = True
            log.warning("stdout closed by the client (%s)", problem)

    async def flush(self) -> None:
        return None  # os.write is unbuffered


async def _stop_on_signal(scope: Any) -> None:
    import anyio

    with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
        async for signum in signals:
            log.info("received %s; shutting down", signal.Signals(signum).name)
            scope.cancel()
            return


def _exit_now(signum: int, frame: Any) -> None:
    log.info("received %s while starting; shutting down", signal.Signals(signum).name)
    raise SystemExit(0)


def _take_the_wire() -> tuple[int, int]:
    """Private copies of fds 0 and 1; fd 0 becomes /dev/null and fd 1 a copy of stderr."""
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    try:
        os.dup2(2, 1)  # stray output stays visible in the host's log of our stderr
    except OSError:
        os.dup2(null, 1)  # no stderr at all
    os.close(null)
    return wire_in, wire_out


async def _write_when_writable(fd: int, data: bytes) -> None:
    import anyio

    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            await anyio.wait_writable(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
