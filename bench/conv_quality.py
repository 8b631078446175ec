"""Recall over a team's chat, side by side: vault_tool and the bm25s lexical reference.

    python -m bench.conv_quality [--sessions 40] [--per-type 10] [--smoke]

Builds the chat of bench/conversations.py (seed 7, dated back from today) and the questions
of bench/conv_questions.py, stores every turn through `Vault.remember` in a temp vault (one
batch per session, at most 20 turns, as an agent saving a session would), then asks the
questions of the tuning seeds (1, 2) and of the held-out seed (3) of vault_tool
(Vault.search in-process) and of bm25s over the same files.
Per question type and per seed group: recall_any@k / recall_all@k (k = 1, 5, 10), nDCG@10,
MRR@10, stale-above-current; abstention with the tau tuned on the tuning seeds (as
bench/quality.py does); search latency. Prints tables and the held-out ratios to bm25s, lists
held-out questions bm25s ranks in its top 5 and vault_tool lower, and writes
bench/results/conv-quality.json (conv-quality-smoke.json with --smoke).
"""

from __future__ import annotations

import argparse
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import conv_questions, conversations
from bench.conversations import HELD_OUT_SEED, SEEDS, TUNING_SEEDS, TYPES, Conversation
from bench.measure import Timer, load_average, summary, table, write_results
from bench.quality import (
    Bm25s,
    VaultTool,
    abstention,
    mean_metrics,
    question_metrics,
    run_questions,
    tune_tau,
)
from bench.questions import Question

CHAT_SEED = 7
BATCH = 20
SMOKE = {"sessions": 6, "per_type": 2}
SHOWN = ["recall_any@1", "recall_any@5", "recall_any@10", "recall_all@5", "recall_all@10"]
SHOWN += ["ndcg@10", "mrr", "stale_above_current"]
_ID_LINE = re.compile(r"^id: (\S+)$", re.MULTILINE)


def store(vault: Any, convo: Conversation) -> tuple[list[str], list[float]]:
    """Every turn through remember, session by session: the memory id of each turn, in order,
    and each batch's seconds."""
    items = conversations.requests(convo)
    ids: list[str] = []
    seconds: list[float] = []
    start = 0
    while start < len(items):
        day = convo.turns[start].day
        end = start
        while end < len(items) and end - start < BATCH and convo.turns[end].day == day:
            end += 1
        began = time.perf_counter()
        result = vault.remember({"mode": "create", "items": items[start:end]})
        seconds.append(time.perf_counter() - began)
        ids += [r["memory_id"] for r in result["results"]]
        start = end
    return ids, seconds


def vault_ids(path: Path) -> set[str]:
    """The ids of the memory files under path (for checks: every answer is stored)."""
    return {
        found.group(1)
        for file in path.rglob("*.md")
        if not any(part.startswith(".") for part in file.relative_to(path).parts)
        if (found := _ID_LINE.search(file.read_text(encoding="utf-8")))
    }


# --- measuring ---------------------------------------------------------------------------


def evaluate(asked: list[Question], ranked: dict[str, list[str]]) -> dict[str, Any]:
    """Mean metrics over the answerable questions, overall and by type."""
    rows = {q.qid: question_metrics(q, ranked[q.qid]) for q in asked if not q.abstain}
    of_type = {t: [rows[q.qid] for q in asked if q.qtype == t and q.qid in rows] for t in TYPES}
    by_type = {t: {**mean_metrics(r), "n": len(r)} for t, r in of_type.items() if r}
    return {"n": len(rows), "overall": mean_metrics(list(rows.values())), "by_type": by_type}


def measure(system: Any, sets: dict[int, list[Question]]) -> tuple[dict[str, Any], dict]:
    """Ask every question; metrics for tuning and held-out seeds, and the held-out rankings."""
    system.search("warm up the searcher")
    tuning = [q for s in TUNING_SEEDS for q in sets[s]]
    held = sets[HELD_OUT_SEED]
    ranked_t, conf_t, times_t = run_questions(system, tuning)
    ranked_h, conf_h, times_h = run_questions(system, held)
    tau = tune_tau(tuning, conf_t)
    figures = {
        "search": summary(times_t + times_h),
        "tuning": evaluate(tuning, ranked_t),
        "held_out": evaluate(held, ranked_h),
        "abstention": {
            "tuning": abstention(tuning, conf_t, tau),
            "held_out": abstention(held, conf_h, tau),
        },
    }
    return figures, ranked_h


def _first(ranked: list[str], relevant: list[str]) -> int | None:
    return next((i + 1 for i, m in enumerate(ranked) if m in relevant), None)


def behind(held: list[Question], ours: dict, theirs: dict, titles: dict) -> list[dict]:
    """Held-out questions bm25s answers in its top 5 and vault_tool answers lower or not at
    all in its top 10 (rank None): the misses first."""
    found = []
    for q in held:
        if q.abstain or not (theirs_at := _first(theirs[q.qid], q.relevant)) or theirs_at > 5:
            continue
        ours_at = _first(ours[q.qid], q.relevant)
        if ours_at is None or ours_at > theirs_at:
            found.append(
                {
                    "qid": q.qid,
                    "qtype": q.qtype,
                    "query": q.query,
                    "expected": [titles[m] for m in q.relevant],
                    "vault_tool_rank": ours_at,
                    "bm25s_rank": theirs_at,
                    "vault_tool_top3": [titles.get(m, m) for m in ours[q.qid][:3]],
                }
            )
    return sorted(found, key=lambda f: -(f["vault_tool_rank"] or 99))


