"""Retrieval quality, side by side: vault_tool and the bm25s lexical reference on one vault.

    python -m bench.quality --count 10000 [--per-type 30] [--basic-memory PYTHON]

Generates the vault (seed 7), draws the question sets of bench/questions.py (tuning seeds
1 and 2, held-out seed 3), and for each system measures index time, search latency and
recall_any@k / recall_all@k (k = 1, 5, 10), nDCG@10, MRR@10, stale-above-current and
abstention. Then it simulates an operator who marks the relevant results of the tuning
questions helpful (`vault-tool feedback`) and measures vault_tool again, so the effect of
feedback is seen on the tuning questions (in-sample) and on the held-out ones.
Prints tables and writes bench/results/quality-N.json.

Abstention: vault_tool abstains natively only when no query word occurs in the vault
(`selected_hits: []`, reason nothing_relevant). Every system is also given a threshold
rule: abstain when the top score per analysed query word is below tau. tau is chosen on
the tuning seeds (best balanced accuracy) and applied unchanged to the held-out seed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.generate import build, write_corpus
from bench.measure import Timer, load_average, summary, table, write_results
from bench.questions import HELD_OUT_SEED, SEEDS, TUNING_SEEDS, TYPES, Question, questions

VAULT_SEED = 7
K = 10
_ID_LINE = re.compile(r"^id: (\S+)$", re.MULTILINE)


# --- the systems -------------------------------------------------------------------------


class VaultTool:
    """vault_tool in-process: Vault.search, as the MCP tool calls it."""

    name = "vault_tool"

    def __init__(self, path: Path) -> None:
        from vault_tool.engine.vault import Vault

        self.vault = Vault.open(path, client="bench", catch_up=False)

    def index(self) -> float:
        with Timer() as t:
            self.vault.reindex()
        return t.seconds

    def search(self, query: str, k: int = K) -> list[tuple[str, float]]:
        hits = self.vault.search({"query": query, "top_k": k})["selected_hits"]
        return [(h["memory_id"], h["score"]) for h in hits]

    def words(self, query: str) -> int:
        from vault_tool.core.text import query_words

        return len(query_words(query))

    def last_handle(self) -> str:
        """The ledger handle of the latest search (operators see it in `vault-tool ledger`)."""
        newest = max(self.vault.places.ledger.glob("2*.jsonl"))
        with newest.open("rb") as f:
            f.seek(max(0, newest.stat().st_size - 65536))
            return json.loads(f.read().splitlines()[-1])["id"]

    def close(self) -> None:
        self.vault.close()


class Bm25s:
    """bm25s with PyStemmer's English Snowball stemmer over the same files, text as on disk."""

    name = "bm25s"

    def __init__(self, path: Path) -> None:
        import bm25s
        import Stemmer

        self.bm25s = bm25s
        self.stemmer = Stemmer.Stemmer("english")
        self.root = path

    def index(self) -> float:
        with Timer() as t:
            texts, self.ids = [], []
            for file in sorted(self.root.rglob("*.md")):
                rel = file.relative_to(self.root).parts
                if rel[0].startswith("."):
                    continue
                text = file.read_text(encoding="utf-8")
                found = _ID_LINE.search(text)
                self.ids.append(found.group(1) if found else "/".join(rel)[:-3])
                texts.append(text)
            tokens = self.bm25s.tokenize(
                texts, stopwords="en", stemmer=self.stemmer, show_progress=False
            )
            self.retriever = self.bm25s.BM25()
            self.retriever.index(tokens, show_progress=False)
        return t.seconds

    def _tokens(self, query: str) -> list[str]:
        return self.bm25s.tokenize(
            [query], stopwords="en", stemmer=self.stemmer, return_ids=False, show_progress=False
        )[0]

    def search(self, query: str, k: int = K) -> list[tuple[str, float]]:
        tokens = self._tokens(query)
        if not tokens:
            return []
        docs, scores = self.retriever.retrieve(
            [tokens], k=min(k, len(self.ids)), show_progress=False, n_threads=1
        )
        return [
            (self.ids[int(d)], float(s))
            for d, s in zip(docs[0], scores[0], strict=True)
            if float(s) > 0
        ]

    def words(self, query: str) -> int:
        return len(set(self._tokens(query)))

    def close(self) -> None:
        pass


