"""Basic Memory (PyPI `basic-memory`) over the same notes, for bench/quality.py.

It needs Python >= 3.12, so it runs from its own venv, given as --basic-memory PYTHON
(docs/benchmarks.md says how such a venv can be made). Its network
features are switched off through its settings: automatic updates, the cloud promo,
Logfire telemetry, semantic search (which would download an embedding model), FastMCP's
update check and banner; HF_HUB is set offline. Each memory becomes one Basic Memory note
at the same relative path: the same title, type, tags and body, with the facts and entity
glosses as observations, and the memory id as its permalink (so results map back to ids).

Index time is `bm project add` (it indexes before it returns; its start-up is included,
as a user sees it). Search goes through its MCP server (`bm mcp --project bench`) driven
by the official MCP client over stdio, tool `search_notes` with search_type text.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from bench.generate import Corpus, placed

K = 10


def bm_env(python: str, workdir: Path) -> dict[str, str]:
    """An isolated home and config for Basic Memory with its network features off."""
    home = workdir / "bm-home"
    home.mkdir(parents=True, exist_ok=True)
    return {
        "HOME": str(home),
        "PATH": f"{Path(python).parent}:{os.environ.get('PATH', '')}",
        "BASIC_MEMORY_CONFIG_DIR": str(home / ".basic-memory"),
        "BASIC_MEMORY_AUTO_UPDATE": "false",
        "BASIC_MEMORY_CLOUD_PROMO_OPT_OUT": "true",
        "BASIC_MEMORY_LOGFIRE_ENABLED": "false",
        "BASIC_MEMORY_SEMANTIC_SEARCH_ENABLED": "false",
        "BASIC_MEMORY_DEFAULT_SEARCH_TYPE": "text",
        "BASIC_MEMORY_RERANKER_ENABLED": "false",
        "FASTMCP_CHECK_FOR_UPDATES": "off",
        "FASTMCP_SHOW_SERVER_BANNER": "false",
        "HF_HUB_OFFLINE": "1",
        "DO_NOT_TRACK": "1",
        "LANG": os.environ.get("LANG", "C.UTF-8"),
    }


def convert(corpus: Corpus, target: Path) -> int:
    """Write every memory as a Basic Memory note; returns how many."""
    n = 0
    for rel, memory in placed(corpus.memories):
        front = {
            "title": memory.title,
            "type": memory.memory_type,
            "tags": list(memory.tags),
            "permalink": (memory.id or "").lower(),
        }
        observations = [f"- [fact] {f.as_text()}" for f in memory.facts] + [
            f"- [{e.kind}] {e.n}: {e.gloss}" for e in memory.entities
        ]
        text = (
            "---\n"
            + yaml.safe_dump(front, sort_keys=False, allow_unicode=True)
            + "---\n"
            + memory.body.rstrip("\n")
            + "\n\n## Observations\n"
            + "\n".join(observations)
            + "\n"
        )
        file = target / rel
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(text, encoding="utf-8")
        n += 1
    return n


class BasicMemory:
    """Basic Memory's search_notes over MCP stdio, with the interface quality.py expects.

    The MCP session lives in one task of an event loop on a thread of its own (anyio
    wants a session entered and left in the same task); search() hands it queries.
    """

    name = "basic_memory"

    def __init__(self, python: str, notes: Path, workdir: Path) -> None:
        self.python = python
        self.bm = str(Path(python).parent / "bm")
        self.notes = notes
        self.env = bm_env(python, workdir)
        self.index_peak_rss_mb: float | None = None
        self.start_to_initialize_s: float | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._requests: asyncio.Queue | None = None
        self._done: concurrent.futures.Future | None = None

    def index(self) -> float:
        started = time.perf_counter()
        process = subprocess.Popen(
            [self.bm, "project", "add", "bench", str(self.notes), "--default"],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        if os.waitstatus_to_exitcode(status):
            raise RuntimeError("bm project add failed")
        self.index_peak_rss_mb = round(usage.ru_maxrss / 1024, 1)
        self._thread.start()
        ready: concurrent.futures.Future = concurrent.futures.Future()
        self._done = asyncio.run_coroutine_threadsafe(self._serve(ready), self._loop)
        ready.result(timeout=300)
        return seconds

    async def _serve(self, ready: concurrent.futures.Future) -> None:
        import mcp_types as types
        from mcp.client.session import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(
            command=self.bm, args=["mcp", "--project", "bench"], env=self.env
        )
        self._requests = asyncio.Queue()
        started = time.perf_counter()
        with open(os.devnull, "w") as quiet:
            async with (
                stdio_client(params, errlog=quiet) as (read, write),
                ClientSession(
                    read, write, client_info=types.Implementation(name="bench", version="1")
                ) as session,
            ):
                await session.initialize()
                self.start_to_initialize_s = time.perf_counter() - started
                ready.set_result(True)
                while True:
                    request = await self._requests.get()
                    if request is None:
                        return
                    query, k, answer = request
                    try:
                        answer.set_result(await self._search(session, query, k))
                    except Exception as problem:  # handed to the caller
                        answer.set_exception(problem)

    @staticmethod
    async def _search(session: Any, query: str, k: int) -> list[tuple[str, float]]:
        result = await session.call_tool(
            "search_notes",
            {
                "query": query,
                "page_size": k,
                "search_type": "text",
                "output_format": "json",
                "project": "bench",
            },
        )
        data = result.structured_content
        if data is None:
            text = "".join(getattr(c, "text", "") for c in result.content)
            try:
                data = json.loads(text)
            except ValueError:
                return []
        if isinstance(data, dict) and isinstance(data.get("result"), dict):
            data = data["result"]
        rows = data.get("results", []) if isinstance(data, dict) else data
        hits: list[tuple[str, float]] = []
        for row in rows or []:
            link = (row.get("permalink") or "").split("/")[-1].upper()
            if link and link not in {m for m, _ in hits}:
                # SQLite FTS5's bm25() is negative, best first: flip it so higher is better.
                hits.append((link, -float(row.get("score") or 0.0)))
        return hits[:k]

    def search(self, query: str, k: int = K) -> list[tuple[str, float]]:
        answer: concurrent.futures.Future = concurrent.futures.Future()
        assert self._requests is not None
        self._loop.call_soon_threadsafe(self._requests.put_nowait, (query, k, answer))
        return answer.result(timeout=120)

    def words(self, query: str) -> int:
        return len(set(query.lower().split()))

    def close(self) -> None:
        if self._requests is not None and self._done is not None:
            self._loop.call_soon_threadsafe(self._requests.put_nowait, None)
            self._done.result(timeout=60)
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread.is_alive():
            self._thread.join(10)


def measure_basic_memory(
    python: str,
    vault: Path,
    corpus: Corpus,
    sets: dict[int, list],
    workdir: Path,
    measure_system: Callable[[Any, dict[int, list]], dict[str, Any]],
) -> dict[str, Any]:
    """Index time, search latency and quality of Basic Memory over the same memories."""
    version = subprocess.run(
        [python, "-c", "import basic_memory, sys; print(basic_memory.__version__, sys.version)"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    notes = workdir / "bm-notes"
    convert(corpus, notes)
    system = BasicMemory(python, notes, workdir)
    try:
        results = measure_system(system, sets)
    finally:
        system.close()
    results["version"] = version
    results["index_peak_rss_mb"] = system.index_peak_rss_mb
    results["start_to_initialize_s"] = (
        round(system.start_to_initialize_s, 2) if system.start_to_initialize_s else None
    )
    results["index_includes"] = "bm project add (CLI start-up + indexing)"
    return results
