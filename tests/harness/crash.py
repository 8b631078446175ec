"""Crash harness: kill writers with SIGKILL at random moments, reopen, check nothing was lost.

    python -m tests.harness.crash [--cycles 300] [--seed 1] [--vault DIR] [--json OUT]
                                  [--scenarios writer,server,cli,watcher,faults,sync]

Each cycle starts one process that changes the vault, lets it work for a random moment,
and kills it with SIGKILL: sometimes the process alone (its git children live on and
finish), sometimes its whole process group (git dies mid-commit too, leaving a torn
`.git/index.lock`, a staged index, or a renamed but uncommitted file for Repair). The
processes, in turn:

  writer   the engine in a loop: single creates, batches of 2-5, updates and deletes
  server   `vault-tool serve` driven over stdio by raw JSON-RPC: creates, updates, deletes
  cli      `vault-tool remember FILE`, one process per create or update
  watcher  `vault-tool watch` committing hand edits a person makes meanwhile (edits
           in place and by rename, new notes, deletions, files broken on purpose)
  faults   the writer again, run through tests/faults.py with one fault at a random step
           of its writes: it ends itself there (os._exit, before or after the step), or
           the step fails (ENOSPC, EIO, EFBIG, a short write then ENOSPC) and the write
           must report it and leave nothing behind; a benign short write must be finished
  sync     `vault-tool sync` with a merge to make (a peer clone pushed memories and a fact
           to a memory both share, the vault wrote too), killed at a random moment, or by
           git inside its merge: half-way through writing the folder, or before the merge
           is committed (tests/sync_kills.py); after recovery a sync must bring every
           write of the peer's and lose no fact of either side's

(writers.py holds the writer and the server's driver, person.py the person, team_sync.py
the remote and the peer.)

After each kill the harness does what the next process would (open, repair, take in
offline changes) and counts: acknowledged writes, lost writes (missing, or older than
acknowledged), half-written files (a memory file that does not parse), broken commits (a
commit holding a file that does not parse), leftover temp files / journals / index.lock,
`git fsck --strict` failures, a dirty `git status`, and `vault-tool verify` issues.

The short CI version is tests/reliability/test_crash_short.py, which calls run().
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

from tests import sync_kills
from tests.harness import consistency
from tests.harness.consistency import Ack
from tests.harness.person import Person
from tests.harness.team_sync import Team
from tests.harness.writers import body, delta, drive_server

# The writer runs as `python -m tests.harness.writers` from here.
ROOT = Path(__file__).resolve().parents[2]

SCENARIOS = ("writer", "server", "cli", "watcher", "faults", "sync")
WEIGHTS = (4, 2, 1, 3, 3, 2)
# Where the sync scenario's sync is killed: git's merge writing the folder, the merge
# before its commit (both by git itself), or a random moment.
SYNC_KILLS = (*sync_kills.POINTS, "moment")
# The faults scenario's choices: (call, action); the step is drawn from 1..FAULT_STEPS.
FAULTS = (
    ("any", "crash"),
    ("any", "crash-after"),
    ("any", "enospc"),
    ("any", "eio"),
    ("write", "efbig"),
    ("write", "short-enospc"),
    ("write", "short"),
)
FAULT_STEPS = 60
COUNTERS = (
    "cycles",
    "acknowledged_writes",
    "hand_edits",
    "lost_writes",
    "half_written_files",
    "broken_commits",
    "leftovers",
    "fsck_failures",
    "status_dirty",
    "verify_failures",
    "overwritten_hand_edits",
    "recovery_errors",
    "lost_facts",
    "misattributed_commits",
)


@dataclass
class Report:
    """Counts over all cycles, and the first problems seen (for a person to read)."""

    counts: Counter = field(default_factory=Counter)
    scenarios: Counter = field(default_factory=Counter)
    kills: Counter = field(default_factory=Counter)
    faults: Counter = field(default_factory=Counter)  # action -> cycles where it fired
    sync_kills: Counter = field(default_factory=Counter)  # where a sync was killed
    # Fault cycles whose writer ended before its fault's step, and how it ended.
    unfired: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def failures(self) -> int:
        return sum(self.counts[k] for k in COUNTERS[4:]) + self.counts["lost_writes"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "counts": {k: self.counts[k] for k in COUNTERS},
            "scenarios": dict(self.scenarios),
            "kills": dict(self.kills),
            "faults": dict(self.faults),
            "sync_kills": dict(self.sync_kills),
            "unfired": self.unfired,
            "problems": self.problems[:50],
            "seconds": round(self.seconds, 1),
        }


# --- the harness ---------------------------------------------------------------------------


class Harness:
    """One vault, the acknowledged state of its memories, and the cycles run on it."""

    def __init__(
        self,
        vault: Path,
        seed: int,
        *,
        max_run: float = 1.2,
        log: Any = None,
        progress: bool = False,
        scenarios: tuple[str, ...] = SCENARIOS,
    ) -> None:
        self.vault = vault
        self.rng = random.Random(seed)
        self.seed = seed
        self.max_run = max_run
        self.acks: dict[str, Ack] = {}
        self.orphans: list[int] = []  # the last killed process's descendants
        self.person = Person(vault, self.rng)
        self.report = Report()
        self.log = log or (lambda text: None)
        self.progress = progress
        self.weights = {s: w for s, w in zip(SCENARIOS, WEIGHTS, strict=True) if s in scenarios}
        self.env = os.environ.copy()
        self.scratch = Path(tempfile.mkdtemp(prefix="crash-harness-"))
        self.team = Team(vault, self.scratch, self.rng)

    def live_ids(self) -> list[str]:
        """The memories the writers may update and delete (not those the team shares:
        their facts are counted)."""
        return [
            a.memory_id
            for a in self.acks.values()
            if not a.deleted and a.memory_id not in self.team.shared
        ]

    def run(self, cycles: int, plan: list[tuple[str, bool]] | None = None) -> Report:
        """Run cycles: random (scenario, kill the group?) pairs, or the ones planned."""
        started = time.monotonic()
        for n in range(cycles):
            if plan:
                scenario, group = plan[n % len(plan)]
            else:
                scenario = self.rng.choices(list(self.weights), list(self.weights.values()))[0]
                group = self.rng.random() < 0.5
            self.cycle(n, scenario, group)
            if self.progress and (n + 1) % 10 == 0:
                counts = self.report.counts
                self.log(
                    f"{n + 1} cycles, {counts['acknowledged_writes']} acknowledged writes, "
                    f"{self.report.failures} failures, {time.monotonic() - started:.0f} s"
                )
        self.report.seconds = time.monotonic() - started
        return self.report

    def cycle(self, n: int, scenario: str, group: bool) -> None:
        """One cycle; a planned scenario may name where it is killed ("sync@commit")."""
        before = consistency.git(self.vault, "rev-parse", "HEAD")
        tag = f"c{n}s{self.seed}"
        scenario, _, where = scenario.partition("@")
        getattr(self, f"_run_{scenario}")(tag, group, *([where] if where else []))
        self.report.scenarios[scenario] += 1
        self.report.kills["group" if group else "process"] += 1
        self.report.counts["cycles"] += 1
        self.check(n, scenario, before)

    # --- scenarios --------------------------------------------------------------------

    def _spawn(self, argv: list[str], **options: Any) -> subprocess.Popen:
        return subprocess.Popen(argv, env=self.env, start_new_session=True, text=True, **options)

    def _kill(self, process: subprocess.Popen, group: bool) -> None:
        self.orphans = consistency.descendants(process.pid)  # check() waits for them
        with contextlib.suppress(ProcessLookupError):
            if group:
                os.killpg(process.pid, signal.SIGKILL)
            else:
                os.kill(process.pid, signal.SIGKILL)
        process.wait()

    def _record(self, kind: str, memory_id: str, version: str, revision: int) -> None:
        self.acks[memory_id] = Ack(memory_id, version, revision, deleted=kind == "delete")
        self.report.counts["acknowledged_writes"] += 1

    def _run_writer(self, tag: str, group: bool) -> None:
        live = self.scratch / f"{tag}.json"
        live.write_text(json.dumps(self.live_ids()))
        process = self._spawn(
            [
                sys.executable,
                "-m",
                "tests.harness.writers",
                str(self.vault.resolve()),
                tag,
                str(self.rng.randrange(10**9)),
                str(live),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=ROOT,
        )
        ready = threading.Event()
        acks: list[dict[str, Any]] = []
        reader = threading.Thread(target=_read_lines, args=(process.stdout, acks, ready))
        reader.start()
        ready.wait(30)
        time.sleep(self.rng.uniform(0.02, self.max_run))
        self._kill(process, group)
        reader.join(10)
        for ack in acks:
            self._record(ack["kind"], ack["id"], ack["version"], ack["revision"])

    def _run_faults(self, tag: str, group: bool) -> None:
        """The writer with one injected fault: it ends there, or its write fails there."""
        from tests.faults import CRASH_EXIT, ENV

        call, action = self.rng.choice(FAULTS)
        step = self.rng.randint(1, FAULT_STEPS)
        live = self.scratch / f"{tag}.json"
        live.write_text(json.dumps(self.live_ids()))
        argv = [sys.executable, "-m", "tests.faults", "tests.harness.writers"]
        argv += [str(self.vault.resolve()), tag, str(self.rng.randrange(10**9)), str(live)]
        errors = self.scratch / f"{tag}.stderr"
        with errors.open("w") as stderr:
            process = subprocess.Popen(
                argv,
                env={**self.env, ENV: f"{call}:{step}:{action}"},
                start_new_session=True,
                text=True,
                stdout=subprocess.PIPE,
                stderr=stderr,
                cwd=ROOT,
            )
        ready = threading.Event()
        acks: list[dict[str, Any]] = []
        reader = threading.Thread(target=_read_lines, args=(process.stdout, acks, ready))
        reader.start()
        # Once the fault fires (the child says so), the writer ends, fails its write, or
        # (a benign short write, a failure after the commit) writes on for a moment.
        fired = consistency.within(lambda: process.poll() is not None or _fired(errors), 60)
        try:
            process.wait(timeout=self.rng.uniform(0.1, 0.5 + self.max_run) if fired else 0)
        except subprocess.TimeoutExpired:
            self._kill(process, group)
        reader.join(10)
        if _fired(errors):
            self.report.faults[f"{call}:{action}"] += 1
        else:
            last = (errors.read_text().strip().splitlines() or [""])[-1]
            ended = f"exit {process.returncode}, {len(acks)} writes acknowledged: {last[:300]!r}"
            self.report.unfired.append(f"{tag}: {call}:{step}:{action} not reached ({ended})")
        for ack in acks:
            self._record(ack["kind"], ack["id"], ack["version"], ack["revision"])
        if process.returncode not in (0, CRASH_EXIT, -signal.SIGKILL):
            # A failed write must surface as the vault's own error, in plain words.
            last = (errors.read_text().strip().splitlines() or [""])[-1]
            if not last.startswith("vault_tool.errors."):
                problem = f"{call}:{step}:{action} ended the writer with {last[:300]!r}"
                self.report.problems.append(f"{tag}: {problem}")
                self.report.counts["recovery_errors"] += 1

    def _run_sync(self, tag: str, group: bool, point: str | None = None) -> None:
        """A sync with a merge to make, killed at a random moment or by git in its merge."""
        for kind, memory_id, version, revision in self.team.write_both(tag):
            self._record(kind, memory_id, version, revision)
        point = point or self.rng.choice(SYNC_KILLS)
        argv = [sys.executable, "-m", "vault_tool", "sync", "--vault", str(self.vault)]
        if point == "moment":
            process = self._spawn(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(self.rng.uniform(0.05, 0.5 + self.max_run))
            self._kill(process, group)
            self.report.sync_kills["moment" if process.returncode < 0 else "finished"] += 1
            return
        sync_kills.arm(self.vault, point, self.scratch / "kills")
        try:
            process = self._spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            said, _ = process.communicate(timeout=120)
        finally:
            sync_kills.disarm(self.vault)
        if process.returncode == -signal.SIGKILL:
            self.report.sync_kills[point] += 1
        else:
            ended = f"exit {process.returncode}: {said.strip()[-300:]!r}"
            self.report.unfired.append(f"{tag}: sync kill at {point} not reached ({ended})")

    def _run_server(self, tag: str, group: bool) -> None:
        process = self._spawn(
            [sys.executable, "-m", "vault_tool", "serve", "--vault", str(self.vault)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        stop = threading.Event()
        acks: list[dict[str, Any]] = []
        driver = threading.Thread(
            target=drive_server,
            args=(process, tag, self.live_ids(), self.rng.randrange(10**9), acks, stop),
        )
        driver.start()
        # The server answers initialize at once; let it work for a random moment.
        time.sleep(self.rng.uniform(0.3, 0.5 + 2 * self.max_run))
        stop.set()
        self._kill(process, group)
        driver.join(10)
        for ack in acks:
            self._record(ack["kind"], ack["id"], ack["version"], ack["revision"])

    def _run_cli(self, tag: str, group: bool) -> None:
        deadline = time.monotonic() + self.rng.uniform(0.5, 1.5 + 2 * self.max_run)
        n = 0
        while True:
            n += 1
            live = self.live_ids()
            update = live and self.rng.random() < 0.4
            source = self.scratch / f"{tag}-{n}.md"
            if update:
                memory_id = self.rng.choice(live)
                revision = self.acks[memory_id].revision + 1
                title = f"CLI update {tag} {n}"
                front = {"id": memory_id, **delta(title)}
            else:
                memory_id, revision, title = "", 1, f"CLI {tag} memory {n}"
                front = delta(title)
            source.write_text(_front_matter(front) + body(title, revision, tag))
            process = self._spawn(
                [
                    sys.executable,
                    "-m",
                    "vault_tool",
                    "remember",
                    str(source),
                    "--json",
                    "--vault",
                    str(self.vault),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            left = deadline - time.monotonic()
            try:
                out, _ = process.communicate(timeout=max(left, 0.01))
            except subprocess.TimeoutExpired:
                self._kill(process, group)
                process.communicate()
                return
            if process.returncode == 0:
                result = json.loads(out)
                self._record("write", result["memory_id"], result["version_id"], revision)

    def _run_watcher(self, tag: str, group: bool) -> None:
        process = self._spawn(
            [sys.executable, "-m", "vault_tool", "watch", "--vault", str(self.vault)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        leader = self.vault / ".vault" / "run" / "leader.json"

        def leads() -> bool:
            with contextlib.suppress(OSError, ValueError):
                return json.loads(leader.read_text())["pid"] == process.pid
            return False

        # A watcher that never leads is killed all the same; the checks then judge the vault.
        consistency.within(leads, timeout=20)
        try:
            until = time.monotonic() + self.rng.uniform(0.1, 1.0 + self.max_run)
            while time.monotonic() < until:
                if self.person.edit(tag, [a for a in self.acks.values() if not a.deleted]):
                    self.report.counts["hand_edits"] += 1
                time.sleep(self.rng.uniform(0.0, 0.4))
        finally:
            self._kill(process, group)

    # --- after each kill --------------------------------------------------------------

    def check(self, n: int, scenario: str, before: str) -> None:
        counts = self.report.counts

        def note(counter: str, problems: list[str]) -> None:
            counts[counter] += len(problems)
            for problem in problems:
                self.report.problems.append(f"cycle {n} ({scenario}): {problem}")
                self.log(f"  cycle {n} ({scenario}): {counter}: {problem}")

        if not consistency.wait_for_git(self.vault, orphans=self.orphans):
            note("recovery_errors", ["a child of the killed process outlived it for 15 s"])
        try:
            vault = consistency.recover(self.vault)
        except Exception as problem:  # counted and shown: the harness goes on
            note("recovery_errors", [f"reopening failed: {type(problem).__name__}: {problem}"])
            return
        try:
            if scenario == "sync":
                for counter, problems in self.team.settle(vault, before).items():
                    note(counter, problems)
                for ack in self.team.arrived():  # the peer's writes, checked from now on
                    self.acks[ack.memory_id] = ack
                    counts["acknowledged_writes"] += 1
            note("lost_writes", consistency.check_acks(vault, self.acks))
            note("half_written_files", consistency.check_files(vault, self.person.broken))
            reported = vault.problems()
            note(
                "verify_failures",
                [
                    f"{p} is broken but not reported by problems()"
                    for p in self.person.broken
                    if (self.vault / p).exists() and p not in reported
                ],
            )
        finally:
            vault.close()
        note("overwritten_hand_edits", self.person.lost_edits())
        note("broken_commits", consistency.check_commits(self.vault, before))
        self.person.remove_broken()
        note("leftovers", consistency.check_leftovers(self.vault))
        fsck, status = consistency.check_git(self.vault)
        note("fsck_failures", fsck)
        note("status_dirty", status)
        note("verify_failures", consistency.check_verify(self.vault))


def _front_matter(values: dict[str, Any]) -> str:
    import yaml

    return "---\n" + yaml.safe_dump(values, sort_keys=False, allow_unicode=True) + "---\n"


def _fired(errors: Path) -> bool:
    from tests.faults import FIRED

    return errors.exists() and f"{FIRED} " in errors.read_text(errors="replace")


def _read_lines(stream: Any, acks: list[dict[str, Any]], ready: threading.Event) -> None:
    for line in stream:
        if line == "READY\n":
            ready.set()
        elif line.startswith("ACK ") and line.endswith("\n"):
            acks.append(json.loads(line[4:]))
    ready.set()


def run(vault: Path, cycles: int, seed: int = 1, **options: Any) -> Report:
    """Run cycles on an existing vault; the counts. plan=[(scenario, group), ...] fixes them."""
    plan = options.pop("plan", None)
    return Harness(vault, seed, **options).run(cycles, plan)


def main() -> None:
    """The long run, from the command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--vault", type=Path, help="where to make the vault [a temp folder]")
    parser.add_argument("--json", type=Path, help="write the report here as JSON")
    parser.add_argument(
        "--scenarios", default=",".join(SCENARIOS), help="which processes to kill (comma-separated)"
    )
    args = parser.parse_args()
    from vault_tool.storage.store import Store

    vault = args.vault or Path(tempfile.mkdtemp(prefix="crash-vault-")) / "vault"
    Store.init(vault).close()
    chosen = tuple(args.scenarios.split(","))
    if unknown := set(chosen) - set(SCENARIOS):
        parser.error(f"unknown scenarios {sorted(unknown)}: choose from {', '.join(SCENARIOS)}")
    log = lambda text: print(text, flush=True)  # noqa: E731
    harness = Harness(vault, args.seed, log=log, progress=True, scenarios=chosen)
    harness.run(args.cycles)
    result = harness.report.to_dict()
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    sys.exit(1 if harness.report.failures else 0)


if __name__ == "__main__":
    main()
