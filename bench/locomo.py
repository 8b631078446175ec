"""LoCoMo, the public long-conversation benchmark: turn-level recall through the MCP server,
beside bm25s over the same turns in the same run.

    python -m bench.locomo [--data ../shared/data/locomo/locomo10.zip] [--conversations N]
    python -m bench.locomo --smoke       # a small conversation of our own in LoCoMo's shape

The data is read from its zip where it lies (it is the authors', for benchmarking only: it
is never copied into the project). Each conversation gets a fresh vault and one stdio
server; every turn is stored through `remember` (a session's turns in batches of at most
20, in the order they were said: the speaker and the other person as entities, a
`talked_with` fact dated with the session, the session's date in the title, a shared
photo's caption in the text). Each question of categories 1-4 is sent to `search`
(top_k 10); it is found at k when one of its evidence turns is among the first k hits
(recall_any@k), and MRR@10 is the mean of 1/rank of the first evidence turn. Category 5
(adversarial: no answer in the conversation) is counted apart, as the share of questions
the search answered with no hits. bm25s (PyStemmer's English Snowball stemmer, English
stop words) indexes the same turn texts. Prints a table per category and writes
bench/results/locomo.json (locomo-smoke.json with --smoke).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import time
import zipfile
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.measure import load_average, summary, table, write_results

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.zip"
SERVE = [sys.executable, "-m", "vault_tool", "serve"]
BATCH = 20
K = 10
CATEGORIES = (1, 2, 3, 4)
_DATE = re.compile(r"on (\d{1,2}) (\w+),? (\d{4})")


# --- the conversations -------------------------------------------------------------------


def conversations(data: Path, limit: int | None = None) -> list[dict[str, Any]]:
    """The conversations of LoCoMo's zip, in file order (at most limit)."""
    found = []
    with zipfile.ZipFile(data) as archive:
        for name in sorted(archive.namelist()):
            if name.endswith(".json") and "/locomo10_v2/" in name:
                data = json.loads(archive.read(name))
                sample_id = Path(name).stem
                found.append({"conversation": data, "qa": data["qa"], "sample_id": sample_id})
    return found[:limit]


def smoke_conversation() -> dict[str, Any]:
    """A small conversation of our own in LoCoMo's shape: two people, three sessions, and
    questions whose evidence turns are known (the harness, not the scores, is tested)."""
    said = [
        ("Ines", "I finally booked the pottery class for Thursday evenings."),
        ("Omar", "Nice, is that the studio near the harbour?"),
        ("Ines", "Yes, the one with the blue door. My sister recommended it."),
        ("Omar", "My knee is still sore from the marathon last weekend."),
        ("Ines", "Did you beat your time from Lisbon?"),
        ("Omar", "By four minutes, which made the knee worth it."),
        ("Ines", "We adopted a cat, a grey one, and named her Pebble."),
        ("Omar", "Pebble is a perfect name for a grey cat."),
        ("Ines", "She sleeps on the radiator all afternoon."),
    ]
    dates = ["10:00 am on 3 March, 2024", "6:30 pm on 17 April, 2024", "9:15 am on 2 June, 2024"]
    convo: dict[str, Any] = {"speaker_a": "Ines", "speaker_b": "Omar"}
    for s in range(3):
        convo[f"session_{s + 1}_date_time"] = dates[s]
        convo[f"session_{s + 1}"] = [
            {"speaker": who, "dia_id": f"D{s + 1}:{t + 1}", "text": text}
            for t, (who, text) in enumerate(said[3 * s : 3 * s + 3])
        ]
    qa = [
        {"question": "What class did Ines book?", "evidence": ["D1:1"], "category": 1},
        {"question": "Who recommended the studio?", "evidence": ["D1:3"], "category": 4},
        {"question": "How much faster was Omar's marathon?", "evidence": ["D2:3"], "category": 1},
        {"question": "When did Ines adopt a cat?", "evidence": ["D3:1"], "category": 2},
        {"question": "Where does Pebble sleep?", "evidence": ["D3:3"], "category": 3},
        {"question": "What did Omar paint?", "evidence": [], "category": 5},
    ]
    return {"conversation": convo, "qa": qa, "sample_id": "smoke"}


def turns(convo: dict[str, Any]) -> list[tuple[int, str, dict[str, Any]]]:
    """(session number, its date and time as written, turn) for every turn, in order."""
    found = []
    session = 1
    while f"session_{session}" in convo:
        when = convo.get(f"session_{session}_date_time", "")
        found += [(session, when, turn) for turn in convo[f"session_{session}"]]
        session += 1
    return found


