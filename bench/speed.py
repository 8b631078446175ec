"""In-process speed benchmark on a generated vault: reindex, search, remember, hand edits.

    python bench/speed.py --count 10000 [--queries 300] [--edits 30] [--json out.json]

Prints medians and p95; writes the figures as JSON to bench/results/ (or --json).
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from generate import write_vault

from vault_tool.engine import Vault
from vault_tool.watcher import Watcher

SHORT = [
    "billing",
    "api gateway",
    "Kafka outage",
    "rotate credentials",
    "eu-west-1",
    "Redis",
    "checkout service",
    "Ana",
    "backend engineer",
    "Terraform checks",
]
SENTENCES = [
    "who owns the billing service and where does it run",
    "what happens to the notification service when Kafka restarts",
    "how do we rotate Postgres credentials for the auth service",
    "which region does the search service run in",
    "what does the product designer on the checkout team prefer",
]


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def summary(values: list[float]) -> dict[str, float]:
    """Median and p95 in milliseconds."""
    return {
        "p50_ms": round(statistics.median(values) * 1000, 2),
        "p95_ms": round(percentile(values, 95) * 1000, 2),
        "n": len(values),
    }


def bench(count: int, queries: int, edits: int, workdir: Path) -> dict:
    path = workdir / f"vault-{count}"
    started = time.perf_counter()
    write_vault(path, count, seed=7)
    results: dict = {"count": count, "generate_s": round(time.perf_counter() - started, 2)}

    vault = Vault.open(path, client="bench", catch_up=False)
    started = time.perf_counter()
    report = vault.reindex()
    results["reindex_s"] = round(time.perf_counter() - started, 2)
    results["indexed"] = len(report.indexed)
    results["index_mb"] = round(
        sum(f.stat().st_size for f in (path / ".vault/index").iterdir()) / 1e6, 1
    )

    rng = random.Random(1)
    for name, pool in (("search_short", SHORT), ("search_sentence", SENTENCES)):
        vault.search({"query": pool[0]})  # warm the searcher
        times = []
        for _ in range(queries):
            query = rng.choice(pool)
            t = time.perf_counter()
            vault.search({"query": query, "top_k": 5})
            times.append(time.perf_counter() - t)
        results[name] = summary(times)

    times = []
    for n in range(50):
        args = {
            "mode": "create",
            "content_md": f"# Bench memory {n}\n\nCreated by the benchmark.\n",
            "semantic_delta": {
                "memory_type": "note",
                "title": f"Bench memory {n}",
                "entities": [{"n": "bench", "kind": "tool", "is": "the benchmark"}],
                "facts": [{"subject": "bench", "predicate": "made", "object": "bench"}],
            },
        }
        t = time.perf_counter()
        vault.remember(args)
        times.append(time.perf_counter() - t)
    results["remember_create"] = summary(times)

    watcher = Watcher(vault).start()
    watcher.ready.wait(120)
    files = sorted(p for p in (path / "note").rglob("*.md"))[:edits]
    searchable, committed = [], []
    for n, file in enumerate(files):
        word = f"zqxedit{n}"
        t = time.perf_counter()
        file.write_text(file.read_text().replace("Loose ideas", f"Loose ideas {word}", 1))
        while not vault.search({"query": word})["selected_hits"]:
            time.sleep(0.005)
        searchable.append(time.perf_counter() - t)
        while vault.store.uncommitted_paths():
            time.sleep(0.005)
        committed.append(time.perf_counter() - t)
    watcher.stop()
    results["hand_edit_searchable"] = summary(searchable)
    results["hand_edit_committed"] = summary(committed)
    vault.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--edits", type=int, default=30)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="vault-bench-"))
    try:
        results = bench(args.count, args.queries, args.edits, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    results["machine"] = {
        "python": platform.python_version(),
        "cpus": __import__("os").cpu_count(),
        "platform": platform.platform(),
    }
    for key, value in results.items():
        print(f"{key:24} {value}")
    out = args.json or Path(__file__).parent / "results" / f"speed-{args.count}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
