"""The torture's MCP agents: each a `vault-tool serve` process driven by the official client.

An agent creates, updates and deletes its own memories, reads the memories the other
processes acknowledged (each must be visible at once, at its version or a later one) and
searches; when its server is killed it connects to a new one. At the end it reads every
acknowledged write and every hand note. Every thread reports to one Shared record.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.harness.consistency import Ack
from tests.harness.writers import body, delta

CALL_TIMEOUT = 60.0
# One create in this many carries made-up credentials, which must never reach history.
SECRET_EVERY = 8
# How long a final read waits out "the index is being rebuilt" (a person's `git clean -xfd`
# in the run's last seconds removes the index; the rebuild takes a few seconds under load).
REBUILD_PATIENCE = 60.0


@dataclass
class Window:
    """A span of time in which the person ran a git operation (end None: still running)."""

    name: str
    busy_ok: bool  # whether the vault may refuse writes with vault_busy meanwhile
    start: float
    end: float | None = None

    def overlaps(self, start: float, end: float) -> bool:
        return (
            start <= (self.end if self.end is not None else time.monotonic()) and end >= self.start
        )


@dataclass
class Shared:
    """What every thread reports to: acknowledged writes, counts, problems."""

    vault: Path
    acks: dict[str, Ack] = field(default_factory=dict)
    acked_during: dict[str, list[str]] = field(default_factory=dict)  # version -> windows
    windows: list[Window] = field(default_factory=list)
    # One person: typing, committing or running git, one thing at a time.
    person: threading.Lock = field(default_factory=threading.Lock)
    owners: dict[str, str] = field(default_factory=dict)
    hand: dict[str, bytes] = field(default_factory=dict)
    counts: Counter = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    work: threading.Event = field(default_factory=threading.Event)  # cleared: stop working
    check: threading.Event = field(default_factory=threading.Event)  # set: final reads
    done: threading.Event = field(default_factory=threading.Event)  # set: disconnect
    in_flight: int = 0  # calls of the working phase not yet answered
    # Deletes sent and not answered: still running, or their server was killed. One killed
    # after its file was removed is committed by the next opener's repair ("Repair: ..."),
    # one killed before is not: either is right (check_acks looks for that commit).
    deleting: set[str] = field(default_factory=set)

    def begin_call(self) -> bool:
        """Count a working call about to start; False once the work has stopped."""
        with self.lock:
            if not self.work.is_set():
                return False
            self.in_flight += 1
            return True

    def end_call(self) -> None:
        """A working call was answered (or its server died)."""
        with self.lock:
            self.in_flight -= 1

    def settled(self) -> bool:
        """The work has stopped and no call of it is still running (nothing more is acked)."""
        with self.lock:
            return not self.work.is_set() and self.in_flight == 0

    def ack(
        self,
        owner: str,
        memory_id: str,
        version: str,
        revision: int,
        deleted: bool,
        started: float | None = None,
    ) -> None:
        during = self.during(started if started is not None else time.monotonic())
        with self.lock:
            self.acks[memory_id] = Ack(memory_id, version, revision, deleted)
            self.owners[memory_id] = owner
            self.acked_during[version] = during
            self.counts["acknowledged_writes"] += 1

    @contextlib.contextmanager
    def window(self, name: str, *, busy_ok: bool) -> Iterator[Window]:
        """Record the span of one git operation of the person's."""
        span = Window(name, busy_ok, time.monotonic())
        with self.lock:
            self.windows.append(span)
        try:
            yield span
        finally:
            span.end = time.monotonic()

    def when(self, start: float) -> str:
        """Where a call begun at start falls among the person's git operations, for messages."""
        during = self.during(start)
        if during:
            return f" (during {', '.join(during)})"
        with self.lock:
            ended = [w for w in self.windows if w.end is not None and w.end < start]
        last = max(ended, key=lambda w: w.end or 0.0, default=None)
        return f" ({start - (last.end or 0.0):.1f} s after {last.name})" if last else ""

    def during(self, start: float, end: float | None = None) -> list[str]:
        """The person's git operations that overlapped [start, end] (end: now)."""
        end = time.monotonic() if end is None else end
        with self.lock:
            return [w.name for w in self.windows if w.overlaps(start, end)]

    def shows_old_commit(self, started: float) -> bool:
        """Whether a read overlapped the person's checkout of an old commit (a rebase begins
        with one: `git rebase main idea` first checks out the branch idea, on its old base):
        the vault then shows that commit (a memory made since is not there, one changed
        since is older), as the folder does. Counted, not a miss; the final reads must find
        everything."""
        if not any(name.startswith(("checkout", "rebase")) for name in self.during(started)):
            return False
        with self.lock:
            self.counts["reads_of_an_old_checkout"] += 1
        return True

    def busy_rebuilding(self, result: dict[str, Any]) -> bool:
        """Whether a read was answered "the index is being rebuilt, retry" (after `git clean
        -xfd` removed it): an honest answer, counted; the final reads must still find it."""
        error = result.get("error")
        message = error.get("message", "") if isinstance(error, dict) else ""
        if result.get("_error") == "vault_busy" and "being rebuilt" in message:
            with self.lock:
                self.counts["reads_busy_rebuilding"] += 1
            return True
        return False

    def written_back(self, result: Any, spans: list[Any]) -> bool:
        """Whether an update was refused because the person's git put the file back while
        the write ran (a `git stash` takes the write's bytes; docs/reliability.md): honest,
        never acknowledged, counted."""
        error = result.get("error") if isinstance(result, dict) else None
        message = error.get("message", "") if isinstance(error, dict) else ""
        if "changed on disk while this write ran" not in message:
            return False
        if not any(w.name.startswith(("stash", "merge", "rebase", "checkout")) for w in spans):
            return False
        with self.lock:
            self.counts["refused_written_back"] += 1
        return True

    def refused(self, who: str, what: str, code: str, started: float, detail: Any) -> None:
        """A write refused: vault_busy while a merge, rebase or detached HEAD was in progress
        is the vault keeping out of the person's way (never acknowledged, so nothing lost),
        as is a conflict because the person's git wrote the file back meanwhile; any other
        refusal is a problem."""
        end = time.monotonic()
        with self.lock:
            spans = [w for w in self.windows if w.overlaps(started, end)]
        if code == "vault_busy" and any(w.busy_ok for w in spans):
            with self.lock:
                self.counts["refused_busy"] += 1
                for w in spans:
                    self.counts[f"refused_busy_during_{w.name.split()[0]}"] += 1
            return
        if isinstance(detail, dict) and self.busy_rebuilding(detail):
            return  # never acknowledged: the agent retries later, as the answer says
        if code == "version_conflict" and self.written_back(detail, spans):
            return
        text = str(detail)  # a traceback's last lines say what was raised
        shown = text if len(text) <= 600 else f"{text[:150]} [...] {text[-450:]}"
        self.problem(f"{who}: {what} refused{self.when(started)}: {code}: {shown}")

    def problem(self, text: str) -> None:
        with self.lock:
            self.problems.append(text)
            self.counts["problems"] += 1

    def live(self, other_than: str | None = None) -> list[Ack]:
        with self.lock:
            return [
                a
                for a in self.acks.values()
                if not a.deleted
                and a.memory_id not in self.deleting
                and self.owners[a.memory_id] != other_than
            ]

    def maybe_deleted(self, memory_id: str) -> bool:
        """Whether a delete of it was sent and never answered (see deleting)."""
        with self.lock:
            return memory_id in self.deleting


