"""Concurrency torture: three servers, a CLI, a person editing and committing, for a while.

    python -m tests.harness.torture [--seconds 120] [--seed 1] [--vault DIR] [--json OUT]

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
The MCP agents and the record every thread reports to are in agents.py.
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
from pathlib import Path
from typing import Any

from tests.harness import consistency
from tests.harness.agents import CALL_TIMEOUT, Client, Shared, env
from tests.harness.writers import body, delta

SERVERS = 3
HANDOVER_TIMEOUT = 15.0


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
    pid = consistency.within(lambda: leader_pid(shared.vault), HANDOVER_TIMEOUT, 0.05)
    if pid is None:
        shared.problem("no server led the watching")
        return None
    os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    with shared.lock:
        shared.counts["leaders_killed"] += 1
    if consistency.within(lambda: leader_pid(shared.vault) not in (None, pid), HANDOVER_TIMEOUT):
        return time.monotonic() - killed
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
    # A call answered after the final reads began would be an acknowledged write that only
    # some servers were asked to read: they start once the last one is answered.
    if not consistency.within(shared.settled, CALL_TIMEOUT + 10, 0.05):
        shared.problem("a server call was still running after the work stopped")
    # The leader commits the last hand edits, then every server reads everything.
    _wait_for_hand_edits(shared)
    shared.check.set()

    def all_read() -> bool:
        with shared.lock:
            return shared.counts["final_reads"] >= SERVERS * (len(shared.acks) + len(shared.hand))

    if not consistency.within(all_read, 120, 0.1):
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

    def pending() -> list[str]:
        head = consistency.git(shared.vault, "-c", "core.quotepath=off", "ls-tree", "-r", "HEAD")
        committed = {line.split("\t", 1)[1]: line.split()[2] for line in head.splitlines()}
        return [p for p, data in shared.hand.items() if committed.get(p) != blob_sha(data)]

    if not consistency.within(lambda: not pending(), timeout, 0.2):
        shared.problem(f"hand edits not committed by the leader: {pending()[:5]}")


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
    """The long run, from the command line."""
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
