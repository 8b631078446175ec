"""Crash harness: kill writers with SIGKILL at random moments, reopen, check nothing was lost.

    python bench/crash_harness.py [--cycles 300] [--seed 1] [--vault DIR] [--json OUT]

Each cycle starts one process that changes the vault, lets it work for a random moment,
and kills it with SIGKILL: sometimes the process alone (its git children live on and
finish), sometimes its whole process group (git dies mid-commit too, leaving a torn
`.git/index.lock`, a staged index, or a renamed but uncommitted file for Repair). The
processes, in turn:

  writer   the engine in a loop: single creates, batches of 2-5, updates and deletes
  server   `vault-tool serve` driven over stdio by raw JSON-RPC: creates, updates, deletes
  cli      `vault-tool remember FILE`, one process per create or update
  watcher  `vault-tool watch` committing hand edits the harness makes meanwhile (edits
           in place and by rename, new notes, deletions, files broken on purpose)

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

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import consistency  # noqa: E402
from consistency import Ack  # noqa: E402

SCENARIOS = ("writer", "server", "cli", "watcher")
WEIGHTS = (4, 2, 1, 3)
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
)


@dataclass
class Report:
    """Counts over all cycles, and the first problems seen (for a person to read)."""

    counts: Counter = field(default_factory=Counter)
    scenarios: Counter = field(default_factory=Counter)
    kills: Counter = field(default_factory=Counter)
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
            "problems": self.problems[:50],
            "seconds": round(self.seconds, 1),
        }


def body(title: str, revision: int, tag: str) -> str:
    """Content whose revision counter the checks read back."""
    return f"# {title}\n\nRevision {revision} by {tag}.\n"


def delta(title: str) -> dict[str, Any]:
    """A valid semantic delta."""
    return {
        "memory_type": "decision",
        "title": title,
        "entities": [
            {"n": "Ana", "kind": "person", "is": "backend engineer"},
            {"n": "billing", "kind": "service", "is": "issues invoices"},
        ],
        "facts": [{"subject": "Ana", "predicate": "owns", "object": "billing"}],
    }


# --- the processes that get killed ---------------------------------------------------------


def child_writer(vault_path: str, tag: str, seed: int, live_file: str) -> None:
    """The engine in a loop; prints `ACK <json>` after every acknowledged write."""
    from vault_tool.engine.vault import Vault

    rng = random.Random(seed)
    live: list[str] = json.loads(Path(live_file).read_text())
    vault = Vault.open(vault_path, client=f"crash-{tag}")
    print("READY", flush=True)
    n = 0
    while True:
        n += 1
        roll = rng.random()
        if roll < 0.35 or len(live) < 3:
            title = f"{tag} memory {n}"
            result = vault.remember(
                {
                    "mode": "create",
                    "content_md": body(title, 1, tag),
                    "semantic_delta": delta(title),
                }
            )
            live.append(result["memory_id"])
            _ack("write", result["memory_id"], result["version_id"], 1)
        elif roll < 0.55:
            items = []
            for k in range(rng.randint(2, 5)):
                title = f"{tag} batch {n} item {k}"
                items.append({"content_md": body(title, 1, tag), "semantic_delta": delta(title)})
            done = vault.remember({"mode": "create", "items": items})
            for item in done["results"]:
                live.append(item["memory_id"])
                _ack("write", item["memory_id"], item["version_id"], 1)
        elif roll < 0.85:
            memory_id = rng.choice(live)
            current = vault.read(memory_id)
            found = consistency.REVISION_RE.search(current["content_md"])
            revision = (int(found.group(1)) if found else 0) + 1
            title = current["title"]
            result = vault.remember(
                {
                    "mode": "update",
                    "memory_id": memory_id,
                    "expected_version_id": current["version_id"],
                    "content_md": body(title, revision, tag),
                    "semantic_delta": delta(title),
                }
            )
            _ack("write", memory_id, result["version_id"], revision)
        else:
            memory_id = live.pop(rng.randrange(len(live)))
            current = vault.read(memory_id)
            result = vault.remember(
                {
                    "mode": "delete",
                    "memory_id": memory_id,
                    "expected_version_id": current["version_id"],
                }
            )
            _ack("delete", memory_id, result["version_id"], 0)


def _ack(kind: str, memory_id: str, version: str, revision: int) -> None:
    record = {"kind": kind, "id": memory_id, "version": version, "revision": revision}
    print("ACK " + json.dumps(record), flush=True)


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
    ) -> None:
        self.vault = vault
        self.rng = random.Random(seed)
        self.seed = seed
        self.max_run = max_run
        self.acks: dict[str, Ack] = {}
        # What the person last wrote to each hand-edited path (None: deleted by hand).
        self.hand: dict[str, bytes | None] = {}
        self.broken: set[str] = set()
        self.report = Report()
        self.log = log or (lambda text: None)
        self.progress = progress
        self.env = os.environ.copy()
        self.scratch = Path(tempfile.mkdtemp(prefix="crash-harness-"))
        self._hand_counter = 0

    def live_ids(self) -> list[str]:
        return [a.memory_id for a in self.acks.values() if not a.deleted]

    def run(self, cycles: int, plan: list[tuple[str, bool]] | None = None) -> Report:
        """Run cycles: random (scenario, kill the group?) pairs, or the ones planned."""
        started = time.monotonic()
        for n in range(cycles):
            if plan:
                scenario, group = plan[n % len(plan)]
            else:
                scenario = self.rng.choices(SCENARIOS, WEIGHTS)[0]
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
        before = consistency.git(self.vault, "rev-parse", "HEAD")
        tag = f"c{n}s{self.seed}"
        getattr(self, f"_run_{scenario}")(tag, group)
        self.report.scenarios[scenario] += 1
        self.report.kills["group" if group else "process"] += 1
        self.report.counts["cycles"] += 1
        self.check(n, scenario, before)

    # --- scenarios --------------------------------------------------------------------

    def _spawn(self, argv: list[str], **options: Any) -> subprocess.Popen:
        return subprocess.Popen(argv, env=self.env, start_new_session=True, text=True, **options)

    def _kill(self, process: subprocess.Popen, group: bool) -> None:
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
                __file__,
                "--child-writer",
                str(self.vault),
                tag,
                str(self.rng.randrange(10**9)),
                str(live),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
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
            target=_drive_server,
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
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError, ValueError):
                if json.loads(leader.read_text())["pid"] == process.pid:
                    break
            time.sleep(0.02)
        try:
            until = time.monotonic() + self.rng.uniform(0.1, 1.0 + self.max_run)
            while time.monotonic() < until:
                self._hand_edit(tag)
                time.sleep(self.rng.uniform(0.0, 0.4))
        finally:
            self._kill(process, group)

    def _hand_edit(self, tag: str) -> None:
        """One thing a person does in an editor: edit, create, rename, delete, break."""
        self._hand_counter += 1
        k = self._hand_counter
        roll = self.rng.random()
        live = [a for a in self.acks.values() if not a.deleted]
        notes = [
            p
            for p, data in self.hand.items()
            if p.startswith("notes/") and data is not None and p not in self.broken
        ]
        if roll < 0.3 and live:
            ack = self.rng.choice(live)
            path = _path_of(self.vault, ack.memory_id)
            if path is None:
                return
            data = (self.vault / path).read_bytes() + f"\nHand note {k}.\n".encode()
            self._write(path, data, atomic=self.rng.random() < 0.5)
        elif roll < 0.6 or not notes:
            path = f"notes/{tag}-hand-{k}.md"
            self._write(path, f"# Hand note {k}\n\nWritten by a person ({tag}).\n".encode())
        elif roll < 0.72:
            path = self.rng.choice(notes)
            data = self.hand[path] or b""
            self._write(path, data + f"\nMore words {k}.\n".encode(), atomic=False)
        elif roll < 0.82:
            old = self.rng.choice(notes)
            new = f"notes/moved/{tag}-moved-{k}.md"
            (self.vault / new).parent.mkdir(parents=True, exist_ok=True)
            os.replace(self.vault / old, self.vault / new)
            self.hand[new], self.hand[old] = self.hand[old], None
        elif roll < 0.92:
            path = self.rng.choice(notes)
            (self.vault / path).unlink()
            self.hand[path] = None
        else:
            path = f"notes/{tag}-broken-{k}.md"
            self.broken.add(path)
            self._write(path, b"---\ntitle: [unclosed\n---\n# Broken on purpose\n")
        self.report.counts["hand_edits"] += 1

    def _write(self, path: str, data: bytes, *, atomic: bool = True) -> None:
        target = self.vault / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if atomic:
            tmp = target.with_name(f".{target.name}.swp")
            tmp.write_bytes(data)
            os.replace(tmp, target)
        else:
            with open(target, "wb") as out:  # truncate, then write: a reader may see either
                out.write(data)
        self.hand[path] = data

    # --- after each kill --------------------------------------------------------------

    def check(self, n: int, scenario: str, before: str) -> None:
        counts = self.report.counts

        def note(counter: str, problems: list[str]) -> None:
            counts[counter] += len(problems)
            for problem in problems:
                self.report.problems.append(f"cycle {n} ({scenario}): {problem}")
                self.log(f"  cycle {n} ({scenario}): {counter}: {problem}")

        if not consistency.wait_for_git(self.vault):
            note("recovery_errors", ["a git process outlived its killed parent for 15 s"])
        try:
            vault = consistency.recover(self.vault)
        except Exception as problem:  # counted and shown: the harness goes on
            note("recovery_errors", [f"reopening failed: {type(problem).__name__}: {problem}"])
            return
        try:
            note("lost_writes", consistency.check_acks(vault, self.acks))
            note("half_written_files", consistency.check_files(vault, self.broken))
            reported = vault.problems()
            note(
                "verify_failures",
                [
                    f"{p} is broken but not reported by problems()"
                    for p in self.broken
                    if (self.vault / p).exists() and p not in reported
                ],
            )
        finally:
            vault.close()
        note("overwritten_hand_edits", self._check_hand_edits())
        note("broken_commits", consistency.check_commits(self.vault, before))
        # The broken files were reported; the person now deletes them.
        for path in self.broken:
            (self.vault / path).unlink(missing_ok=True)
            self.hand.pop(path, None)
        self.broken.clear()
        note("leftovers", consistency.check_leftovers(self.vault))
        fsck, status = consistency.check_git(self.vault)
        note("fsck_failures", fsck)
        note("status_dirty", status)
        note("verify_failures", consistency.check_verify(self.vault))

    def _check_hand_edits(self) -> list[str]:
        """The tool never overwrote or removed what the person wrote, and committed it."""
        from vault_tool.storage.git import blob_sha

        problems = []
        head = consistency.git(self.vault, "-c", "core.quotepath=off", "ls-tree", "-r", "HEAD")
        committed = {line.split("\t", 1)[1]: line.split()[2] for line in head.splitlines()}
        for path, expected in self.hand.items():
            target = self.vault / path
            actual = target.read_bytes() if target.is_file() else None
            # A memory file the writer updated since the hand edit is no longer the person's.
            if actual != expected and not self._rewritten_by_tool(path):
                problems.append(f"{path}: hand edit lost (disk differs from what was written)")
                continue
            if path in self.broken or actual != expected:
                continue
            if expected is None and path in committed:
                problems.append(f"{path}: deleted by hand but still committed")
            elif expected is not None and committed.get(path) != blob_sha(expected):
                problems.append(f"{path}: hand edit not committed")
        return problems

    def _rewritten_by_tool(self, path: str) -> bool:
        subject = consistency.git(self.vault, "log", "-1", "--format=%s", "--", path)
        return not subject.startswith("Hand edit") and not path.startswith("notes/")


def _front_matter(values: dict[str, Any]) -> str:
    import yaml

    return "---\n" + yaml.safe_dump(values, sort_keys=False, allow_unicode=True) + "---\n"


def _path_of(vault: Path, memory_id: str) -> str | None:
    found = consistency.git(vault, "grep", "-l", f"^id: {memory_id}$", "HEAD", check=False)
    lines = [line.split(":", 1)[1] for line in found.splitlines() if ":" in line]
    return lines[0] if lines and (vault / lines[0]).is_file() else None


def _read_lines(stream: Any, acks: list[dict[str, Any]], ready: threading.Event) -> None:
    for line in stream:
        if line == "READY\n":
            ready.set()
        elif line.startswith("ACK ") and line.endswith("\n"):
            acks.append(json.loads(line[4:]))
    ready.set()


def _drive_server(
    process: subprocess.Popen,
    tag: str,
    live: list[str],
    seed: int,
    acks: list[dict[str, Any]],
    stop: threading.Event,
) -> None:
    """Raw JSON-RPC over the server's stdio: one call at a time, acks on each answer."""
    rng = random.Random(seed)
    live = list(live)
    request_id = 0

    def call(method: str, params: dict[str, Any] | None = None) -> dict[str, Any] | None:
        nonlocal request_id
        request_id += 1
        message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            process.stdin.write(json.dumps(message) + "\n")  # type: ignore[union-attr]
            process.stdin.flush()  # type: ignore[union-attr]
            while True:
                line = process.stdout.readline()  # type: ignore[union-attr]
                if not line.endswith("\n"):
                    return None
                answer = json.loads(line)
                if answer.get("id") == request_id:
                    return answer
        except (OSError, ValueError):
            return None

    def tool(name: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        answer = call("tools/call", {"name": name, "arguments": arguments})
        if answer is None or "result" not in answer or answer["result"].get("isError"):
            return None
        return answer["result"]["structuredContent"]

    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": f"crash-{tag}", "version": "1"},
    }
    if call("initialize", init) is None:
        return
    with contextlib.suppress(OSError, ValueError):
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        process.stdin.write(json.dumps(note) + "\n")  # type: ignore[union-attr]
        process.stdin.flush()  # type: ignore[union-attr]
    n = 0
    while not stop.is_set():
        n += 1
        roll = rng.random()
        if roll < 0.5 or len(live) < 2:
            title = f"{tag} served {n}"
            result = tool(
                "remember",
                {
                    "mode": "create",
                    "content_md": body(title, 1, tag),
                    "semantic_delta": delta(title),
                },
            )
            if result:
                live.append(result["memory_id"])
                acks.append(
                    {
                        "kind": "write",
                        "id": result["memory_id"],
                        "version": result["version_id"],
                        "revision": 1,
                    }
                )
            continue
        memory_id = rng.choice(live)
        current = tool("search", {"memory_id": memory_id})
        if current is None:
            continue
        if roll < 0.85:
            found = consistency.REVISION_RE.search(current["content_md"])
            revision = (int(found.group(1)) if found else 0) + 1
            result = tool(
                "remember",
                {
                    "mode": "update",
                    "memory_id": memory_id,
                    "expected_version_id": current["version_id"],
                    "content_md": body(current["title"], revision, tag),
                    "semantic_delta": delta(current["title"]),
                },
            )
            if result:
                acks.append(
                    {
                        "kind": "write",
                        "id": memory_id,
                        "version": result["version_id"],
                        "revision": revision,
                    }
                )
        else:
            result = tool(
                "remember",
                {
                    "mode": "delete",
                    "memory_id": memory_id,
                    "expected_version_id": current["version_id"],
                },
            )
            if result:
                live.remove(memory_id)
                acks.append(
                    {
                        "kind": "delete",
                        "id": memory_id,
                        "version": result["version_id"],
                        "revision": 0,
                    }
                )


def run(vault: Path, cycles: int, seed: int = 1, **options: Any) -> Report:
    """Run cycles on an existing vault; the counts. plan=[(scenario, group), ...] fixes them."""
    plan = options.pop("plan", None)
    return Harness(vault, seed, **options).run(cycles, plan)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child-writer":
        child_writer(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--vault", type=Path, help="where to make the vault [a temp folder]")
    parser.add_argument("--json", type=Path, help="write the report here as JSON")
    args = parser.parse_args()
    from vault_tool.storage.store import Store

    vault = args.vault or Path(tempfile.mkdtemp(prefix="crash-vault-")) / "vault"
    Store.init(vault).close()
    harness = Harness(vault, args.seed, log=lambda text: print(text, flush=True), progress=True)
    harness.run(args.cycles)
    result = harness.report.to_dict()
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    sys.exit(1 if harness.report.failures else 0)


if __name__ == "__main__":
    main()
