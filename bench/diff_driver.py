"""What the diff driver adds to `git log -p`: a vault's history with and without it.

    python -m bench.diff_driver [--memories 40] [--runs 7] [--json OUT]

A vault made by init gets `--memories` creates and as many updates (a fact re-dated, the
body changed), so its log shows one file side per create and two per update, the driver's
usual work. `git log -p` runs `--runs` times with the driver and with `--no-textconv`;
each run's wall time is a sample. The cost per file side is (median with - median
without) / the sides the driver converted; the target is 50 ms a file of `git log -p`
(two sides for an update). One driver process alone (`python -m vault_tool textconv`) and
a bare `python -c pass` are timed too, the floor any Python driver starts from.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.measure import print_figures, summary, write_results
from vault_tool.engine.vault import Vault


def build(root: Path, memories: int) -> int:
    """A vault with memories creates and updates; the file sides `git log -p` converts."""
    Vault.create(root)
    with Vault.open(root, client="bench") as vault:
        for n in range(memories):
            facts = [{"subject": f"Ana{n}", "predicate": "owns", "object": f"service {n}"}]
            entities = [
                {"n": f"Ana{n}", "kind": "person", "is": f"engineer number {n}"},
                {"n": f"service {n}", "kind": "service", "is": f"the service numbered {n}"},
            ]
            delta = {"memory_type": "decision", "title": f"Ana{n} owns service {n}"}
            delta |= {"entities": entities, "facts": facts, "tags": ["bench"]}
            made = vault.remember(
                {
                    "mode": "create",
                    "content_md": f"# Ana{n}\n\nText {n}.\n",
                    "semantic_delta": delta,
                }
            )
            facts[0]["valid_from"] = "2026-03-01"
            vault.remember(
                {
                    "mode": "update",
                    "memory_id": made["memory_id"],
                    "expected_version_id": made["version_id"],
                    "content_md": f"# Ana{n}\n\nText {n}, later.\n",
                    "semantic_delta": {**delta, "facts": facts},
                }
            )
    return memories * 3


def timed(command: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def measure(memories: int, runs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-diff-") as folder:
        root = Path(folder) / "vault"
        sides = build(root, memories)
        memory = next(p for p in root.rglob("*.md") if ".vault" not in p.parts)
        samples: dict[str, list[float]] = {"log_p_driver": [], "log_p_plain": []}
        samples |= {"one_driver_process": [], "python_pass": []}
        for _ in range(runs):  # interleaved, so a change of the machine's load hits both
            samples["log_p_plain"].append(timed(["git", "log", "-p", "--no-textconv"], root))
            samples["log_p_driver"].append(timed(["git", "log", "-p"], root))
            driver = [sys.executable, "-m", "vault_tool", "textconv", "--", str(memory)]
            samples["one_driver_process"].append(timed(driver, root))
            samples["python_pass"].append(timed([sys.executable, "-c", "pass"], root))
    results: dict[str, Any] = {name: summary(values) for name, values in samples.items()}
    added = statistics.median(samples["log_p_driver"]) - statistics.median(samples["log_p_plain"])
    results["file_sides"] = sides
    results["added_ms_per_side"] = round(added * 1000 / sides, 2)
    results["added_ms_per_updated_file"] = round(added * 2000 / sides, 2)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=40)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results = measure(args.memories, args.runs)
    results["memories"] = args.memories
    print_figures(results, "diff driver")
    print(f"results: {write_results('diff-driver', results, args.json)}")


if __name__ == "__main__":
    main()
