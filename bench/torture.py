"""Concurrency torture: three servers, a CLI, a person editing and committing, for a while.

    python bench/torture.py [--seconds 120] [--seed 1] [--vault DIR] [--json OUT]

On one vault at once, for a bounded time:
  - three `vault-tool serve` stdio servers, each driven by the official MCP client on its
    own thread: creates, updates and deletes of their own memories, reads of the others'
    memories (each must see every write another acknowledged), ranked searches;
  - a CLI loop: `vault-tool remember FILE`, one process per memory;
  - a person editing by hand: new notes, appended lines (the leader commits them);
  - the person's own git: unrelated files and notes committed with plain `git commit`;
  - a third of the way in, the watcher's leader is killed (SIGKILL); another server must
    take over, and its client reconnects to a new server.

At the end: every acknowledged write is there (at its version or a later one), every hand
edit is committed, every server saw every write, no duplicate id, no ERROR or traceback in
any server log or stderr, then the crash harness's checks (fsck, status, verify, files).
The short CI version is tests/reliability/test_torture_short.py, which calls run().
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import consistency  # noqa: E402
from consistency import Ack  # noqa: E402
from crash_harness import body, delta  # noqa: E402

SERVERS = 3
CALL_TIMEOUT = 60.0
HANDOVER_TIMEOUT = 15.0


@dataclass
class Shared:
    """What every thread reports to: acknowledged writes, counts, problems."""

    vault: Path
    acks: dict[str, Ack] = field(default_factory=dict)
    owners: dict[str, str] = field(default_factory=dict)
    hand: dict[str, bytes] = field(default_factory=dict)
    counts: Counter = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    work: threading.Event = field(default_factory=threading.Event)  # cleared: stop working
    check: threading.Event = field(default_factory=threading.Event)  # set: final reads
    done: threading.Event = field(default_factory=threading.Event)  # set: disconnect

    def ack(self, owner: str, memory_id: str, version: str, revision: int, deleted: bool) -> None:
        with self.lock:
            self.acks[memory_id] = Ack(memory_id, version, revision, deleted)
            self.owners[memory_id] = owner
            self.counts["acknowledged_writes"] += 1

    def problem(self, text: str) -> None:
        with self.lock:
            self.problems.append(text)
            self.counts["problems"] += 1

    def live(self, other_than: str | None = None) -> list[Ack]:
        with self.lock:
            return [
                a
                for a in self.acks.values()
                if not a.deleted and self.owners[a.memory_id] != other_than
            ]


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
                    self.shared.problem(f"{self.name}: lost its server in the final check")
                with self.shared.lock:
                    self.shared.counts["reconnects"] += 1
                _ = problem

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
                while self.shared.work.is_set():
                    with anyio.fail_after(CALL_TIMEOUT):
                        await self._one_call(session)
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
            result = await self._call(
                session,
                "remember",
                {
                    "mode": "create",
                    "content_md": body(title, 1, self.name),
                    "semantic_delta": delta(title),
                },
            )
            if "_error" in result:
                self.shared.problem(f"{self.name}: create refused: {result}")
                return
            self.shared.ack(self.name, result["memory_id"], result["version_id"], 1, False)
        elif roll < 0.5:
            ack = self.rng.choice(mine)
            current = await self._call(session, "search", {"memory_id": ack.memory_id})
            if "_error" in current:
                self.shared.problem(f"{self.name}: own memory {ack.memory_id} unreadable")
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
                self.shared.problem(f"{self.name}: update refused: {result['error']}")
                return
            self.shared.ack(self.name, ack.memory_id, result["version_id"], revision, False)
        elif roll < 0.56:
            ack = self.rng.choice(mine)
            current = await self._call(session, "search", {"memory_id": ack.memory_id})
            if "_error" in current:
                return
            result = await self._call(
                session,
                "remember",
                {
                    "mode": "delete",
                    "memory_id": ack.memory_id,
                    "expected_version_id": current["version_id"],
                },
            )
            if "_error" in result:
                self.shared.problem(f"{self.name}: delete refused: {result['error']}")
                return
            self.shared.ack(self.name, ack.memory_id, result["version_id"], 0, True)
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
        result = await self._call(session, "search", {"memory_id": ack.memory_id})
        with self.shared.lock:
            self.shared.counts["cross_reads"] += 1
            still = self.shared.acks[ack.memory_id]
        if "_error" in result:
            if not still.deleted:  # deleted by its owner meanwhile: not a miss
                self.shared.problem(f"{self.name}: cannot see {ack.memory_id}: {result['error']}")
            return
        if not _at_or_after(self.shared.vault, ack.version, result["version_id"]):
            self.shared.problem(
                f"{self.name}: sees {ack.memory_id} at {result['version_id'][:10]}, "
                f"older than the acknowledged {ack.version[:10]}"
            )

    async def _final_reads(self, session: Any) -> None:
        """Every acknowledged write of every process, and every hand note, is visible here."""
        with self.shared.lock:
            acks = list(self.shared.acks.values())
            notes = list(self.shared.hand)
        for ack in acks:
            result = await self._call(session, "search", {"memory_id": ack.memory_id})
            with self.shared.lock:
                self.shared.counts["final_reads"] += 1
            if ack.deleted:
                if "_error" not in result:
                    self.shared.problem(f"{self.name}: still sees deleted {ack.memory_id}")
            elif "_error" in result:
                self.shared.problem(f"{self.name}: final read of {ack.memory_id} failed")
            elif not _at_or_after(self.shared.vault, ack.version, result["version_id"]):
                self.shared.problem(f"{self.name}: {ack.memory_id} older than acknowledged")
        for path in notes:
            result = await self._call(session, "search", {"memory_id": path[:-3]})
            with self.shared.lock:
                self.shared.counts["final_reads"] += 1
            if "_error" in result:
                self.shared.problem(f"{self.name}: cannot see the hand note {path}")
            elif result["content_md"].encode() != _body_of(self.shared.hand[path]):
                self.shared.problem(f"{self.name}: sees an old version of the hand note {path}")


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


# --- the CLI, the person, the person's git -------------------------------------------------


def cli_loop(shared: Shared, scratch: Path, seed: int) -> None:
    """`vault-tool remember FILE` in a loop, one process per memory."""
    import yaml

    rng = random.Random(seed)
    n = 0
    while shared.work.is_set():
        n += 1
        title = f"cli memory {n} {rng.randrange(10**6)}"
        source = scratch / f"cli-{n}.md"
        front = yaml.safe_dump(delta(title), sort_keys=False)
        source.write_text(f"---\n{front}---\n{body(title, 1, 'cli')}")
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "vault_tool",
                "remember",
                str(source),
                "--json",
                "--vault",
                str(shared.vault),
            ],
            capture_output=True,
            text=True,
            env=env(),
        )
        with shared.lock:
            shared.counts["cli_calls"] += 1
        if done.returncode != 0:
            shared.problem(f"cli: remember failed ({done.returncode}): {done.stderr.strip()}")
            continue
        result = json.loads(done.stdout)
        shared.ack("cli", result["memory_id"], result["version_id"], 1, False)


def hand_edit_loop(shared: Shared, seed: int) -> None:
    """A person in an editor: new notes, lines appended to them (never a tool's file)."""
    rng = random.Random(seed)
    n = 0
    while shared.work.is_set():
        n += 1
        notes = list(shared.hand)
        if notes and rng.random() < 0.5:
            path = rng.choice(notes)
            data = shared.hand[path] + f"\nAnother line {n}.\n".encode()
        else:
            path = f"notes/person-{n}.md"
            data = f"# Person note {n}\n\nTyped by hand.\n".encode()
        target = shared.vault / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        with shared.lock:
            shared.hand[path] = data
            shared.counts["hand_edits"] += 1
        time.sleep(rng.uniform(0.05, 0.4))


def user_git_loop(shared: Shared, seed: int) -> None:
    """The person's own commits: unrelated files, and notes they commit before the watcher."""
    rng = random.Random(seed)
    n = 0
    while shared.work.is_set():
        n += 1
        if rng.random() < 0.7:
            path = f"user/file-{n}.txt"
            data = f"unrelated work {n}\n".encode()
        else:
            path = f"notes/committed-by-person-{n}.md"
            data = f"# Committed by the person {n}\n\nWith plain git.\n".encode()
        target = shared.vault / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        if path.endswith(".md"):
            with shared.lock:
                shared.hand[path] = data
        plain = rng.random() < 0.5
        commit = ["commit", "-q", "-m", f"My own change {n}"] + ([] if plain else ["--", path])
        for attempt in range(50):  # a person retries when git says another git is running
            added = _git(shared.vault, "add", "--", path)
            if added.returncode == 0:
                done = _git(shared.vault, *commit)
                if done.returncode == 0 or "nothing" in done.stdout + done.stderr:
                    break
            with shared.lock:
                shared.counts["user_git_retries"] += 1
            time.sleep(0.05 * (attempt + 1))
        else:
            shared.problem(f"user git: could not commit {path}")
        with shared.lock:
            shared.counts["user_commits"] += 1
        time.sleep(rng.uniform(0.2, 0.8))


def _git(vault: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=vault, capture_output=True, text=True)


# --- the leader ----------------------------------------------------------------------------


def leader_pid(vault: Path) -> int | None:
    """The pid in leader.json, if that process lives."""
    try:
        pid = int(json.loads((vault / ".vault" / "run" / "leader.json").read_text())["pid"])
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError, KeyError, TypeError):
        return None