def session_day(when: str) -> str:
    """'1:56 pm on 8 May, 2023' -> '2023-05-08' ('' when it does not read)."""
    match = _DATE.search(when)
    if not match:
        return ""
    day, month, year = match.groups()
    try:
        return datetime.strptime(f"{day} {month} {year}", "%d %B %Y").date().isoformat()
    except ValueError:
        return ""


def turn_text(turn: dict[str, Any]) -> str:
    text = turn["text"]
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    return text


def remember_item(convo: dict[str, Any], when: str, turn: dict[str, Any]) -> dict[str, Any]:
    """One turn as a `remember` create item."""
    speaker = turn["speaker"]
    other = convo["speaker_b"] if speaker == convo["speaker_a"] else convo["speaker_a"]
    day = session_day(when)
    title = f"{speaker}, {day or when}"
    fact = {"subject": speaker, "predicate": "talked_with", "object": other}
    if day:
        fact["valid_from"] = day
    return {
        "content_md": f"# {title}\n\n**{speaker}:** {turn_text(turn)}\n",
        "semantic_delta": {
            "memory_type": "note",
            "title": title,
            "entities": [
                {"n": speaker, "kind": "person", "is": "one of the two people talking"},
                {"n": other, "kind": "person", "is": "one of the two people talking"},
            ],
            "facts": [fact],
            "tags": ["conversation"],
        },
    }


# --- vault_tool through its server ---------------------------------------------------------


async def run_vault_tool(sample: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """Store a conversation's turns and ask its questions through one stdio server."""
    import mcp_types as types
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from vault_tool.engine.vault import Vault

    vault = workdir / f"vault-{sample.get('sample_id', 'x')}"
    Vault.create(vault)
    names = ("HOME", "PATH", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "LANG", "TMPDIR")
    params = StdioServerParameters(
        command=SERVE[0],
        args=[*SERVE[1:], "--vault", str(vault)],
        env={n: os.environ[n] for n in names if n in os.environ},
    )
    convo = sample["conversation"]
    by_memory: dict[str, set[str]] = defaultdict(set)  # memory id -> its turns (a repeat: two)
    store_seconds: list[float] = []
    search_seconds: list[float] = []
    ranked: list[list[str]] = []
    with open(os.devnull, "w") as quiet:
        async with (
            stdio_client(params, errlog=quiet) as (read, write),
            ClientSession(
                read, write, client_info=types.Implementation(name="locomo", version="1")
            ) as session,
        ):
            await session.initialize()
            for batch in _batches(turns(convo)):
                items = [remember_item(convo, when, turn) for _, when, turn in batch]
                started = time.perf_counter()
                done = await session.call_tool("remember", {"mode": "create", "items": items})
                store_seconds.append((time.perf_counter() - started) / len(items))
                if done.is_error:
                    raise RuntimeError(f"remember failed: {done.content}")
                results = done.structured_content["results"]
                for (_, _, turn), result in zip(batch, results, strict=True):
                    by_memory[result["memory_id"]].add(turn["dia_id"])
            for qa in sample["qa"]:
                started = time.perf_counter()
                found = await session.call_tool("search", {"query": qa["question"], "top_k": K})
                search_seconds.append(time.perf_counter() - started)
                hits = [] if found.is_error else found.structured_content["selected_hits"]
                ranked.append([t for h in hits for t in sorted(by_memory[h["memory_id"]])])
    return {"ranked": ranked, "store_seconds": store_seconds, "search_seconds": search_seconds}


def _batches(said: list[tuple[int, str, dict[str, Any]]]) -> list[list[tuple]]:
    """A session's turns in order, at most BATCH to a call."""
    batches: list[list[tuple]] = []
    for item in said:
        if not batches or batches[-1][0][0] != item[0] or len(batches[-1]) == BATCH:
            batches.append([])
        batches[-1].append(item)
    return batches


# --- the lexical reference -----------------------------------------------------------------


def run_bm25s(sample: dict[str, Any]) -> dict[str, Any] | None:
    """bm25s over the same turn texts (the speaker's name with each), or None if absent."""
    try:
        import bm25s
        import Stemmer
    except ImportError:
        return None
    said = turns(sample["conversation"])
    texts = [f"{turn['speaker']}: {turn_text(turn)}" for _, _, turn in said]
    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False),
        show_progress=False,
    )
    ranked, seconds = [], []
    for qa in sample["qa"]:
        started = time.perf_counter()
        tokens = bm25s.tokenize(
            [qa["question"]], stopwords="en", stemmer=stemmer, show_progress=False
        )
        if not tokens.vocab:
            ranked.append([])
        else:
            docs, _ = retriever.retrieve(tokens, k=min(K, len(texts)), show_progress=False)
            ranked.append([said[int(d)][2]["dia_id"] for d in docs[0]])
        seconds.append(time.perf_counter() - started)
    return {"ranked": ranked, "search_seconds": seconds}


