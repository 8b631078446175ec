"""In-process speed benchmark on a vault: reindex, search, remember, hand edits.

    python -m bench.speed --count 10000 [--corpus generated|notes|stress|chat]
        [--queries 300] [--writes 50] [--edits 30]

Reports the median and p95 of: a full reindex (one run, with the peak memory it took and
the index size), searches of 1-3 words and of a sentence, remember create, update and a
20-item batch, and hand edit -> searchable / committed (through the watcher, as a server
runs it). Prints a table and writes bench/results/speed-N.json (speed-CORPUS-N.json for
another corpus than the generated one; or --json).

The corpus (its count is of notes, or of turns for chat): `generated` (bench.generate, the
tool's own files), `notes` (bench.notes, a person's notes folder, adopted in place),
`stress` (bench.stress, every word common), `chat` (bench.chat, a chat history; its
sentence searches are its questions). Each is written by a child process, then made a vault.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from bench.measure import (
    Timer,
    folder_mb,
    load_average,
    peak_rss_mb,
    percentile,
    print_figures,
    process_peak_rss_mb,
    summary,
    write_results,
)

# The generator runs as a module of the bench package, from the repository root.
ROOT = Path(__file__).resolve().parents[1]

SHORT = [
    "billing",
    "Kafka outage",
    "rotate credentials",
    "eu-west-1",
    "Redis",
    "checkout service",
    "Ana",
    "backend engineer",
    "Terraform checks",
    "datastore",
]
SENTENCES = [
    "who owns the billing service and where does it run",
    "what happens to the notification service when Kafka restarts",
    "how do we rotate Postgres credentials for the identity service",
    "which region does the search service run in",
    "what does the product designer on the checkout team prefer",
]
__all__ = ["SENTENCES", "SHORT", "generate_vault", "percentile", "summary"]


CORPORA = ("generated", "notes", "stress", "chat")


def generate_vault(path: Path, count: int, seed: int = 7, corpus: str = "generated") -> float:
    """Write a corpus from a child process (keeps this one's memory lean) and make it a
    vault: the generated one is already; a folder of notes is adopted in place."""
    module = {"generated": "generate"}.get(corpus, corpus)
    options = ["--turns" if corpus == "chat" else "--count", str(count), "--seed", str(seed)]
    with Timer() as t:
        subprocess.run(
            [sys.executable, "-m", f"bench.{module}", str(path.absolute()), *options],
            check=True,
            stdout=subprocess.DEVNULL,
            cwd=ROOT,
        )
        if corpus != "generated":
            from vault_tool.engine.vault import Vault

            Vault.create(path)
    return t.seconds


def search_pools(corpus: str, count: int, seed: int = 7) -> dict[str, list[str]]:
    """The queries of each search figure for a corpus: short ones and sentences."""
    if corpus == "stress":
        from bench import stress

        pool = stress.queries(60)
        return {
            "search_short": pool,
            "search_sentence": [" ".join(pool[i : i + 3]) for i in range(0, 60, 3)],
        }
    if corpus == "notes":
        from bench import notes

        words = notes.vocabulary(notes.vocabulary_size(count), random.Random(seed))
        weights = [1 / (rank + 1) for rank in range(len(words))]
        rng = random.Random(1)
        short = [" ".join(rng.choices(words, weights, k=rng.randint(1, 3))) for _ in range(60)]
        said = [" ".join(rng.choices(words, weights, k=rng.randint(5, 9))) for _ in range(30)]
        return {
            "search_short": short,
            "search_sentence": [f"what did I write about {s}" for s in said],
        }
    if corpus == "chat":
        from bench import chat

        topics = [w for _, words in chat.TOPICS.values() for w in words]
        return {
            "search_short": topics,
            "search_sentence": [q.text for q in chat.build(count, seed).questions],
        }
    return {"search_short": SHORT, "search_sentence": SENTENCES}


def _reset_peak_rss() -> bool:
    """Reset this process's VmHWM (Linux): the next reading is the peak from now on."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def note_args(n: int, tag: str = "bench") -> dict[str, Any]:
    """A small create call."""
    return {
        "content_md": f"# {tag.title()} memory {n}\n\nCreated by the benchmark, number {n}.\n",
        "semantic_delta": {
            "memory_type": "note",
            "title": f"{tag.title()} memory {n}",
            "entities": [{"n": "bench", "kind": "tool", "is": "the benchmark"}],
            "facts": [{"subject": "bench", "predicate": "made", "object": "bench"}],
        },
    }


def update_args(read: dict[str, Any], n: int) -> dict[str, Any]:
    """An update of a memory just read: one more line in its body."""
    return {
        "mode": "update",
        "memory_id": read["memory_id"],
        "expected_version_id": read["version_id"],
        "content_md": read["content_md"].rstrip("\n") + f"\n\nChecked again (update {n}).\n",
        "semantic_delta": read["semantic_delta"],
    }


def memory_files(path: Path, preferred: str, limit: int) -> list[Path]:
    """Up to limit memory files, from the preferred type's folder first (small vaults may
    not have one), then from the others."""
    folders = [
        preferred,
        *sorted(p.name for p in path.iterdir() if p.is_dir() and not p.name.startswith(".")),
    ]
    found: list[Path] = []
    for folder in dict.fromkeys(folders):
        if (path / folder).is_dir():
            found += sorted((path / folder).rglob("*.md"))[: limit - len(found)]
        if len(found) >= limit:
            break
    return found


def memory_ids(path: Path, preferred: str, limit: int) -> list[str]:
    """Ids of up to limit memories (read from their front matter; none in a person's notes)."""
    found = []
    for file in memory_files(path, preferred, limit):
        for line in file.read_text(encoding="utf-8").splitlines()[:3]:
            if line.startswith("id: "):
                found.append(line[4:].strip())
    return found


def edit_file(file: Path, word: str) -> None:
    """A hand edit: one more line at the end of the body."""
    file.write_text(file.read_text(encoding="utf-8") + f"\nEdited by hand: {word}.\n")


def bench(
    count: int,
    queries: int,
    writes: int,
    edits: int,
    workdir: Path,
    *,
    batches: int | None = None,
    corpus: str = "generated",
) -> dict[str, Any]:
    """Every in-process figure on a fresh vault of count memories of the corpus."""
    from vault_tool.engine.vault import Vault
    from vault_tool.watcher import Watcher

    path = workdir / f"vault-{corpus}-{count}"
    results: dict[str, Any] = {
        "count": count,
        "corpus": corpus,
        "load_average_start": load_average(),
    }
    results["generate_s"] = round(generate_vault(path, count, corpus=corpus), 2)
    generator_peak = peak_rss_mb(resource.RUSAGE_CHILDREN)

    vault = Vault.open(path, client="bench", catch_up=False)
    resettable = _reset_peak_rss()
    with Timer() as t:
        report = vault.reindex()
    results["reindex_s"] = round(t.seconds, 2)
    results["indexed"] = len(report.indexed)
    results["reindex_peak_rss_mb"] = (
        process_peak_rss_mb(os.getpid()) if resettable else peak_rss_mb()
    )
    # A bulk reindex indexes in a second process too; its peak, when it exceeds the
    # generator's (a child that ran before), is the child peak.
    children = peak_rss_mb(resource.RUSAGE_CHILDREN)
    results["reindex_child_peak_rss_mb"] = children if children > generator_peak else None
    results["index_mb"] = folder_mb(path / ".vault" / "index")

    rng = random.Random(1)
    for name, pool in search_pools(corpus, count).items():
        vault.search({"query": pool[0]})  # warm the searcher
        times = []
        for _ in range(queries):
            query = rng.choice(pool)
            t0 = time.perf_counter()
            vault.search({"query": query, "top_k": 5})
            times.append(time.perf_counter() - t0)
        results[name] = summary(times)

    times, created = [], []
    for n in range(writes):
        t0 = time.perf_counter()
        created.append(vault.remember({"mode": "create", **note_args(n)})["memory_id"])
        times.append(time.perf_counter() - t0)
    results["remember_create"] = summary(times)

    # A tool-written vault's own memories; in a person's folder, those just created (a
    # hand-made note need not follow the tool's contract, which an update must).
    times = []
    for n, memory_id in enumerate(memory_ids(path, "gotcha", writes) or created):
        call = update_args(vault.read(memory_id), n)
        t0 = time.perf_counter()
        out = vault.remember(call)
        times.append(time.perf_counter() - t0)
        assert out["status"] == "updated", out
    results["remember_update"] = summary(times)

    times = []
    for b in range(batches if batches is not None else max(3, writes // 5)):
        items = [note_args(b * 20 + i, "batch") for i in range(20)]
        t0 = time.perf_counter()
        vault.remember({"mode": "create", "items": items})
        times.append(time.perf_counter() - t0)
    results["remember_batch20"] = summary(times)

    # watchdog warns when a new folder is watched twice (created, then scanned); harmless.
    warnings.filterwarnings("ignore", "Callback with id", RuntimeWarning)
    watcher = Watcher(vault).start()
    watcher.ready.wait(300)
    files = memory_files(path, "note", edits)
    searchable, committed = [], []
    for n, file in enumerate(files):
        word = f"zqxedit{n}"
        t0 = time.perf_counter()
        edit_file(file, word)
        while not vault.search({"query": word})["selected_hits"]:
            time.sleep(0.005)
        searchable.append(time.perf_counter() - t0)
        while vault.uncommitted():
            time.sleep(0.005)
        committed.append(time.perf_counter() - t0)
    watcher.stop()
    results["hand_edit_searchable"] = summary(searchable)
    results["hand_edit_committed"] = summary(committed)
    results["peak_rss_mb"] = peak_rss_mb()
    vault.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--writes", type=int, default=50)
    parser.add_argument("--edits", type=int, default=30)
    parser.add_argument("--corpus", choices=CORPORA, default="generated")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="vault-bench-"))
    try:
        results = bench(
            args.count, args.queries, args.writes, args.edits, workdir, corpus=args.corpus
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print_figures(results, "in-process")
    name = "speed" if args.corpus == "generated" else f"speed-{args.corpus}"
    print("wrote", write_results(f"{name}-{args.count}", results, args.json))


if __name__ == "__main__":
    main()