# --- metrics -----------------------------------------------------------------------------


def question_metrics(question: Question, ranked: list[str]) -> dict[str, float]:
    """recall_any@k, recall_all@k, nDCG@10, reciprocal rank for one answerable question."""
    relevant = set(question.relevant)
    out: dict[str, float] = {}
    for k in (1, 5, 10):
        top = set(ranked[:k])
        out[f"recall_any@{k}"] = float(bool(top & relevant))
        out[f"recall_all@{k}"] = float(relevant <= top)
    gains = sum(1 / math.log2(i + 2) for i, m in enumerate(ranked[:K]) if m in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), K)))
    out["ndcg@10"] = gains / ideal
    first = next((i for i, m in enumerate(ranked[:K]) if m in relevant), None)
    out["mrr"] = 0.0 if first is None else 1 / (first + 1)
    if question.stale:
        current = min((i for i, m in enumerate(ranked) if m in relevant), default=math.inf)
        stale = min((i for i, m in enumerate(ranked) if m in question.stale), default=math.inf)
        out["stale_above_current"] = float(stale < current)
    return out


def mean_metrics(rows: list[dict[str, float]]) -> dict[str, float]:
    """Each metric averaged over the rows that have it."""
    keys = sorted({k for row in rows for k in row})
    return {
        k: round(sum(r[k] for r in rows if k in r) / sum(1 for r in rows if k in r), 4)
        for k in keys
    }


def evaluate(asked: list[Question], ranked: dict[str, list[str]]) -> dict[str, Any]:
    """Mean metrics over the answerable questions, overall and by type."""
    rows = {q.qid: question_metrics(q, ranked[q.qid]) for q in asked if not q.abstain}
    by_type = {
        t: mean_metrics([rows[q.qid] for q in asked if q.qtype == t and q.qid in rows])
        for t in TYPES
        if any(q.qtype == t and q.qid in rows for q in asked)
    }
    return {"n": len(rows), "overall": mean_metrics(list(rows.values())), "by_type": by_type}


def confidence(hits: list[tuple[str, float]], words: int) -> float:
    """Top score per analysed query word (0 for no hit)."""
    return hits[0][1] / max(1, words) if hits else 0.0


def abstention(asked: list[Question], conf: dict[str, float], tau: float) -> dict[str, float]:
    """Abstain when confidence < tau (or no hit): precision, recall, false abstentions."""
    abstained = {q.qid for q in asked if conf[q.qid] <= 0 or conf[q.qid] < tau}
    should = {q.qid for q in asked if q.abstain}
    answerable = len(asked) - len(should)
    true = len(abstained & should)
    return {
        "tau": round(tau, 4),
        "abstained": len(abstained),
        "precision": round(true / len(abstained), 4) if abstained else 0.0,
        "recall": round(true / len(should), 4) if should else 0.0,
        "false_abstention_rate": round(len(abstained - should) / answerable, 4)
        if answerable
        else 0.0,
    }


def tune_tau(asked: list[Question], conf: dict[str, float]) -> float:
    """The tau with the best balanced accuracy (abstention recall and answer rate)."""
    values = sorted(set(conf.values()))
    candidates = [0.0] + [(a + b) / 2 for a, b in itertools.pairwise(values)]
    best, best_score = 0.0, -1.0
    for tau in candidates:
        result = abstention(asked, conf, tau)
        score = (result["recall"] + 1 - result["false_abstention_rate"]) / 2
        if score > best_score + 1e-9:
            best, best_score = tau, score
    return best


# --- running ---------------------------------------------------------------------------


