"""Speed over stdio with the official MCP client, as a host sees it.

    python -m bench.mcp_speed --count 10000 [--queries 200] [--writes 30] [--edits 10]

On a generated vault, indexed first with `vault-tool reindex` (timed, with its peak
memory): server start to `initialize` answered, to `tools/list` and to the first search
(bench.mcp_start, a fresh process per run); then one `vault-tool serve` driven by the
SDK's ClientSession over stdio_client: search of 1-3 words and of a sentence, remember
create, update and a 20-item batch, hand edit -> searchable (seen by a search tool call)
and -> committed, and the server's peak memory. Prints a table and writes
bench/results/mcp-N.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.mcp_start import one_run
from bench.measure import (
    folder_mb,
    load_average,
    print_figures,
    process_peak_rss_mb,
    summary,
    write_results,
)
from bench.speed import (
    SENTENCES,
    SHORT,
    edit_file,
    generate_vault,
    memory_files,
    memory_ids,
    note_args,
    update_args,
)

SERVE = [sys.executable, "-m", "vault_tool", "serve"]


def cli_reindex(path: Path) -> tuple[float, float]:
    """`vault-tool reindex` as a subprocess: (seconds, peak RSS in MB of it and its children)."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "vault_tool", "reindex", "--vault", str(path), "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise RuntimeError(f"vault-tool reindex failed with {process.returncode}")
    return seconds, round(usage.ru_maxrss / 1024, 1)


def _server_pid(vault: Path) -> int | None:
    """The pid of our `vault-tool serve` child for this vault."""
    mine = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmd = (entry / "cmdline").read_bytes().decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == mine and "serve" in cmd and str(vault) in cmd:
            return int(entry.name)
    return None


async def session_figures(
    path: Path, queries: int, writes: int, edits: int, batches: int
) -> dict[str, Any]:
    """Every figure taken through one stdio session."""
    import mcp_types as types
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    names = ("HOME", "PATH", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "LANG", "TMPDIR")
    params = StdioServerParameters(
        command=SERVE[0],
        args=[*SERVE[1:], "--vault", str(path)],
        env={n: os.environ[n] for n in names if n in os.environ},
    )
    out: dict[str, Any] = {}

    async def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await session.call_tool(tool, arguments)
        if result.is_error:
            raise RuntimeError(f"{tool} failed: {result.content}")
        return result.structured_content

    async def timed(tool: str, arguments: dict[str, Any], into: list[float]) -> dict[str, Any]:
        t0 = time.perf_counter()
        found = await call(tool, arguments)
        into.append(time.perf_counter() - t0)
        return found

    with open(os.devnull, "w") as quiet:
        started = time.perf_counter()
        async with (
            stdio_client(params, errlog=quiet) as (read, write),
            ClientSession(
                read, write, client_info=types.Implementation(name="bench", version="1")
            ) as session,
        ):
            await session.initialize()
            out["sdk_initialize_ms"] = round((time.perf_counter() - started) * 1000, 1)
            pid = _server_pid(path)
            rng = random.Random(1)
            for name, pool in (("search_short", SHORT), ("search_sentence", SENTENCES)):
                await call("search", {"query": pool[0]})
                times: list[float] = []
                for _ in range(queries):
                    await timed("search", {"query": rng.choice(pool), "top_k": 5}, times)
                out[name] = summary(times)

            times = []
            for n in range(writes):
                await timed("remember", {"mode": "create", **note_args(n, "stdio")}, times)
            out["remember_create"] = summary(times)

            times = []
            for n, memory_id in enumerate(memory_ids(path, "rule", writes)):
                read_back = await call("search", {"memory_id": memory_id})
                await timed("remember", update_args(read_back, n), times)
            out["remember_update"] = summary(times)

            times = []
            for b in range(batches):
                items = [note_args(b * 20 + i, "stdio batch") for i in range(20)]
                await timed("remember", {"mode": "create", "items": items}, times)
            out["remember_batch20"] = summary(times)

            searchable, committed = [], []
            for n, file in enumerate(memory_files(path, "procedure", edits)):
                word = f"zqxstdio{n}"
                t0 = time.perf_counter()
                edit_file(file, word)
                while not (await call("search", {"query": word}))["selected_hits"]:
                    await asyncio.sleep(0.005)
                searchable.append(time.perf_counter() - t0)
                rel = str(file.relative_to(path))
                while _uncommitted(path, rel):
                    await asyncio.sleep(0.005)
                committed.append(time.perf_counter() - t0)
            out["hand_edit_searchable"] = summary(searchable)
            out["hand_edit_committed"] = summary(committed)
            out["server_peak_rss_mb"] = process_peak_rss_mb(pid) if pid else None
    return out


def _uncommitted(path: Path, rel: str) -> bool:
    found = subprocess.run(
        ["git", "status", "--porcelain", "--", rel],
        cwd=path,
        capture_output=True,
        text=True,
        check=True,
    )
    return bool(found.stdout.strip())


def bench(
    count: int,
    queries: int,
    writes: int,
    edits: int,
    workdir: Path,
    *,
    start_runs: int = 7,
    batches: int = 5,
) -> dict[str, Any]:
    """Every stdio figure on a fresh generated vault of count memories."""
    path = (workdir / f"vault-{count}").absolute()
    results: dict[str, Any] = {"count": count, "load_average_start": load_average()}
    results["generate_s"] = round(generate_vault(path, count), 2)
    seconds, peak = cli_reindex(path)
    results["cli_reindex_s"] = round(seconds, 2)
    results["cli_reindex_peak_rss_mb"] = peak
    results["index_mb"] = folder_mb(path / ".vault" / "index")

    command = [*SERVE, "--vault", str(path)]
    one_run(command)  # warm the OS file cache and the bytecode cache
    runs = [one_run(command) for _ in range(start_runs)]
    for step, key in (
        ("initialize", "start_to_initialize"),
        ("tools/list", "start_to_tools_list"),
        ("first search", "start_to_first_search"),
    ):
        results[key] = summary([r[step] for r in runs])
    results.update(asyncio.run(session_figures(path, queries, writes, edits, batches)))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--writes", type=int, default=30)
    parser.add_argument("--edits", type=int, default=10)
    parser.add_argument("--start-runs", type=int, default=7)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="vault-mcp-bench-"))
    try:
        results = bench(
            args.count, args.queries, args.writes, args.edits, workdir, start_runs=args.start_runs
        )
    finally:
        with contextlib.suppress(OSError):
            shutil.rmtree(workdir, ignore_errors=True)
    print_figures(results, "over stdio")
    print("wrote", write_results(f"mcp-{args.count}", results, args.json))


if __name__ == "__main__":
    main()