# --- figures -------------------------------------------------------------------------------


def scores(samples: list[dict[str, Any]], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per category (and categories 1-4 together): questions, recall_any@1/5/10, MRR@10; for
    category 5, the share answered with no hits."""
    rows: dict[str, list[dict[str, float]]] = defaultdict(list)
    empty_on_adversarial = []
    for sample, run in zip(samples, runs, strict=True):
        for qa, ranked in zip(sample["qa"], run["ranked"], strict=True):
            category = int(qa.get("category", 0))
            if category == 5:
                empty_on_adversarial.append(float(not ranked))
                continue
            if category not in CATEGORIES:
                continue
            evidence = set(qa.get("evidence") or ())
            first = next((i for i, t in enumerate(ranked[:K], 1) if t in evidence), None)
            row = {f"recall_any@{k}": float(first is not None and first <= k) for k in (1, 5, 10)}
            row["mrr@10"] = 1.0 / first if first else 0.0
            rows[str(category)].append(row)
            rows["1-4"].append(row)
    out: dict[str, Any] = {
        name: {"questions": len(found), **_means(found)} for name, found in sorted(rows.items())
    }
    if empty_on_adversarial:
        share = sum(empty_on_adversarial) / len(empty_on_adversarial)
        out["5"] = {"questions": len(empty_on_adversarial), "no_hits": round(share, 3)}
    return out


def _means(rows: list[dict[str, float]]) -> dict[str, float]:
    return {key: round(sum(r[key] for r in rows) / len(rows), 3) for key in rows[0]} if rows else {}


def bench(data: Path | None, limit: int | None, workdir: Path) -> dict[str, Any]:
    samples = [smoke_conversation()] if data is None else conversations(data, limit)
    load_start = load_average()
    ours = [asyncio.run(run_vault_tool(sample, workdir)) for sample in samples]
    reference = [run_bm25s(sample) for sample in samples]
    results: dict[str, Any] = {
        "conversations": len(samples),
        "turns": sum(len(turns(s["conversation"])) for s in samples),
        "load_average": {"start": load_start, "end": load_average()},
        "vault_tool": {
            "scores": scores(samples, ours),
            "remember_ms_per_memory": summary([s for r in ours for s in r["store_seconds"]]),
            "search_ms": summary([s for r in ours for s in r["search_seconds"]]),
        },
    }
    if all(r is not None for r in reference):
        results["bm25s"] = {
            "scores": scores(samples, reference),  # type: ignore[arg-type]
            "search_ms": summary([s for r in reference for s in r["search_seconds"]]),  # type: ignore[index]
        }
    else:
        results["bm25s"] = None
    return results


def print_tables(results: dict[str, Any]) -> None:
    systems = [name for name in ("vault_tool", "bm25s") if results.get(name)]
    header = ["category", "questions"] + [
        f"{s} {m}" for s in systems for m in ("@1", "@5", "@10", "mrr@10")
    ]
    rows = []
    for category in ("1", "2", "3", "4", "1-4"):
        line = results["vault_tool"]["scores"].get(category)
        if not line:
            continue
        row: list[Any] = [category, line["questions"]]
        for system in systems:
            got = results[system]["scores"].get(category, {})
            row += [got.get(f"recall_any@{k}") for k in (1, 5, 10)] + [got.get("mrr@10")]
        rows.append(row)
    print(table(rows, header))
    for system in systems:
        adversarial = results[system]["scores"].get("5")
        if adversarial:
            print(f"{system}: category 5, no hits for {adversarial['no_hits']:.3f} of them")
    stored, searched = (results["vault_tool"][k] for k in ("remember_ms_per_memory", "search_ms"))
    print(
        f"vault_tool: remember {stored['p50_ms']} ms a memory (median), "
        f"search p50 {searched['p50_ms']} ms, p95 {searched['p95_ms']} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.locomo", description=__doc__)
    parser.add_argument("--data", type=Path, default=DATA, help="LoCoMo's locomo10.zip")
    parser.add_argument("--conversations", type=int, help="only the first N conversations")
    parser.add_argument("--smoke", action="store_true", help="a small conversation of our own")
    args = parser.parse_args()
    if not args.smoke and not args.data.is_file():
        parser.error(f"{args.data} is not there: give --data, or run --smoke")
    with tempfile.TemporaryDirectory(prefix="vault-tool-locomo-") as folder:
        results = bench(None if args.smoke else args.data, args.conversations, Path(folder))
    print_tables(results)
    written = write_results("locomo-smoke" if args.smoke else "locomo", results)
    print(f"wrote {written}")


if __name__ == "__main__":
    main()