def kill_the_leader(shared: Shared) -> float | None:
    """SIGKILL the leading server; the seconds until another process leads (None: never)."""
    deadline = time.monotonic() + HANDOVER_TIMEOUT
    pid = None
    while pid is None and time.monotonic() < deadline:
        pid = leader_pid(shared.vault)
        time.sleep(0.05)
    if pid is None:
        shared.problem("no server led the watching")
        return None
    os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    with shared.lock:
        shared.counts["leaders_killed"] += 1
    while time.monotonic() - killed < HANDOVER_TIMEOUT:
        now = leader_pid(shared.vault)
        if now is not None and now != pid:
            return time.monotonic() - killed
        time.sleep(0.05)
    shared.problem(f"nobody took over from the killed leader {pid}")
    return None


# --- the run -------------------------------------------------------------------------------


def run(vault: Path, seconds: float, seed: int = 1, log: Any = None) -> dict[str, Any]:
    """Torture an existing vault for `seconds`; the figures and problems."""
    log = log or (lambda text: None)
    shared = Shared(vault)
    rng = random.Random(seed)
    scratch = Path(tempfile.mkdtemp(prefix="torture-"))
    before = consistency.git(vault, "rev-parse", "HEAD")
    shared.work.set()
    started = time.monotonic()
    clients = [
        Client(f"agent-{k}", shared, rng.randrange(10**9), scratch).start() for k in range(SERVERS)
    ]
    helpers = [
        threading.Thread(target=cli_loop, args=(shared, scratch, rng.randrange(10**9))),
        threading.Thread(target=hand_edit_loop, args=(shared, rng.randrange(10**9))),
        threading.Thread(target=user_git_loop, args=(shared, rng.randrange(10**9))),
    ]
    for thread in helpers:
        thread.start()
    handover = None
    try:
        time.sleep(seconds / 3)
        log("killing the watcher's leader")
        handover = kill_the_leader(shared)
        log(f"handover took {handover:.2f} s" if handover is not None else "no handover")
        time.sleep(max(0.0, started + seconds - time.monotonic()))
    finally:
        shared.work.clear()
        for thread in helpers:
            thread.join(120)
    worked = time.monotonic() - started
    # The leader commits the last hand edits, then every server reads everything.
    _wait_for_hand_edits(shared)
    shared.check.set()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with shared.lock:
            reads = shared.counts["final_reads"]
            expected = SERVERS * (len(shared.acks) + len(shared.hand))
        if reads >= expected:
            break
        time.sleep(0.1)
    else:
        shared.problem("the final reads did not finish in 120 s")
    shared.done.set()
    for client in clients:
        client.thread.join(30)
    problems = shared.problems
    for path in sorted(scratch.glob("*.stderr")):
        text = path.read_text(errors="replace").strip()
        if text:
            problems.append(f"{path.name}: {text[:300]}")
    problems += consistency.server_log_errors(vault)
    problems += _final_checks(vault, shared, before)
    return {
        "seconds": round(worked, 1),
        "handover_seconds": round(handover, 2) if handover is not None else None,
        "counts": dict(sorted(shared.counts.items())),
        "problems": problems,
    }


