"""Server start to first answers, over stdio: initialize, tools/list, and a first search.

    python -m bench.mcp_start VAULT [--runs 7]

Spawns `vault-tool serve --vault VAULT` afresh for each run (as a host does), writes the
2025-11-25 handshake, and times each answer from the moment the process was started. Prints
the median and the worst run, then what an agent pays for the tool list (its characters, and
tokens: counted with tiktoken's cl100k_base when it is installed, else estimated as
characters / 4) and what the official MCP client spends validating the first search's
structuredContent against the listed outputSchema (a compiled validator, as `mcp` 2.x caches
it, and a one-shot `jsonschema.validate` as `mcp` 1.x called it on every result). Add --json
for the raw figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

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


def one_run(command: list[str], answers: dict[str, Any] | None = None) -> dict[str, float]:
    """Seconds from spawn to each answer (and each answer's result into answers, if given)."""
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
        if answers is not None:
            answers[name] = answer["result"]
    process.stdin.close()
    process.wait(10)
    return times


def tool_list_cost(listed: dict[str, Any]) -> dict[str, Any]:
    """Characters of the tools/list result as sent (compact JSON), and its tokens."""
    text = json.dumps(listed, ensure_ascii=False, separators=(",", ":"))
    try:
        import tiktoken

        tokens, counted = len(tiktoken.get_encoding("cl100k_base").encode(text)), "cl100k_base"
    except ImportError:
        tokens, counted = round(len(text) / 4), "estimated as characters / 4"
    return {"characters": len(text), "tokens": tokens, "tokens_counted": counted}


def validation_ms(listed: dict[str, Any], result: dict[str, Any], repeat: int = 50) -> dict:
    """Milliseconds the official client spends checking one search result against its schema."""
    from jsonschema import exceptions, validate
    from jsonschema.validators import validator_for
    from referencing import Registry

    schema = next(t["outputSchema"] for t in listed["tools"] if t["name"] == "search")
    content = result["structuredContent"]
    compiled = validator_for(schema)(schema, registry=Registry())  # as mcp 2.x keeps it

    def cached() -> None:
        assert exceptions.best_match(compiled.iter_errors(content)) is None

    def one_shot() -> None:
        validate(content, schema)  # as mcp 1.x did for every result

    figures = {}
    for name, check, times in (("cached", cached, repeat), ("one_shot", one_shot, 5)):
        started = time.perf_counter()
        for _ in range(times):
            check()
        figures[name] = round((time.perf_counter() - started) / times * 1000, 3)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    command = [sys.executable, "-m", "vault_tool", "serve", "--vault", str(args.vault.absolute())]
    answers: dict[str, Any] = {}
    one_run(command, answers)  # warm the OS file cache and Python's bytecode cache
    runs = [one_run(command) for _ in range(args.runs)]
    listing = tool_list_cost(answers["tools/list"])
    checked = validation_ms(answers["tools/list"], answers["first search"])
    if args.json:
        print(json.dumps({"runs": runs, "tools_list": listing, "validation_ms": checked}, indent=1))
        return
    for name, _ in STEPS:
        values = [r[name] for r in runs]
        print(
            f"{name:>13}: median {statistics.median(values) * 1000:6.0f} ms, "
            f"worst {max(values) * 1000:6.0f} ms ({len(values)} runs)"
        )
    print(
        f"   tools/list: {listing['characters']} characters, {listing['tokens']} tokens "
        f"({listing['tokens_counted']})"
    )
    print(
        f"   validation: {checked['cached']:.3f} ms per search result (compiled validator), "
        f"{checked['one_shot']:.1f} ms (one-shot jsonschema.validate)"
    )


if __name__ == "__main__":
    main()
