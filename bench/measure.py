"""What every benchmark shares: percentiles, the machine it ran on, and writing results."""

from __future__ import annotations

import json
import os
import platform
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"


def percentile(values: list[float], pct: float) -> float:
    """The nearest-rank percentile of values."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def summary(values: list[float]) -> dict[str, float]:
    """Median and p95 of durations in seconds, as milliseconds."""
    if not values:
        return {"p50_ms": 0.0, "p95_ms": 0.0, "n": 0}
    return {
        "p50_ms": round(statistics.median(values) * 1000, 2),
        "p95_ms": round(percentile(values, 95) * 1000, 2),
        "n": len(values),
    }


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages."""
    return [round(x, 2) for x in os.getloadavg()]


def machine() -> dict[str, Any]:
    """Cores, CPU model, memory, Python and OS of this machine."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_gb = 0.0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                memory_gb = round(int(line.split()[1]) / 1e6, 1)
    except OSError:
        pass
    return {
        "cores": os.cpu_count(),
        "cpu": model,
        "memory_gb": memory_gb,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def peak_rss_mb(who: int = resource.RUSAGE_SELF) -> float:
    """Peak resident memory of this process (or of its waited-for children), in MB."""
    return round(resource.getrusage(who).ru_maxrss / 1024, 1)


def process_peak_rss_mb(pid: int) -> float | None:
    """Peak resident memory (VmHWM) of a running process, in MB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def folder_mb(path: Path) -> float:
    """Total size of the files under path, in MB."""
    return round(sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6, 2)


class Timer:
    """`with Timer() as t: ...; t.seconds`."""

    def __enter__(self) -> Timer:
        self.started = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.started


def write_results(name: str, results: dict[str, Any], out: Path | None = None) -> Path:
    """Add the machine and load to results and write them as JSON under bench/results/."""
    results.setdefault("machine", machine())
    results["load_average_end"] = load_average()
    results["command"] = " ".join([Path(sys.executable).name, *sys.argv])
    path = out or RESULTS / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    return path


def table(rows: list[list[Any]], header: list[str]) -> str:
    """A plain-text table for the terminal."""
    cells = [[str(c) for c in row] for row in [header, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def print_figures(results: dict[str, Any], label: str) -> None:
    """A benchmark's figures as two terminal tables: latencies, then single values."""
    rows = [
        [k, v["p50_ms"], v["p95_ms"], v["n"]]
        for k, v in results.items()
        if isinstance(v, dict) and "p50_ms" in v
    ]
    print(table(rows, [label, "p50 ms", "p95 ms", "n"]))
    singles = [
        [k, v]
        for k, v in results.items()
        if not isinstance(v, dict) and k not in ("machine", "command")
    ]
    print(table(singles, ["figure", "value"]))
