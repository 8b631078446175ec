"""Speed of `vault-tool review` over a long session, beside the floor git sets.

    python -m bench.review [--count 10000] [--commits 1000] [--runs 7]

Writes a generated vault of COUNT memories, then COMMITS commits by an agent, each adding a
fact to one memory and a sentence to its body (a memory may be written several times), and
times Vault.review over that range (the index open, as a command finds it) beside
`git log --raw` over the same range, the walk the review cannot do without. Prints the
median and p95 of each; writes bench/results/review-N.json (or --json).
"""

from __future__ import annotations

import argparse
import random
import subprocess
import tempfile
import time
from pathlib import Path

from bench.generate import placed, write_vault
from bench.measure import machine, summary, table, write_results
from vault_tool.core.memory import Fact, parse, render
from vault_tool.engine.vault import Vault

QUICK = ["-c", "core.fsync=none", "-c", "user.name=bench agent", "-c", "user.email=a@localhost"]


def session(path: Path, paths: list[str], commits: int, seed: int) -> None:
    """commits commits of one agent, each a new fact and sentence in one memory."""
    rng = random.Random(seed)
    for n in range(commits):
        rel = rng.choice(paths)
        memory = parse((path / rel).read_text(encoding="utf-8"), rel)
        fact = Fact(memory.title[:40] or "x", "noted_in", f"session step {n}")
        changed = memory.with_changes(
            facts=(*memory.facts, fact), body=memory.body + f"\nStep {n} of the session.\n"
        )
        (path / rel).write_text(render(changed), encoding="utf-8")
        message = f"Update {memory.memory_type}: {memory.title}\n\nMemory-Id: {memory.id}\n"
        subprocess.run(["git", *QUICK, "add", "--", rel], cwd=path, check=True)
        subprocess.run(
            ["git", *QUICK, "commit", "-q", "-m", message + "Client: bench-agent"],
            cwd=path,
            check=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "vault"
        made = write_vault(path, args.count, args.seed)
        paths = [rel for rel, _ in placed(made)]
        with Vault.open(path, client="bench"):
            pass  # the index built once, as a vault in use has it
        base = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=path, check=True, capture_output=True, text=True
        ).stdout.strip()
        session(path, paths, args.commits, args.seed)
        span = f"{base}..HEAD"
        floor, took = [], []
        with Vault.open(path, client="bench") as vault:
            for _ in range(args.runs):
                started = time.perf_counter()
                subprocess.run(
                    ["git", "log", "-z", "--raw", "--no-abbrev", "-M90%", span],
                    cwd=path, check=True, capture_output=True,
                )  # fmt: skip
                floor.append(time.perf_counter() - started)
                started = time.perf_counter()
                found = vault.review(span)
                took.append(time.perf_counter() - started)
        results = {
            "count": args.count,
            "commits": args.commits,
            "memories_reviewed": len(found["memories"]),
            "facts_changed": found["facts_changed"],
            "review": summary(took),
            "git_log_floor": summary(floor),
            "target_ms": 2000,
            "machine": machine(),
        }
    rows = [
        [name, results[key]["p50_ms"], results[key]["p95_ms"]]
        for name, key in (("review", "review"), ("git log --raw (floor)", "git_log_floor"))
    ]
    print(f"{args.commits} commits at {args.count} memories, {len(found['memories'])} reviewed")
    print(table(rows, ["", "median ms", "p95 ms"]))
    print(f"wrote {write_results(f'review-{args.count}', results, args.json)}")


if __name__ == "__main__":
    main()
