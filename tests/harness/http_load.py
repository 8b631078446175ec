"""HTTP under load: many concurrent MCP clients against `vault-tool serve --http` on loopback.

    python -m tests.harness.http_load [--clients 30] [--seconds 30] [--json OUT]

Two phases against one vault, each with its own server and bearer token:
  below    the rate limit far above what the clients can send: every call must succeed
           (no error, no 429); latency percentiles for search and remember, throughput;
  above    a low limit (--limited-rate per minute): every answer is a success or a clean
           429 with Retry-After and a JSON-RPC error body, never a 5xx or a dropped
           connection, and the server serves on afterwards (a search is answered once
           the limit lets a request through again, as its Retry-After says).

Each client initializes its own session (Mcp-Session-Id), then loops: searches (80%) and
remember creates (20%), plain POSTs with httpx, one request in flight per client. With
min_calls, each client makes at least that many calls however long they take, so a short
run on a slow machine still does the work it is checked for; with until_refused, the
clients stop once the server has refused that many requests (`seconds` is then only the
bound on how long that may take), so a short run above the limit never races the refill.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.e2e.mcp_client import HttpServer

TOKEN = "load-token-" + "0123456789abcdef"
# Bounds on waits (a slow machine takes longer; nothing here is a speed).
REQUEST_TIMEOUT = 120.0
STOP_TIMEOUT = 60.0
# The server closes a connection idle for 5 s, and a client that waits out a Retry-After of
# 5 s would send its next request on that connection just then: a dropped request of the
# harness's own making. Idle connections are not kept past 1 s.
KEEPALIVE_SECONDS = 1.0


def http_client(asynchronous: bool = True) -> Any:
    """An httpx2 client as the load's clients use it."""
    import httpx2

    limits = httpx2.Limits(keepalive_expiry=KEEPALIVE_SECONDS)
    kind = httpx2.AsyncClient if asynchronous else httpx2.Client
    return kind(timeout=REQUEST_TIMEOUT, limits=limits)


PROTOCOL = "2025-11-25"
QUERIES = [
    "who owns billing",
    "staging vpn",
    "deploy freeze",
    "postgres credentials rotation",
    "ana backend engineer",
    "kafka outage",
    "checkout service region",
]


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def summary(values: list[float]) -> dict[str, float]:
    """Count, median, p95 and p99 in milliseconds."""
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "p50_ms": round(statistics.median(values) * 1000, 1),
        "p95_ms": round(percentile(values, 95) * 1000, 1),
        "p99_ms": round(percentile(values, 99) * 1000, 1),
    }


class Server(HttpServer):
    """A `vault-tool serve --http` subprocess with a token and a rate limit."""

    start_timeout = 20.0

    def __init__(self, vault: Path, rate_limit: int) -> None:
        super().__init__(vault, "--token", TOKEN, "--rate-limit", str(rate_limit))

    def stop(self) -> tuple[int, str]:
        """SIGTERM; the exit code and whatever reached stderr after the start-up line."""
        self.process.terminate()
        try:
            code = self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        err = self.process.stderr.read().decode(errors="replace")  # type: ignore[union-attr]
        lines = [line for line in err.splitlines() if not line.startswith("vault-tool: serving")]
        return code, "\n".join(lines)


class Stats:
    """What all clients saw."""

    def __init__(self) -> None:
        self.latency: dict[str, list[float]] = {"search": [], "remember": [], "initialize": []}
        self.statuses: Counter = Counter()
        self.problems: list[str] = []
        self.limited = 0
        self.retry_after_ok = 0

    def problem(self, text: str) -> None:
        if len(self.problems) < 50:
            self.problems.append(text)


def _events(body: str) -> list[dict[str, Any]]:
    """JSON-RPC messages in a response: one JSON body, or SSE `data:` lines."""
    body = body.strip()
    if body.startswith("{"):
        return [json.loads(body)]
    return [json.loads(line[5:]) for line in body.splitlines() if line.startswith("data:")]


