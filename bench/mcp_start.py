"""Server start to first answers, over stdio: initialize, tools/list, and a first search.

    python -m bench.mcp_start VAULT [--runs 7]

Spawns `vault-tool serve --vault VAULT` afresh for each run (as a host does), writes the
2025-11-25 handshake, and times each answer from the moment the process was started. Prints
the median and the worst run; add --json for the raw figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}
STEPS = (
    ("initialize", INITIALIZE),
    ("tools/list", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    (
        "first search",
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": "who owns the billing service"}},
        },
    ),
)


def one_run(command: list[str]) -> dict[str, float]:
    """Seconds from spawn to each answer."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert process.stdin and process.stdout
    times = {}
    for name, message in STEPS:
        process.stdin.write((json.dumps(message) + "\n").encode())
        if name == "initialize":
            process.stdin.flush()
            answer = json.loads(process.stdout.readline())
            times[name] = time.perf_counter() - started
            assert answer["result"]["protocolVersion"] == "2025-11-25", answer
            process.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
            continue
        process.stdin.flush()
        answer = json.loads(process.stdout.readline())
        assert "result" in answer, answer
        times[name] = time.perf_counter() - started
    process.stdin.close()
    process.wait(10)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    command = [sys.executable, "-m", "vault_tool", "serve", "--vault", str(args.vault.absolute())]
    one_run(command)  # warm the OS file cache and Python's bytecode cache
    runs = [one_run(command) for _ in range(args.runs)]
    if args.json:
        print(json.dumps(runs, indent=1))
        return
    for name, _ in STEPS:
        values = [r[name] for r in runs]
        print(
            f"{name:>13}: median {statistics.median(values) * 1000:6.0f} ms, "
            f"worst {max(values) * 1000:6.0f} ms ({len(values)} runs)"
        )


if __name__ == "__main__":
    main()