def env() -> dict[str, str]:
    """The environment servers and the CLI run in (the caller's, as a host passes it)."""
    return dict(os.environ)


# --- the MCP clients ---------------------------------------------------------------------


class Client:
    """One server process and the SDK client that drives it, on its own thread."""

    def __init__(self, name: str, shared: Shared, seed: int, scratch: Path) -> None:
        self.name = name
        self.shared = shared
        self.rng = random.Random(seed)
        self.scratch = scratch
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.connections = 0
        self.n = 0

    def start(self) -> Client:
        self.thread.start()
        return self

    def _run(self) -> None:
        import anyio

        anyio.run(self._main)

    async def _main(self) -> None:
        while not self.shared.done.is_set():
            errlog = self.scratch / f"{self.name}-{self.connections}.stderr"
            self.connections += 1
            try:
                await self._session(errlog)
            except Exception as problem:  # the server was killed: connect to a new one
                if not self.shared.work.is_set() and self.shared.check.is_set():
                    self.shared.problem(
                        f"{self.name}: lost its server in the final check: {problem!r:.300}"
                    )
                with self.shared.lock:
                    self.shared.counts["reconnects"] += 1

    async def _session(self, errlog: Path) -> None:
        import anyio
        import mcp_types as types
        from mcp.client.session import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "vault_tool", "serve", "--vault", str(self.shared.vault)],
            env=env(),
        )
        with open(errlog, "w") as err:
            async with (
                stdio_client(params, errlog=err) as (read, write),
                ClientSession(
                    read, write, client_info=types.Implementation(name=self.name, version="1")
                ) as session,
            ):
                with anyio.fail_after(CALL_TIMEOUT):
                    await session.initialize()
                while self.shared.begin_call():
                    try:
                        with anyio.fail_after(CALL_TIMEOUT):
                            await self._one_call(session)
                    finally:
                        self.shared.end_call()
                while not self.shared.check.is_set() and not self.shared.done.is_set():
                    await anyio.sleep(0.05)
                if not self.shared.done.is_set():
                    await self._final_reads(session)
                while not self.shared.done.is_set():
                    await anyio.sleep(0.05)

    async def _call(self, session: Any, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await session.call_tool(tool, arguments)
        with self.shared.lock:
            self.shared.counts[f"calls_{tool}"] += 1
        structured = result.structured_content or {}
        if result.is_error:
            code = structured.get("error", {}).get("code", "?")
            with self.shared.lock:
                self.shared.counts[f"errors_{code}"] += 1
            return {"_error": code, **structured}
        return structured

    async def _one_call(self, session: Any) -> None:
        self.n += 1
        roll = self.rng.random()
        mine = self.shared.live(other_than=None)
        mine = [a for a in mine if self.shared.owners.get(a.memory_id) == self.name]
        if roll < 0.3 or not mine:
            title = f"{self.name} memory {self.n} {self.rng.randrange(10**6)}"
            content, semantic = body(title, 1, self.name), delta(title)
            if self.n % SECRET_EVERY == 0:
                content, semantic = with_secrets(content, semantic, self.n)
                with self.shared.lock:
                    self.shared.counts["secrets_offered"] += 1
            started = time.monotonic()
            result = await self._call(
                session,
                "remember",
                {"mode": "create", "content_md": content, "semantic_delta": semantic},
            )
            if "_error" in result:
                self.shared.refused(self.name, "create", result["_error"], started, result)
                return
            self.shared.ack(self.name, result["memory_id"], result["version_id"], 1, False, started)
        elif roll < 0.5:
            ack = self.rng.choice(mine)
            started = time.monotonic()
            current = await self._call(session, "search", {"memory_id": ack.memory_id})
            if "_error" in current:
                if not (
                    self.shared.busy_rebuilding(current) or self.shared.shows_old_commit(started)
                ):
                    self.shared.problem(
                        f"{self.name}: own memory {ack.memory_id} unreadable"
                        f"{self.shared.when(started)}: {current['_error']}"
                    )
                return
            revision = ack.revision + 1
            result = await self._call(
                session,
                "remember",
                {
                    "mode": "update",
                    "memory_id": ack.memory_id,
                    "expected_version_id": current["version_id"],
                    "content_md": body(current["title"], revision, self.name),
                    "semantic_delta": delta(current["title"]),
                },
            )
            if "_error" in result:
                self.shared.refused(self.name, "update", result["_error"], started, result)
                return
            self.shared.ack(
                self.name, ack.memory_id, result["version_id"], revision, False, started
            )
        elif roll < 0.56:
            ack = self.rng.choice(mine)
            started = time.monotonic()
            current = await self._call(session, "search", {"memory_id": ack.memory_id})
            if "_error" in current:
                return
            with self.shared.lock:
                self.shared.deleting.add(ack.memory_id)
            result = await self._call(  # (raises if the server is killed: stays in deleting)
                session,
                "remember",
                {
                    "mode": "delete",
                    "memory_id": ack.memory_id,
                    "expected_version_id": current["version_id"],
                },
            )
            with self.shared.lock:
                self.shared.deleting.discard(ack.memory_id)
            if "_error" in result:
                self.shared.refused(self.name, "delete", result["_error"], started, result)
                return
            self.shared.ack(self.name, ack.memory_id, result["version_id"], 0, True, started)
        elif roll < 0.85:
            await self._read_another(session)
        else:
            others = self.shared.live(other_than=self.name)
            query = self.rng.choice(others).memory_id if others else "billing"
            result = await self._call(session, "search", {"query": f"Ana owns billing {query}"})
            if "_error" in result:
                self.shared.problem(f"{self.name}: search refused: {result['error']}")

    async def _read_another(self, session: Any) -> None:
        """Another process's acknowledged write must be visible here at once."""
        others = self.shared.live(other_than=self.name)
        if not others:
            return
        ack = self.rng.choice(others)
        started = time.monotonic()
        result = await self._call(session, "search", {"memory_id": ack.memory_id})
        with self.shared.lock:
            self.shared.counts["cross_reads"] += 1
            still = self.shared.acks[ack.memory_id]
        where = self.shared.when(started)
        if "_error" in result:
            # Deleted by its owner meanwhile, or the index being rebuilt: not a miss.
            if not (
                still.deleted
                or self.shared.maybe_deleted(ack.memory_id)
                or self.shared.busy_rebuilding(result)
                or self.shared.shows_old_commit(started)
            ):
                self.shared.problem(
                    f"{self.name}: cannot see {ack.memory_id}{where}: {result['error']}"
                )
            return
        if not _at_or_after(self.shared.vault, ack.version, result["version_id"]):
            if self.shared.shows_old_commit(started):
                return
            self.shared.problem(
                f"{self.name}: sees {ack.memory_id} at {result['version_id'][:10]}, "
                f"older than the acknowledged {ack.version[:10]}{where}"
            )

    async def _read_when_built(self, session: Any, memory_id: str) -> dict[str, Any]:
        """A read by id that, told the index is being rebuilt, asks again (as the answer
        says to), for at most REBUILD_PATIENCE."""
        deadline = time.monotonic() + REBUILD_PATIENCE
        while True:
            result = await self._call(session, "search", {"memory_id": memory_id})
            if not self.shared.busy_rebuilding(result) or time.monotonic() > deadline:
                return result
            await asyncio.sleep(0.2)

    async def _final_reads(self, session: Any) -> None:
        """Every acknowledged write of every process, and every hand note, is visible here."""
        with self.shared.lock:
            acks = list(self.shared.acks.values())
            notes = list(self.shared.hand)
        for ack in acks:
            result = await self._read_when_built(session, ack.memory_id)
            with self.shared.lock:
                self.shared.counts["final_reads"] += 1
            if self.shared.maybe_deleted(ack.memory_id):
                continue  # either answer is right (check_acks wants its commit if gone)
            if ack.deleted:
                if "_error" not in result:
                    self.shared.problem(f"{self.name}: still sees deleted {ack.memory_id}")
            elif "_error" in result:
                self.shared.problem(f"{self.name}: final read of {ack.memory_id} failed")
            elif not _at_or_after(self.shared.vault, ack.version, result["version_id"]):
                self.shared.problem(f"{self.name}: {ack.memory_id} older than acknowledged")
        for path in notes:
            result = await self._read_when_built(session, path[:-3])
            with self.shared.lock:
                self.shared.counts["final_reads"] += 1
            if "_error" in result:
                self.shared.problem(f"{self.name}: cannot see the hand note {path}")
            elif result["content_md"].encode() != _body_of(self.shared.hand[path]):
                self.shared.problem(
                    f"{self.name}: sees an old version of the hand note {path}: "
                    f"{result['content_md']!r:.120}, not {self.shared.hand[path]!r:.120}"
                )


def with_secrets(content: str, semantic: dict[str, Any], n: int) -> tuple[str, dict[str, Any]]:
    """The same memory with made-up credentials in its body and an entity's description
    (built here, never stored in this file whole)."""
    token = "ghp_" + f"{n:06d}Zq8Lw3Rt6Yp1Nx4Vb7Mc2Kd5Hs9Jf0Gu"[:36]
    key_id = "AKIA" + f"{n:08d}QWERTYUI"[:16]
    entities = [dict(e) for e in semantic["entities"]]
    entities[0]["is"] = f"{entities[0]['is']}, uses key {key_id}"
    return content + f"\nThe deploy token is {token}.\n", {**semantic, "entities": entities}


def _body_of(data: bytes) -> bytes:
    from vault_tool.core.memory import normalize_body

    return normalize_body(data.decode()).encode()


def _at_or_after(vault: Path, acknowledged: str, seen: str) -> bool:
    if acknowledged == seen:
        return True
    done = subprocess.run(
        ["git", "merge-base", "--is-ancestor", acknowledged, seen], cwd=vault, capture_output=True
    )
    return done.returncode == 0