async def _post(
    http: Any, url: str, message: dict[str, Any], headers: dict[str, str], stats: Stats
) -> tuple[int, list[dict[str, Any]], Any]:
    try:
        response = await http.post(url, json=message, headers=headers)
    except Exception as problem:  # a dropped connection is exactly what must not happen
        stats.problem(f"{message.get('method')}: {type(problem).__name__}: {problem}")
        stats.statuses["exception"] += 1
        return 0, [], None
    stats.statuses[response.status_code] += 1
    if response.status_code == 429:
        stats.limited += 1
        retry = response.headers.get("retry-after", "")
        body = response.json()
        if retry.isdigit() and int(retry) >= 1 and body.get("error", {}).get("message"):
            stats.retry_after_ok += 1
        else:
            stats.problem(f"a 429 without Retry-After or error body: {response.text[:200]}")
        return 429, [], response
    if response.status_code >= 400:
        stats.problem(f"{message.get('method')}: HTTP {response.status_code} {response.text[:200]}")
        return response.status_code, [], response
    return response.status_code, _events(response.text) if response.text else [], response


def headers() -> dict[str, str]:
    """What every request carries before a session exists."""
    return {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {TOKEN}",
    }


def initialize(name: str) -> dict[str, Any]:
    """The initialize request of a client called name."""
    return {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": name, "version": "1"},
        },
    }


async def client(
    n: int,
    url: str,
    until: float,
    stats: Stats,
    seed: int,
    min_calls: int = 0,
    enough: Callable[[], bool] = lambda: False,
) -> None:
    """One MCP client: initialize, then search and remember until the time is up.

    It tries to initialize at least once and, once initialized, makes at least min_calls
    calls, whatever the clock says; it stops early once enough() says so.
    """
    rng = random.Random(seed)
    async with http_client() as http:
        session = None
        attempts = 0
        while session is None and (attempts == 0 or time.monotonic() < until) and not enough():
            attempts += 1
            started = time.perf_counter()
            init = initialize(f"load-{n}")
            status, _, response = await _post(http, url, init, headers(), stats)
            if status == 200:
                stats.latency["initialize"].append(time.perf_counter() - started)
                session = response.headers["mcp-session-id"]
            elif status == 429:
                await asyncio.sleep(float(response.headers.get("retry-after", "1")))
            else:
                return
        if session is None:
            return
        session_headers = {
            **headers(),
            "Mcp-Session-Id": session,
            "MCP-Protocol-Version": PROTOCOL,
        }
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await _post(http, url, note, session_headers, stats)
        request_id = 0
        while (time.monotonic() < until or request_id < min_calls) and not enough():
            request_id += 1
            if rng.random() < 0.2:
                tool = "remember"
                title = f"Load client {n} note {request_id} {rng.randrange(10**9)}"
                arguments = {
                    "mode": "create",
                    "content_md": f"# {title}\n\nWritten under load.\n",
                    "semantic_delta": {
                        "memory_type": "note",
                        "title": title,
                        "entities": [{"n": "load", "kind": "tool", "is": "the HTTP load bench"}],
                        "facts": [{"subject": "load", "predicate": "wrote", "object": "load"}],
                    },
                }
            else:
                tool, arguments = "search", {"query": rng.choice(QUERIES)}
            call = {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {"name": tool, "arguments": arguments},
            }
            started = time.perf_counter()
            status, events, _ = await _post(http, url, call, session_headers, stats)
            if status != 200:
                continue
            answer = next((e for e in events if e.get("id") == request_id), None)
            if answer is None or "result" not in answer:
                stats.problem(f"{tool}: no result in {events!r:.200}")
            elif answer["result"].get("isError"):
                stats.problem(f"{tool}: isError: {answer['result']['content'][0]['text'][:200]}")
            else:
                stats.latency[tool].append(time.perf_counter() - started)


async def _load(
    url: str, clients: int, seconds: float, seed: int, min_calls: int, until_refused: int
) -> Stats:
    stats = Stats()
    until = time.monotonic() + seconds
    enough = (lambda: stats.limited >= until_refused) if until_refused else (lambda: False)
    await asyncio.gather(
        *(client(n, url, until, stats, seed + n, min_calls, enough) for n in range(clients))
    )
    return stats


