"""Every benchmark at every size, then the report: the full run behind docs/benchmarks.md.

    python -m bench.run_all [--sizes 1000 10000 100000] [--basic-memory PYTHON]
                            [--basic-memory-sizes 1000] [--max-load 1.2]

Runs bench.speed, bench.mcp_speed and bench.quality one after another (each in its own
process, each on a fresh generated vault), waiting before each until the 1-minute load
average is below --max-load (other work on the machine skews timings), then
bench.conv_quality once (its chat has one size), then bench.report.
Basic Memory indexes slowly (docs/benchmarks.md has its figures), so it is measured only
at --basic-memory-sizes.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

# Each benchmark runs as a module of the bench package, from the repository root.
ROOT = Path(__file__).resolve().parents[1]


def wait_for_quiet(max_load: float, patience: float) -> float:
    """Wait (up to patience seconds) for the 1-minute load average to fall below max_load."""
    deadline = time.monotonic() + patience
    while os.getloadavg()[0] >= max_load and time.monotonic() < deadline:
        time.sleep(10)
    return os.getloadavg()[0]


def run(module: str, *args: str) -> None:
    """One benchmark in its own process."""
    command = [sys.executable, "-m", f"bench.{module}", *args]
    print("$", " ".join(command[1:]), flush=True)
    subprocess.run(command, check=True, cwd=ROOT)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--basic-memory", metavar="PYTHON")
    parser.add_argument("--basic-memory-sizes", type=int, nargs="+", default=[1000])
    parser.add_argument("--max-load", type=float, default=1.2)
    parser.add_argument("--patience", type=float, default=1800, help="seconds to wait for quiet")
    parser.add_argument(
        "--skip", nargs="*", default=[], choices=["speed", "mcp", "quality", "conv"]
    )
    args = parser.parse_args()
    for size in args.sizes:
        for name, module, extra in (
            ("speed", "speed", []),
            ("mcp", "mcp_speed", []),
            ("quality", "quality", []),
        ):
            if name in args.skip:
                continue
            if name == "quality" and args.basic_memory and size in args.basic_memory_sizes:
                extra = ["--basic-memory", args.basic_memory]
            load = wait_for_quiet(args.max_load, args.patience)
            print(f"load average before {name} at {size}: {load:.2f}", flush=True)
            run(module, "--count", str(size), *extra)
    if "conv" not in args.skip:  # the chat has one size (40 sessions)
        run("conv_quality")
    run("report")


if __name__ == "__main__":
    main()