def _wait_for_hand_edits(shared: Shared, timeout: float = 20.0) -> None:
    from vault_tool.storage.git import blob_sha

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        head = consistency.git(shared.vault, "-c", "core.quotepath=off", "ls-tree", "-r", "HEAD")
        committed = {line.split("\t", 1)[1]: line.split()[2] for line in head.splitlines()}
        pending = [p for p, data in shared.hand.items() if committed.get(p) != blob_sha(data)]
        if not pending:
            return
        time.sleep(0.2)
    shared.problem(f"hand edits not committed by the leader: {pending[:5]}")


def _final_checks(vault: Path, shared: Shared, before: str) -> list[str]:
    problems = []
    recovered = consistency.recover(vault)
    try:
        problems += consistency.check_acks(recovered, shared.acks)
        problems += consistency.duplicate_ids(recovered)
        problems += consistency.check_files(recovered)
    finally:
        recovered.close()
    problems += consistency.check_commits(vault, before)
    problems += consistency.check_leftovers(vault)
    fsck, status = consistency.check_git(vault)
    problems += fsck + status
    problems += consistency.check_verify(vault)
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--vault", type=Path, help="where to make the vault [a temp folder]")
    parser.add_argument("--json", type=Path, help="write the report here as JSON")
    args = parser.parse_args()
    from vault_tool.storage.store import Store

    vault = args.vault or Path(tempfile.mkdtemp(prefix="torture-vault-")) / "vault"
    Store.init(vault).close()
    result = run(vault, args.seconds, args.seed, log=lambda text: print(text, flush=True))
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    sys.exit(1 if result["problems"] else 0)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