async def _patient_post(
    http: Any, url: str, message: dict[str, Any], sent: dict[str, str], stats: Stats, until: float
) -> tuple[int, list[dict[str, Any]], Any]:
    """POST, and after each 429 wait as long as its Retry-After says and send it again."""
    while True:
        status, events, response = await _post(http, url, message, sent, stats)
        if status != 429 or time.monotonic() >= until:
            return status, events, response
        await asyncio.sleep(float(response.headers.get("retry-after", "1")))


async def serves_on(url: str, stats: Stats, patience: float) -> bool:
    """Whether a new client is answered a search once the limit lets its requests through."""
    until = time.monotonic() + patience
    async with http_client() as http:
        status, _, response = await _patient_post(
            http, url, initialize("load-after"), headers(), stats, until
        )
        if status != 200:
            return False
        sent = {
            **headers(),
            "Mcp-Session-Id": response.headers["mcp-session-id"],
            "MCP-Protocol-Version": PROTOCOL,
        }
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": QUERIES[0]}},
        }
        status, events, _ = await _patient_post(http, url, call, sent, stats, until)
    answer = next((e for e in events if e.get("id") == 1), None)
    if status != 200 or answer is None or "result" not in answer:
        return False
    return not answer["result"].get("isError")


def phase(
    vault: Path,
    clients: int,
    seconds: float,
    rate_limit: int,
    seed: int,
    min_calls: int = 0,
    until_refused: int = 0,
) -> dict[str, Any]:
    """One server, `clients` clients for `seconds` (and min_calls calls each, or until
    until_refused requests were refused, `seconds` being the bound); the figures."""
    server = Server(vault, rate_limit)
    after = Stats()
    try:
        started = time.monotonic()
        stats = asyncio.run(_load(server.url, clients, seconds, seed, min_calls, until_refused))
        took = time.monotonic() - started
        # A refused request gets a token back in 60 / rate_limit seconds at most; the new
        # client needs two (initialize, then the search).
        patience = 3 * 60 / rate_limit + 60 if rate_limit else 60
        answered = asyncio.run(serves_on(server.url, after, patience))
    finally:
        code, stderr = server.stop()
    calls = len(stats.latency["search"]) + len(stats.latency["remember"])
    problems = list(stats.problems) + after.problems
    if not answered:
        problems.append("no call succeeded after the load")
    if code != 0:
        problems.append(f"the server exited with {code}")
    if stderr.strip():
        problems.append(f"server stderr: {stderr[:300]}")
    log = (vault / ".vault" / "run" / "server.log").read_text(errors="replace")
    problems += [line for line in log.splitlines() if " ERROR " in line or "Traceback" in line][:10]
    return {
        "clients": clients,
        "seconds": round(took, 1),
        "rate_limit_per_minute": rate_limit,
        "successful_calls": calls,
        "calls_per_second": round(calls / took, 1),
        "statuses": {str(k): v for k, v in sorted(stats.statuses.items(), key=str)},
        "refused_429": stats.limited,
        "refusals_with_retry_after": stats.retry_after_ok,
        "search": summary(stats.latency["search"]),
        "remember": summary(stats.latency["remember"]),
        "initialize": summary(stats.latency["initialize"]),
        "problems": problems,
    }


def run(
    vault: Path, clients: int = 30, seconds: float = 30, limited_rate: int = 300, seed: int = 1
) -> dict[str, Any]:
    """Both phases on an existing vault."""
    below = phase(vault, clients, seconds, 1_000_000, seed)
    above = phase(vault, clients, seconds, limited_rate, seed + 10_000)
    return {"below_the_limit": below, "above_the_limit": above}


def main() -> None:
    """Both phases, from the command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument(
        "--limited-rate",
        type=int,
        default=300,
        help="requests per minute in the second phase [300]",
    )
    parser.add_argument("--vault", type=Path, help="an existing vault [a new, empty one]")
    parser.add_argument("--json", type=Path, help="write the figures here as JSON")
    args = parser.parse_args()
    vault = args.vault
    if vault is None:
        from vault_tool.storage.store import Store

        vault = Path(tempfile.mkdtemp(prefix="http-load-")) / "vault"
        Store.init(vault).close()
    result = run(vault, args.clients, args.seconds, args.limited_rate)
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    failed = result["below_the_limit"]["problems"] or result["above_the_limit"]["problems"]
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