def run_questions(system: Any, asked: list[Question]) -> tuple[dict, dict, list[float]]:
    """ranked ids and confidence per question, and each search's latency in seconds."""
    ranked: dict[str, list[str]] = {}
    conf: dict[str, float] = {}
    times: list[float] = []
    for q in asked:
        t = time.perf_counter()
        hits = system.search(q.query)
        times.append(time.perf_counter() - t)
        ranked[q.qid] = [m for m, _ in hits]
        conf[q.qid] = confidence(hits, system.words(q.query))
    return ranked, conf, times


def measure_system(system: Any, sets: dict[int, list[Question]]) -> dict[str, Any]:
    """Index, then ask every question set; metrics for tuning and held-out seeds."""
    index_s = system.index()
    system.search("warm up the searcher")
    tuning = [q for s in TUNING_SEEDS for q in sets[s]]
    held = sets[HELD_OUT_SEED]
    ranked_t, conf_t, times_t = run_questions(system, tuning)
    ranked_h, conf_h, times_h = run_questions(system, held)
    tau = tune_tau(tuning, conf_t)
    native = [q for q in held if not ranked_h[q.qid]]
    return {
        "index_s": round(index_s, 2),
        "search": summary(times_t + times_h),
        "tuning": evaluate(tuning, ranked_t),
        "held_out": evaluate(held, ranked_h),
        "abstention": {
            "tuning": abstention(tuning, conf_t, tau),
            "held_out": abstention(held, conf_h, tau),
            "held_out_native_empty_results": {
                "abstained": len(native),
                "correct": sum(1 for q in native if q.abstain),
                "of_abstention_questions": sum(1 for q in held if q.abstain),
            },
        },
    }


def feedback_effect(system: VaultTool, sets: dict[int, list[Question]]) -> dict[str, Any]:
    """An operator marks the relevant results of each tuning question helpful; re-measure."""
    tuning = [q for s in TUNING_SEEDS for q in sets[s]]
    held = sets[HELD_OUT_SEED]
    before = {
        "tuning": evaluate(tuning, run_questions(system, tuning)[0])["overall"],
        "held_out": evaluate(held, run_questions(system, held)[0])["overall"],
    }
    judged = 0
    for q in tuning:
        if q.abstain:
            continue
        returned = [m for m, _ in system.search(q.query)]
        helpful = [m for m in returned if m in q.relevant]
        if helpful:
            system.vault.feedback(system.last_handle(), helpful, [])
            judged += 1
    after = {
        "tuning": evaluate(tuning, run_questions(system, tuning)[0])["overall"],
        "held_out": evaluate(held, run_questions(system, held)[0])["overall"],
    }
    delta = {
        part: {k: round(after[part][k] - before[part][k], 4) for k in before[part]}
        for part in before
    }
    return {"judged_searches": judged, "before": before, "after": after, "delta": delta}


def ratios(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, float | None]:
    """vault_tool / reference for time figures and quality figures (held-out)."""

    def ratio(a: float, b: float) -> float | None:
        return round(a / b, 3) if b else None

    out = {
        "index_s": ratio(ours["index_s"], theirs["index_s"]),
        "search_p50": ratio(ours["search"]["p50_ms"], theirs["search"]["p50_ms"]),
        "search_p95": ratio(ours["search"]["p95_ms"], theirs["search"]["p95_ms"]),
    }
    for key, value in ours["held_out"]["overall"].items():
        out[f"held_out_{key}"] = ratio(value, theirs["held_out"]["overall"].get(key, 0.0))
    return out


