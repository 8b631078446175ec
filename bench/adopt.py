"""A person's notes folder made a vault in place, and reindexed: the vaults people have.

    python -m bench.adopt --count N [--runs 3] [--json OUT]

For each run a fresh copy of a bench.notes folder (with its own git history, and without
one) is made a vault by `vault-tool init`'s path (Vault.create, then the first catch-up);
then `reindex` runs on it (wall time, and CPU time of this process and of the indexing
processes it starts). The floor, measured in the same run, is reading every note's
bytes once (what no reindex can skip). Also checked: every note indexed, none a problem.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.measure import print_figures, summary, write_results
from bench.notes import write_notes
from vault_tool.engine.vault import Vault


def read_every_note(root: Path) -> float:
    """Seconds to read every note's bytes once (hidden folders, git's and the tool's, left
    out: git's own housekeeping may remove a folder of loose objects meanwhile)."""
    started = time.perf_counter()
    for folder, folders, files in os.walk(root):
        folders[:] = [name for name in folders if not name.startswith(".")]
        for name in files:
            if name.endswith(".md"):
                Path(folder, name).read_bytes()
    return time.perf_counter() - started


def cpu_seconds() -> tuple[float, float]:
    """CPU seconds (user + system) of this process and of its waited-for children."""
    own, children = (
        resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def adopt_once(source: Path, target: Path) -> tuple[float, float, int, int, float, float]:
    """(init seconds, reindex seconds, memories, problems, reindex CPU seconds of this
    process and of its children: the indexing processes and git) on a fresh copy of source.
    CPU seconds vary less than wall time on a shared machine."""
    shutil.copytree(source, target, symlinks=True)
    started = time.perf_counter()
    Vault.create(target)
    with Vault.open(target, catch_up=False) as vault:
        vault.catch_up()
        initialised = time.perf_counter() - started
        own, children = cpu_seconds()
        started = time.perf_counter()
        report = vault.reindex()
        reindexed = time.perf_counter() - started
        own_after, children_after = cpu_seconds()
        return (
            initialised,
            reindexed,
            vault.count(),
            len(report.problems),
            own_after - own,
            children_after - children,
        )


def bench(count: int, runs: int, workdir: Path) -> dict[str, Any]:
    results: dict[str, Any] = {"notes": count}
    for history in (True, False):
        source = workdir / f"notes-{history}"
        write_notes(source, count, git=history)
        label = "with_git" if history else "without_git"
        inits, reindexes, floors, own_cpu, children_cpu = [], [], [], [], []
        for run in range(runs):
            floors.append(read_every_note(source))
            init, reindex, memories, problems, own, children = adopt_once(
                source, workdir / f"{label}-{run}"
            )
            inits.append(init)
            reindexes.append(reindex)
            own_cpu.append(own)
            children_cpu.append(children)
            shutil.rmtree(workdir / f"{label}-{run}")
            if memories != count or problems:
                raise SystemExit(
                    f"{label}: {memories} of {count} notes indexed, {problems} problems"
                )
        results[f"init_{label}"] = summary(inits)
        results[f"reindex_{label}"] = summary(reindexes)
        results[f"reindex_cpu_own_{label}"] = summary(own_cpu)
        results[f"reindex_cpu_children_{label}"] = summary(children_cpu)
        results[f"floor_read_notes_{label}"] = summary(floors)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="vault-adopt-"))
    try:
        results = bench(args.count, args.runs, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print_figures(results, f"{args.count} hand-made notes")
    print("wrote", write_results(f"adopt-{args.count}", results, args.json))


if __name__ == "__main__":
    main()
