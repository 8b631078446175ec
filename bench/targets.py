"""Every speed target at one size, on the vaults people have, each beside its floor.

    python -m bench.targets --count N [--queries 200] [--writes 50] [--edits 20] [--at-once]

The vault is a person's notes folder (bench.notes: no ids, a third without front matter,
a Zipfian vocabulary) made a vault in place by `vault-tool init`, as a new user does. A
second vault, the stress corpus (bench.stress: every word recurs), is searched too. The
folder is synced to disk before `init` (a person's notes are not tens of MB still being
written back), and the vault again before the MCP session (the figures of a vault in use:
the writeback of what init and reindex just wrote otherwise lands in the fsyncs of the
writes measured, 5-10 ms of a create at 10k). Each
figure is printed beside its target and beside a floor measured in the same run, on the
same machine, under the same load:

- `vault-tool reindex` beside reading every note's bytes once;
- spawn -> `tools/list` and spawn -> first search beside spawning a bare Python;
- search over stdio (the official MCP client) beside an MCP ping round trip, and in the
  server (the audit log's own duration of each call) beside the same queries through
  bm25s in-process;
- remember create / update / 20-item batch beside a bare `git hash-object` + `update-ref`;
- hand edit -> searchable beside the watcher's quiet period;
- the tools/list payload as sent (characters, and tokens: tiktoken's cl100k_base when
  installed, else characters / 4), the
  client's output-schema validation per result, and the server's peak memory.

The first search after the spawn is its own row; the phases after it begin once the server
has settled (no CPU used for half a second: the SDK imported, the watcher's first look
over the folder done), so that each figure is a call's own cost, not the start-up's.

Each call's stages (from the audit log's `stages_ms`) are printed as a breakdown, and the
part between the client and the server's own duration as "transport". Writes
bench/results/targets-N.json; bench.report puts the targets table in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.adopt import read_every_note
from bench.mcp_speed import cli_reindex
from bench.mcp_start import one_run, tool_list_cost
from bench.measure import load_average, summary, table, write_results
from bench.notes import vocabulary, vocabulary_size, write_notes
from bench.speed import note_args, update_args
from bench.stress import queries as stress_queries
from bench.stress import write_stress
from bench.target_limits import TARGETS
from vault_tool.storage.config import read_config

SERVE = [sys.executable, "-m", "vault_tool", "serve"]
ENV_NAMES = ("HOME", "PATH", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "LANG", "TMPDIR")


def make_vault(path: Path, count: int, corpus: str) -> None:
    """A notes folder of count files, made a vault in place with `vault-tool init`."""
    if corpus == "stress":
        write_stress(path, count, git=True)
    else:
        write_notes(path, count, git=True)
    os.sync()  # (a person's notes have been on disk a while: not tens of MB still dirty)
    subprocess.run(
        [sys.executable, "-m", "vault_tool", "init", str(path)],
        check=True,
        capture_output=True,
    )


def queries(count: int, rng: random.Random, n: int) -> list[str]:
    """Searches of one to three words drawn from the notes' own vocabulary, common and rare."""
    words = vocabulary(vocabulary_size(count), random.Random(7))
    common, rare = words[:200], words[200:]
    return [
        " ".join(
            rng.choice(common if rng.random() < 0.5 else rare) for _ in range(rng.randint(1, 3))
        )
        for _ in range(n)
    ]