def ratios(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, float | None]:
    """vault_tool / bm25s on the held-out seed: overall, and per type for the two targets."""
    out: dict[str, float | None] = {}
    for key in ("recall_any@5", "ndcg@10", "mrr"):
        b = theirs["held_out"]["overall"].get(key, 0.0)
        out[key] = round(ours["held_out"]["overall"][key] / b, 3) if b else None
    out["search_p50"] = round(ours["search"]["p50_ms"] / max(theirs["search"]["p50_ms"], 1e-3), 2)
    return out


def bench(sessions: int, per_type: int, workdir: Path) -> dict[str, Any]:
    """The whole run: the chat stored in a vault under workdir, both systems asked."""
    path = workdir / "vault"
    convo = conversations.build(sessions, CHAT_SEED)
    drawn = {seed: conv_questions.questions(convo, seed, per_type) for seed in SEEDS}
    results: dict[str, Any] = {
        "sessions": sessions,
        "per_type": per_type,
        "chat_seed": CHAT_SEED,
        "tuning_seeds": list(TUNING_SEEDS),
        "held_out_seed": HELD_OUT_SEED,
        "today": convo.today.isoformat(),
        "turns": len(convo.turns),
        "load_average_start": load_average(),
        "systems": {},
    }
    from vault_tool.engine.vault import Vault

    Vault.create(path)
    ours = VaultTool(path)
    try:
        with Timer() as t:
            ids, batches = store(ours.vault, convo)
        results["store_s"] = round(t.seconds, 2)
        results["remember_batch"] = summary(batches)
        results["memories"] = len(set(ids))  # a turn said twice the same day is one memory
        sets = {seed: conv_questions.resolve(qs, ids) for seed, qs in drawn.items()}
        results["questions"] = {
            str(seed): {t: sum(1 for q in qs if q.qtype == t) for t in TYPES}
            for seed, qs in sets.items()
        }
        results["asked"] = {str(seed): [vars(q) for q in qs] for seed, qs in sets.items()}
        results["systems"]["vault_tool"], ranked_ours = measure(ours, sets)
    finally:
        ours.close()
    try:
        reference = Bm25s(path)
    except ImportError as missing:
        results["systems"]["bm25s"] = {"status": f"not installed ({missing.name})"}
        return results
    index_s = reference.index()
    results["systems"]["bm25s"], ranked_theirs = measure(reference, sets)
    results["systems"]["bm25s"]["index_s"] = round(index_s, 2)
    results["held_out_ratios_to_bm25s"] = ratios(
        results["systems"]["vault_tool"], results["systems"]["bm25s"]
    )
    titles = {m: turn.title for m, turn in zip(ids, convo.turns, strict=True)}
    results["held_out_behind_bm25s"] = behind(
        sets[HELD_OUT_SEED], ranked_ours, ranked_theirs, titles
    )
    return results


# --- printing ----------------------------------------------------------------------------


def print_tables(results: dict[str, Any]) -> None:
    """The figures as terminal tables: per type and seed group, then abstention and speed."""
    systems = {k: v for k, v in results["systems"].items() if "held_out" in v}
    rows = []
    for qtype in (*TYPES, "overall"):
        for part in ("held_out", "tuning"):
            for name, res in systems.items():
                m = res[part]["overall"] if qtype == "overall" else res[part]["by_type"].get(qtype)
                if m:
                    n = res[part]["n"] if qtype == "overall" else m["n"]
                    rows.append([qtype, part, name, n, *[m.get(k, "") for k in SHOWN]])
    header = ["type", "seeds", "system", "n", "r_any@1", "r_any@5", "r_any@10", "r_all@5"]
    print(table(rows, [*header, "r_all@10", "nDCG@10", "MRR@10", "stale>cur"]))
    print()
    rows = []
    for name, res in systems.items():
        for part in ("tuning", "held_out"):
            a = res["abstention"][part]
            rows.append([name, part, a["tau"], a["precision"], a["recall"]])
            rows[-1] += [a["false_abstention_rate"], res["search"]["p50_ms"]]
            rows[-1].append(res["search"]["p95_ms"])
    header = ["system", "seeds", "tau", "abst. precision", "abst. recall", "false abst."]
    print(table(rows, [*header, "search p50 ms", "p95 ms"]))
    print(f"\nstored {results['turns']} turns in {results['store_s']} s")
    ratio = results.get("held_out_ratios_to_bm25s")
    if ratio:
        print(
            f"held-out vault_tool / bm25s: recall_any@5 {ratio['recall_any@5']}x, "
            f"nDCG@10 {ratio['ndcg@10']}x (target >= 1.3x), MRR@10 {ratio['mrr']}x"
        )
        found = results["held_out_behind_bm25s"]
        print(f"\nheld-out questions bm25s answers in its top 5, vault_tool lower: {len(found)}")
        for f in found:
            print(f"- [{f['qtype']}] {f['query']}")
            print(f"  expected: {f['expected']}")
            print(f"  rank: vault_tool {f['vault_tool_rank']}, bm25s {f['bm25s_rank']}")
            print(f"  vault_tool top 3: {f['vault_tool_top3']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=40)
    parser.add_argument("--per-type", type=int, default=10)
    parser.add_argument("--smoke", action="store_true", help="a few sessions, two per type")
    parser.add_argument("--json", type=Path, help="where to write (default bench/results/)")
    args = parser.parse_args()
    sessions, per_type = (
        (SMOKE["sessions"], SMOKE["per_type"]) if args.smoke else (args.sessions, args.per_type)
    )
    workdir = Path(tempfile.mkdtemp(prefix="vault-conv-quality-"))
    try:
        with Timer() as t:
            results = bench(sessions, per_type, workdir)
        results["wall_s"] = round(t.seconds, 1)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print_tables(results)
    name = "conv-quality-smoke" if args.smoke else "conv-quality"
    print(f"\nwall time {results['wall_s']} s; wrote", write_results(name, results, args.json))


if __name__ == "__main__":
    main()
