"""Concurrency torture: three servers, a CLI, a person editing and committing, for a while.

    python -m tests.harness.torture [--seconds 120] [--seed 1] [--vault DIR] [--json OUT]

On one vault at once, for a bounded time:
  - three `vault-tool serve` stdio servers, each driven by the official MCP client on its
    own thread: creates, updates and deletes of their own memories, reads of the others'
    memories (each must see every write another acknowledged), ranked searches;
  - a CLI loop: `vault-tool remember FILE`, one process per memory;
  - a person editing by hand: new notes, appended lines (the leader commits them);
  - the person's own git: unrelated files and notes committed with plain `git commit`;
  - the person's harder git (git_person.py): `git pull` stopped on a conflict, resolved or
    aborted; `git rebase` of a local branch stopped on a conflict; `git checkout` of an old
    commit; `git stash` / `git stash pop`; `git clean -xfd`; the leader frozen (SIGSTOP)
    until another takes over, then SIGCONT. Each is done at least once, however long it
    takes; writes refused with vault_busy meanwhile are counted (refused_busy), not failed;
  - a third of the way in, the watcher's leader is killed (SIGKILL); another server must
    take over, and its client reconnects to a new server.

At the end: every acknowledged write is there (at its version or a later one) and on main,
every edit of the person's (resolutions, stashed lines, notes typed mid-operation) is on
disk and committed, every server saw every write, no duplicate id, no conflict-marker line
in any version of a memory file, no secret in any line history added (some creates offer
credentials), no ERROR or traceback in any server log or stderr, then the crash harness's
checks (fsck, status, verify, files). The short CI version is
tests/reliability/test_torture_short.py, which calls run(). The MCP agents and the record
every thread reports to are in agents.py.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.harness import consistency, evidence
from tests.harness.agents import CALL_TIMEOUT, Client, Shared, env
from tests.harness.git_hand import leader_pid, open_log_errors
from tests.harness.git_person import ACTIONS, GitPerson
from tests.harness.writers import body, delta
from vault_tool.errors import VaultError

SERVERS = 3
# Bounds on waits for a state (never a speed: the run reports a problem past them).
HANDOVER_TIMEOUT = 60.0
GIT_PERSON_TIMEOUT = 600.0


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
        started = time.monotonic()
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
            code = "vault_busy" if done.returncode == 6 else f"exit {done.returncode}"
            # With --json an error is printed on stdout (its JSON), a crash on stderr.
            said = done.stderr.strip() or done.stdout.strip()
            shared.refused("cli", "remember", code, started, said)
            continue
        result = json.loads(done.stdout)
        shared.ack("cli", result["memory_id"], result["version_id"], 1, False, started)


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
        with shared.person:
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
        with shared.person:
            _one_user_commit(shared, rng, n)
        time.sleep(rng.uniform(0.2, 0.8))


def _one_user_commit(shared: Shared, rng: random.Random, n: int) -> None:
    """One change of the person's, `git add` + `git commit` (plain, or of its path)."""
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


def _git(vault: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=vault, capture_output=True, text=True)


# --- the leader ----------------------------------------------------------------------------


def kill_the_leader(shared: Shared) -> float | None:
    """SIGKILL the leading server; the seconds until another process leads (None: never).

    Between two of the person's actions: the person does one thing at a time."""
    with shared.person:
        pid = consistency.within(lambda: leader_pid(shared.vault), HANDOVER_TIMEOUT, 0.05)
        if pid is None:
            shared.problem("no server led the watching")
            return None
        os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()
        with shared.lock:
            shared.counts["leaders_killed"] += 1
        took_over = lambda: leader_pid(shared.vault) not in (None, pid)  # noqa: E731
        if consistency.within(took_over, HANDOVER_TIMEOUT):
            with shared.lock:
                shared.counts["leader_takeovers_from_killed"] += 1
            return time.monotonic() - killed
        shared.problem(f"nobody took over from the killed leader {pid} in {HANDOVER_TIMEOUT:g} s")
        return None