def timed_process(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - started


def git_write_floor(vault: Path, runs: int) -> list[float]:
    """The least a write that is a git commit can cost: one object hashed, one ref moved."""
    times = []
    for n in range(runs):
        started = time.perf_counter()
        blob = subprocess.run(
            ["git", "hash-object", "-w", "--stdin"],
            cwd=vault,
            input=f"floor {n}\n".encode(),
            check=True,
            capture_output=True,
        ).stdout.strip()
        subprocess.run(
            ["git", "update-ref", "refs/bench/floor", blob.decode()],
            cwd=vault,
            check=True,
            capture_output=True,
        )
        times.append(time.perf_counter() - started)
    subprocess.run(["git", "update-ref", "-d", "refs/bench/floor"], cwd=vault, check=True)
    return times


def bm25s_floor(vault: Path, asked: list[str]) -> list[float] | None:
    """The same queries through bm25s in-process over the same files; None without bm25s."""
    try:
        from bench.quality import Bm25s

        reference = Bm25s(vault)
    except ImportError:
        return None
    reference.index()
    times = []
    for query in asked:
        started = time.perf_counter()
        reference.search(query, 5)
        times.append(time.perf_counter() - started)
    return times


def audit_rows(vault: Path) -> list[dict[str, Any]]:
    audit = vault / ".vault" / "run" / "audit.jsonl"
    return [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]


def stage_breakdown(rows: list[dict[str, Any]], client_ms: list[float]) -> dict[str, float]:
    """Median milliseconds of each stage over rows, and the transport (client minus server)."""
    names = sorted({name for row in rows for name in row.get("stages_ms", {})})
    breakdown = {
        name: round(statistics.median(row.get("stages_ms", {}).get(name, 0.0) for row in rows), 2)
        for name in names
    }
    server = [row["ms"] for row in rows]
    breakdown["in_server"] = round(statistics.median(server), 2)
    if client_ms:
        breakdown["transport"] = round(statistics.median(client_ms) - breakdown["in_server"], 2)
    return breakdown


async def session(
    vault: Path, asked: list[str], writes: int, edits: int, settle: bool = True
) -> dict[str, Any]:
    """Every figure taken through one stdio session with the official client."""
    import mcp_types as types
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=SERVE[0],
        args=[*SERVE[1:], "--vault", str(vault)],
        env={n: os.environ[n] for n in ENV_NAMES if n in os.environ},
    )
    out: dict[str, Any] = {}
    phases: dict[str, tuple[int, list[float]]] = {}

    async def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await session.call_tool(tool, arguments)
        if result.is_error:
            raise RuntimeError(f"{tool} failed: {result.content}")
        return result.structured_content

    async def phase(name: str, tool: str, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not calls:
            return []
        first = len(audit_rows(vault))
        times, results = [], []
        for arguments in calls:
            started = time.perf_counter()
            results.append(await call(tool, arguments))
            times.append(time.perf_counter() - started)
        out[name] = summary(times)
        phases[name] = (first, [t * 1000 for t in times])
        return results

    with open(os.devnull, "w") as quiet:
        async with (
            stdio_client(params, errlog=quiet) as (read, write),
            ClientSession(
                read, write, client_info=types.Implementation(name="bench", version="1")
            ) as session,
        ):
            await session.initialize()
            listed = await session.list_tools()
            pings = []
            for _ in range(len(asked)):
                started = time.perf_counter()
                await session.send_ping()
                pings.append(time.perf_counter() - started)
            out["floor_ping"] = summary(pings)
            await call("search", {"query": asked[0]})  # the first search after start is its own row
            # Once started (the SDK imported, the folder looked over: spawn -> first search
            # is that row), so that what follows is each call's own cost.
            if settle:
                out["server_settled_s"] = await server_settled(vault)
            # Asked twice: the first time a word is asked, its scores are read from the
            # postings (and kept for that index generation); every later time, kept.
            searches = [{"query": q, "top_k": 5} for q in asked]
            await phase("search_first", "search", searches)
            found = await phase("search", "search", searches)
            out["client_validation"] = summary(client_validation(listed, found))
            created = await phase(
                "remember_create",
                "remember",
                [{"mode": "create", **note_args(n, "targets")} for n in range(writes)],
            )
            reads = [await call("search", {"memory_id": c["memory_id"]}) for c in created]
            await phase(
                "remember_update", "remember", [update_args(r, n) for n, r in enumerate(reads)]
            )
            batches = [
                {
                    "mode": "create",
                    "items": [note_args(b * 20 + i, "targets batch") for i in range(20)],
                }
                for b in range(5 if writes else 0)
            ]
            await phase("remember_batch20", "remember", batches)
            out["hand_edit_searchable"] = summary(await hand_edits(vault, edits, call))
            out["server_peak_rss_mb"] = server_peak_rss(vault)
    rows = audit_rows(vault)
    for name, (first, client_ms) in phases.items():
        mine = [r for r in rows[first:] if r.get("tool") in ("search", "remember")][
            : len(client_ms)
        ]
        out[f"{name}_stages_ms"] = stage_breakdown(mine, client_ms)
        out[f"{name}_in_server"] = summary([r["ms"] / 1000 for r in mine])
    return out


def client_validation(listed: Any, results: list[dict[str, Any]]) -> list[float]:
    """How long the official client's check of each result against the outputSchema takes
    (a compiled validator, as the SDK caches it, and jsonschema's best_match)."""
    from jsonschema import exceptions, validators

    schema = next(t for t in listed.tools if t.name == "search").output_schema
    validator = validators.validator_for(schema)(schema)
    times = []
    for result in results:
        started = time.perf_counter()
        exceptions.best_match(validator.iter_errors(result))
        times.append(time.perf_counter() - started)
    return times


async def hand_edits(vault: Path, edits: int, call: Any) -> list[float]:
    """A person appends a new word to a note; seconds until a search finds it."""
    files = sorted(p for p in vault.rglob("*.md") if ".vault" not in p.parts)[:edits]
    times = []
    for n, file in enumerate(files):
        word = f"zqxedit{n}"
        started = time.perf_counter()
        file.write_text(file.read_text(encoding="utf-8") + f"\nEdited by hand: {word}.\n")
        while not (await call("search", {"query": word}))["selected_hits"]:
            await asyncio.sleep(0.005)
        times.append(time.perf_counter() - started)
    return times


def server_process(vault: Path) -> Path | None:
    """/proc/<pid> of this process's `vault-tool serve` child for vault."""
    for entry in Path("/proc").iterdir():
        try:
            status = (entry / "status").read_text()
            cmd = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if "serve" in cmd and str(vault) in cmd and f"PPid:\t{os.getpid()}\n" in status:
            return entry
    return None


def server_peak_rss(vault: Path) -> float | None:
    """Peak memory (VmHWM) of this process's `vault-tool serve` child for vault, in MB."""
    process = server_process(vault)
    for line in (process / "status").read_text().splitlines() if process else ():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return None


async def server_settled(vault: Path, quiet: float = 0.5, limit: float = 20.0) -> float:
    """Wait until the server has used no CPU for `quiet` seconds (its start-up done: the
    SDK imported, the watcher's first look over the folder); the seconds waited."""
    process = server_process(vault)
    if process is None:
        return 0.0
    started = time.monotonic()

    def ticks() -> int:
        fields = (process / "stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime, in clock ticks

    last, since = ticks(), time.monotonic()
    while time.monotonic() - started < limit:
        await asyncio.sleep(0.05)
        now = ticks()
        if now > last + 1:  # (a tick or two: the watcher's heartbeat)
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            break
    return round(time.monotonic() - started, 2)


def start_figures(vault: Path, runs: int) -> dict[str, Any]:
    command = [*SERVE, "--vault", str(vault)]
    answers: dict[str, Any] = {}
    one_run(command, answers)  # (and it warms the file cache and the bytecode cache)
    measured = [one_run(command) for _ in range(runs)]
    bare = [timed_process([sys.executable, "-c", "pass"]) for _ in range(runs)]
    listing = tool_list_cost(answers["tools/list"])  # the result as it came over the wire
    return {
        "tools_list_chars": listing["characters"],
        "tools_list_tokens_estimate": listing["tokens"],
        "start_to_tools_list": summary([m["tools/list"] for m in measured]),
        "start_to_first_search": summary([m["first search"] for m in measured]),
        "floor_python_start": summary(bare),
    }


def bench(
    count: int, n_queries: int, writes: int, edits: int, workdir: Path, settle: bool = True
) -> dict[str, Any]:
    results: dict[str, Any] = {"count": count, "load_average_start": load_average()}
    vault = workdir / "notes"
    make_vault(vault, count, "notes")
    results["floor_read_notes_s"] = round(read_every_note(vault), 2)
    seconds, peak_mb = cli_reindex(vault)
    results["reindex_s"], results["reindex_peak_rss_mb"] = round(seconds, 2), peak_mb
    results.update(start_figures(vault, runs=5))
    asked = queries(count, random.Random(1), n_queries)
    floor = bm25s_floor(vault, asked)
    if floor is not None:
        results["floor_bm25s"] = summary(floor)
    results["floor_git_write"] = summary(git_write_floor(vault, 20))
    results["floor_quiet_period_ms"] = read_config(vault).debounce_ms
    # The figures of a vault in use, not of its first minute: the files, the pack and the
    # index that init and reindex just wrote would otherwise be written back to the disk
    # during the writes measured, and every fsync of theirs would wait for that.
    os.sync()
    results.update(asyncio.run(session(vault, asked, writes, edits, settle)))
    stress = workdir / "stress"
    make_vault(stress, count, "stress")
    stressed = asyncio.run(session(stress, stress_queries(n_queries), 0, 0, settle))
    results["stress_search"] = stressed["search"]
    results["stress_search_first"] = stressed["search_first"]
    results["stress_search_in_server"] = stressed["search_in_server"]
    results["stress_floor_ping"] = stressed["floor_ping"]
    return results


def print_targets(results: dict[str, Any]) -> None:
    """Each target with its limit at this size, the figure, the floor, and whether it is met."""
    rows = []
    for target in TARGETS:
        figure = target.figure(results)
        if figure is None:
            continue
        limit = target.limit(results)
        floor = target.floor(results)
        rows.append(
            [
                target.what,
                f"<= {limit:g} {target.unit}",
                f"{figure:g}",
                "-" if floor is None else f"{floor:g}",
                "yes" if figure <= limit else "NO",
            ]
        )
    print(table(rows, [f"target at {results['count']:,}", "limit", "figure", "floor", "met"]))
    if "reindex_peak_rss_mb" in results:  # (the reindex target asks for bounded memory)
        print(f"reindex peak memory (its largest process): {results['reindex_peak_rss_mb']:g} MB")
    calls = ("search_first", "search", "remember_create", "remember_update", "remember_batch20")
    for name in calls:
        if f"{name}_stages_ms" in results:
            stages = results[f"{name}_stages_ms"]
            print(
                f"{name} stages (median ms): " + ", ".join(f"{k} {v:g}" for k, v in stages.items())
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--writes", type=int, default=50)
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument(
        "--at-once",
        action="store_true",
        help="time the calls right after the first search, beside the server's start-up work",
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="vault-targets-"))
    try:
        results = bench(
            args.count, args.queries, args.writes, args.edits, workdir, not args.at_once
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print_targets(results)
    print("wrote", write_results(f"targets-{args.count}", results, args.json))


if __name__ == "__main__":
    main()