def bench(count: int, per_type: int, workdir: Path, basic_memory: str | None) -> dict[str, Any]:
    """The whole quality run on one generated vault."""
    path = workdir / f"vault-{count}"
    with Timer() as t:
        corpus = build(count, VAULT_SEED)
        write_corpus(path, corpus)
    sets = {seed: questions(corpus, seed, per_type, VAULT_SEED) for seed in SEEDS}
    results: dict[str, Any] = {
        "count": count,
        "vault_seed": VAULT_SEED,
        "tuning_seeds": list(TUNING_SEEDS),
        "held_out_seed": HELD_OUT_SEED,
        "per_type": per_type,
        "questions": {
            str(seed): {t: sum(1 for q in qs if q.qtype == t) for t in TYPES}
            for seed, qs in sets.items()
        },
        "generate_s": round(t.seconds, 2),
        "load_average_start": load_average(),
        "systems": {},
    }
    vault = VaultTool(path)
    try:
        results["systems"]["vault_tool"] = measure_system(vault, sets)
        results["feedback"] = feedback_effect(vault, sets)
    finally:
        vault.close()
    try:
        reference = Bm25s(path)
    except ImportError as missing:
        results["systems"]["bm25s"] = {"status": f"not installed ({missing.name})"}
    else:
        results["systems"]["bm25s"] = measure_system(reference, sets)
        results["ratios_to_bm25s"] = ratios(
            results["systems"]["vault_tool"], results["systems"]["bm25s"]
        )
    if basic_memory:
        from bench.basic_memory_ref import measure_basic_memory

        results["systems"]["basic_memory"] = measure_basic_memory(
            basic_memory, path, corpus, sets, workdir, measure_system
        )
        if "held_out" in results["systems"]["basic_memory"]:
            results["ratios_to_basic_memory"] = ratios(
                results["systems"]["vault_tool"], results["systems"]["basic_memory"]
            )
    return results


def print_tables(results: dict[str, Any]) -> None:
    """The figures as terminal tables."""
    systems = {k: v for k, v in results["systems"].items() if "held_out" in v}
    keys = ["recall_any@1", "recall_any@5", "recall_all@5", "recall_all@10", "ndcg@10", "mrr"]
    rows = []
    for name, res in systems.items():
        for part in ("tuning", "held_out"):
            overall = res[part]["overall"]
            rows.append(
                [
                    name,
                    part,
                    res[part]["n"],
                    *[overall.get(k, "") for k in keys],
                    overall.get("stale_above_current", ""),
                ]
            )
    print(table(rows, ["system", "seeds", "n", *keys, "stale>current"]))
    print()
    rows = []
    for name, res in systems.items():
        for qtype, m in res["held_out"]["by_type"].items():
            rows.append([name, qtype, m["recall_any@5"], m["recall_all@10"], m["ndcg@10"]])
    print(table(rows, ["system", "held-out type", "recall_any@5", "recall_all@10", "ndcg@10"]))
    print()
    rows = [
        [
            name,
            res["index_s"],
            res["search"]["p50_ms"],
            res["search"]["p95_ms"],
            res["abstention"]["held_out"]["tau"],
            res["abstention"]["held_out"]["precision"],
            res["abstention"]["held_out"]["recall"],
            res["abstention"]["held_out"]["false_abstention_rate"],
        ]
        for name, res in systems.items()
    ]
    print(
        table(
            rows,
            [
                "system",
                "index s",
                "search p50 ms",
                "p95 ms",
                "tau",
                "abst. precision",
                "abst. recall",
                "false abst.",
            ],
        )
    )
    fb = results.get("feedback")
    if fb:
        print()
        rows = [
            [
                part,
                fb["before"][part]["recall_any@1"],
                fb["after"][part]["recall_any@1"],
                fb["before"][part]["ndcg@10"],
                fb["after"][part]["ndcg@10"],
            ]
            for part in ("tuning", "held_out")
        ]
        print(f"feedback on {fb['judged_searches']} tuning searches:")
        print(table(rows, ["seeds", "r_any@1 before", "after", "nDCG@10 before", "after"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--per-type", type=int, default=30)
    parser.add_argument(
        "--basic-memory",
        metavar="PYTHON",
        help="the python of a venv with basic-memory installed (needs Python >= 3.12)",
    )
    parser.add_argument("--json", type=Path, help="where to write (default bench/results/)")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="vault-quality-"))
    try:
        results = bench(args.count, args.per_type, workdir, args.basic_memory)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print_tables(results)
    print("wrote", write_results(f"quality-{args.count}", results, args.json))


if __name__ == "__main__":
    main()