# --- the run -------------------------------------------------------------------------------


def run(
    vault: Path,
    seconds: float,
    seed: int = 1,
    log: Any = None,
    actions: Sequence[str] = ACTIONS,
    gap: tuple[float, float] = (0.3, 1.0),
) -> dict[str, Any]:
    """Torture an existing vault for `seconds`, and until the person has done each of
    `actions` (then more of them, `gap` seconds apart); the figures and problems."""
    log = log or (lambda text: None)
    shared = Shared(vault)
    rng = random.Random(seed)
    scratch = Path(tempfile.mkdtemp(prefix="torture-"))
    before = consistency.git(vault, "rev-parse", "HEAD")
    shared.work.set()
    started, started_wall = time.monotonic(), time.time()
    clients = [
        Client(f"agent-{k}", shared, rng.randrange(10**9), scratch).start() for k in range(SERVERS)
    ]
    helpers = [
        threading.Thread(target=cli_loop, args=(shared, scratch, rng.randrange(10**9))),
        threading.Thread(target=hand_edit_loop, args=(shared, rng.randrange(10**9))),
        threading.Thread(target=user_git_loop, args=(shared, rng.randrange(10**9))),
    ]
    person = GitPerson(shared, rng.randrange(10**9), scratch, actions, gap)
    for thread in helpers:
        thread.start()
    person.start()
    handover = None
    try:
        time.sleep(seconds / 3)
        log("killing the watcher's leader")
        handover = kill_the_leader(shared)
        log(f"handover took {handover:.2f} s" if handover is not None else "no handover")
        time.sleep(max(0.0, started + seconds - time.monotonic()))
        if not person.required_done.wait(GIT_PERSON_TIMEOUT):
            shared.problem(f"the person's git actions not done in {GIT_PERSON_TIMEOUT:g} s")
    finally:
        shared.work.clear()
        for thread in helpers:
            thread.join(120)
        # The person finishes the git action under way (a merge to resolve, a rebase): on
        # a loaded machine that can take minutes; the final checks need git idle.
        person.thread.join(GIT_PERSON_TIMEOUT)
    if person.thread.is_alive():
        shared.problem(f"the person's git was still busy {GIT_PERSON_TIMEOUT:g} s after the work")
    log(f"work done: {dict(sorted(shared.counts.items()))}")
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
    logs_gone = open_log_errors(vault)  # logs `git clean -xfd` removed, still open
    shared.done.set()
    for client in clients:
        client.thread.join(30)
    problems = shared.problems
    for path in sorted(scratch.glob("*.stderr")):
        text = path.read_text(errors="replace").strip()
        if text:
            problems += [f"{path.name}: {line}" for line in consistency.log_errors(text)] or [
                f"{path.name}: {text[:300]}"
            ]
    shutil.rmtree(scratch, ignore_errors=True)
    problems += consistency.server_log_errors(vault)
    problems += sorted(set(person.salvaged_log_problems + logs_gone))
    problems += _final_checks(vault, shared, before)
    return {
        "seconds": round(worked, 1),
        "handover_seconds": round(handover, 2) if handover is not None else None,
        "counts": dict(sorted(shared.counts.items())),
        "problem_kinds": problem_kinds(problems),
        "problems": problems,
        "timeline": evidence.timeline(vault, shared, problems, started_wall),
    }


def failure_report(result: dict[str, Any], shown: int = 15) -> str:
    """A failed run for a test's failure message, the first problems last: a log that keeps
    only its tail (a CI's) still shows what went wrong first, and when."""
    problems = result["problems"]
    kinds = list(result["problem_kinds"].items())[:10]
    return "\n".join([
        f"{len(problems)} problems, of {len(result['problem_kinds'])} kinds; the most frequent:",
        *(f"  {count} x {kind}" for kind, count in kinds),
        f"counts: {result['counts']}",
        "timeline (seconds from the start; the last 80 lines):",
        *result["timeline"].splitlines()[-80:],
        f"the first {min(shown, len(problems))} problems, in the order found:",
        *(f"  {problem[:400]}" for problem in problems[:shown]),
    ])  # fmt: skip


def problem_kinds(problems: list[str]) -> dict[str, int]:
    """How many problems of each kind: their text with ids, commits and numbers blanked."""
    import re
    from collections import Counter

    def kind(text: str) -> str:
        text = re.sub(r"\b[0-9A-Z]{26}\b", "<id>", text)
        text = re.sub(r"\b[0-9a-f]{7,40}\b", "<sha>", text)
        return re.sub(r"\d+", "N", text)[:160]

    return dict(Counter(kind(p) for p in problems).most_common())


def _wait_for_hand_edits(shared: Shared, timeout: float = 20.0) -> None:
    from vault_tool.storage.git import blob_sha

    def pending() -> list[str]:
        head = consistency.git(shared.vault, "-c", "core.quotepath=off", "ls-tree", "-r", "HEAD")
        committed = {line.split("\t", 1)[1]: line.split()[2] for line in head.splitlines()}
        return [p for p, data in shared.hand.items() if committed.get(p) != blob_sha(data)]

    if consistency.within(lambda: not pending(), timeout, 0.2) is None:
        for path in pending():
            data = shared.hand[path]
            target = shared.vault / path
            on_disk = target.read_bytes() if target.is_file() else None
            last = consistency.git(shared.vault, "log", "-1", "--format=%h %s", "--", path)
            shared.problem(
                f"person's edit lost: {path}: "
                + ("on disk, " if on_disk == data else f"disk holds {on_disk!r:.80}, ")
                + f"not committed (last commit of it: {last or 'none'})"
            )


def _final_checks(vault: Path, shared: Shared, before: str) -> list[str]:
    problems = []
    try:
        recovered = consistency.recover(vault)
    except VaultError as problem:  # git left busy: nothing more can be checked
        return [f"final checks: the vault could not be opened: {problem}"]
    try:
        problems += consistency.check_acks(recovered, shared.acks)
        problems += consistency.duplicate_ids(recovered)
        problems += consistency.check_files(recovered)
    finally:
        recovered.close()
    problems += consistency.check_commits(vault, before)
    problems += consistency.check_conflict_markers(vault)
    problems += consistency.check_secrets(vault)
    problems += _acks_off_main(vault, shared)
    problems += consistency.check_leftovers(vault)
    fsck, status = consistency.check_git(vault)
    problems += fsck + status
    problems += consistency.check_verify(vault)
    return problems


def _acks_off_main(vault: Path, shared: Shared) -> list[str]:
    """Acknowledged commits that main does not hold (made on a detached HEAD, say)."""
    on_main = set(consistency.git(vault, "rev-list", "HEAD").split())
    return [
        f"{ack.memory_id}: acknowledged at {ack.version[:10]}, a commit not on main "
        f"(acknowledged during {', '.join(shared.acked_during.get(ack.version, [])) or 'no git'})"
        for ack in shared.acks.values()
        if ack.version not in on_main
    ]


def main() -> None:
    """The long run, from the command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--vault", type=Path, help="where to make the vault [a temp folder]")
    parser.add_argument("--json", type=Path, help="write the report here as JSON")
    parser.add_argument("--gap", type=float, default=3.0, help="seconds between git actions")
    args = parser.parse_args()
    from vault_tool.storage.store import Store

    vault = args.vault or Path(tempfile.mkdtemp(prefix="torture-vault-")) / "vault"
    Store.init(vault).close()
    result = run(
        vault,
        args.seconds,
        args.seed,
        log=lambda text: print(text, flush=True),
        gap=(args.gap / 2, args.gap * 1.5),
    )
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    sys.exit(1 if result["problems"] else 0)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
