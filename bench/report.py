"""Tables and plots for docs/benchmarks.md from the JSON in bench/results/.

    python -m bench.report [--results bench/results] [--doc docs/benchmarks.md] [--only-targets]

Rewrites the parts of docs/benchmarks.md between the `<!-- targets:start -->` /
`<!-- targets:end -->` markers (bench.targets' table) and the `<!-- results:start -->` /
`<!-- results:end -->` markers (the prose around them is kept), and draws the PNG plots
into docs/img/ (matplotlib, from the `bench` extra).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from bench import target_limits

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- results:start -->", "<!-- results:end -->"
TARGETS_START, TARGETS_END = "<!-- targets:start -->", "<!-- targets:end -->"
# Basic Memory 0.24.1 as the project measured it earlier (shared/notes/measured.md), for
# figures this run did not measure itself. Size 1000 unless said.
BASIC_MEMORY_PUBLISHED = {
    "index_s": 152.0,
    "search_p50_ms": 44.0,
    "search_p95_ms": 111.0,
    "hand_edit_searchable_ms": "700-1600",
    "start_to_initialize_ms": 6800.0,
}


def load(results_dir: Path) -> dict[str, dict[int, dict[str, Any]]]:
    """{"speed"|"mcp"|"quality": {count: results}} from the JSON files."""
    out: dict[str, dict[int, dict[str, Any]]] = {
        n: {} for n in ("speed", "mcp", "quality", "targets")
    }
    for file in sorted(results_dir.glob("*.json")):
        match = re.fullmatch(r"(speed|mcp|quality|targets)-(\d+)", file.stem)
        if match:
            out[match.group(1)][int(match.group(2))] = json.loads(file.read_text())
    return out


def _get(data: dict[str, Any], dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    return data


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


def _ratio(a: Any, b: Any) -> str:
    if not isinstance(a, int | float) or not isinstance(b, int | float) or not b:
        return "–"
    return f"{a / b:.2f}×"


def _table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_fmt(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _latency_rows(runs: dict[int, dict[str, Any]], keys: list[str]) -> list[list[Any]]:
    sizes = sorted(runs)
    rows = []
    for key in keys:
        row: list[Any] = [key]
        for size in sizes:
            row += [_get(runs[size], f"{key}.p50_ms"), _get(runs[size], f"{key}.p95_ms")]
        rows.append(row)
    return rows


def _speed_section(
    title: str, by_size: dict[int, dict[str, Any]], latencies: list[str], singles: list[str]
) -> list[str]:
    """A speed benchmark's two tables (latencies by size, then single figures), if it ran."""
    if not by_size:
        return []
    sizes = sorted(by_size)
    header = ["figure (ms)"] + [f"{s:,} {p}" for s in sizes for p in ("p50", "p95")]
    rows = [[k, *[by_size[s].get(k) for s in sizes]] for k in singles]
    return [
        title,
        _table(header, _latency_rows(by_size, latencies)),
        "\n" + _table(["figure", *[f"{s:,}" for s in sizes]], rows),
    ]


def markdown_tables(results: dict[str, dict[int, dict[str, Any]]]) -> str:
    """Every table of the results section."""
    parts: list[str] = []
    speed, mcp, quality = results["speed"], results["mcp"], results["quality"]
    parts += _speed_section(
        "### In-process (bench/speed.py)\n",
        speed,
        [
            "search_short",
            "search_sentence",
            "remember_create",
            "remember_update",
            "remember_batch20",
            "hand_edit_searchable",
            "hand_edit_committed",
        ],
        [
            "reindex_s",
            "reindex_peak_rss_mb",
            "reindex_child_peak_rss_mb",
            "index_mb",
            "peak_rss_mb",
            "generate_s",
            "load_average_start",
            "load_average_end",
        ],
    )
    parts += _speed_section(
        "\n### Over stdio with the MCP SDK client (bench/mcp_speed.py)\n",
        mcp,
        [
            "start_to_initialize",
            "start_to_tools_list",
            "start_to_first_search",
            "search_short",
            "search_sentence",
            "remember_create",
            "remember_update",
            "remember_batch20",
            "hand_edit_searchable",
            "hand_edit_committed",
        ],
        [
            "cli_reindex_s",
            "cli_reindex_peak_rss_mb",
            "server_peak_rss_mb",
            "index_mb",
            "sdk_initialize_ms",
            "load_average_start",
            "load_average_end",
        ],
    )
    if quality:
        parts.append(_ratio_table(results))
        parts.append(_quality_tables(quality))
    return "\n".join(parts) + "\n"


def _ratio_table(results: dict[str, dict[int, dict[str, Any]]]) -> str:
    """Every figure that has a counterpart in bm25s or Basic Memory, with the ratios."""
    speed, mcp, quality = results["speed"], results["mcp"], results["quality"]
    rows = []
    for size in sorted(quality):
        systems = quality[size]["systems"]
        ours, ref = systems.get("vault_tool", {}), systems.get("bm25s", {})
        bm = systems.get("basic_memory", {})
        published = size == 1000 and "held_out" not in bm

        def bm_value(
            key: str, fallback: str | None, scale: float = 1.0, bm: dict = bm, ok: bool = published
        ) -> Any:
            if _get(bm, key) is not None:
                return _get(bm, key) * scale
            return BASIC_MEMORY_PUBLISHED.get(fallback) if ok and fallback else None

        figures = [
            (
                "full index, s",
                _get(speed.get(size, {}), "reindex_s"),
                _get(ref, "index_s"),
                bm_value("index_s", "index_s"),
            ),
            (
                "search p50, ms (question set, in-process)",
                _get(ours, "search.p50_ms"),
                _get(ref, "search.p50_ms"),
                None,
            ),
            (
                "search p95, ms (question set, in-process)",
                _get(ours, "search.p95_ms"),
                _get(ref, "search.p95_ms"),
                None,
            ),
            (
                "search p50, ms (sentences over MCP stdio)",
                _get(mcp.get(size, {}), "search_sentence.p50_ms"),
                None,
                bm_value("search.p50_ms", "search_p50_ms"),
            ),
            (
                "search p95, ms (sentences over MCP stdio)",
                _get(mcp.get(size, {}), "search_sentence.p95_ms"),
                None,
                bm_value("search.p95_ms", "search_p95_ms"),
            ),
            (
                "start -> initialize, ms",
                _get(mcp.get(size, {}), "start_to_initialize.p50_ms"),
                None,
                bm_value("start_to_initialize_s", "start_to_initialize_ms", 1000.0),
            ),
            (
                "peak memory while indexing, MB",
                _get(mcp.get(size, {}), "cli_reindex_peak_rss_mb"),
                None,
                bm_value("index_peak_rss_mb", None),
            ),
            (
                "held-out nDCG@10",
                _get(ours, "held_out.overall.ndcg@10"),
                _get(ref, "held_out.overall.ndcg@10"),
                _get(bm, "held_out.overall.ndcg@10"),
            ),
            (
                "held-out recall_any@5",
                _get(ours, "held_out.overall.recall_any@5"),
                _get(ref, "held_out.overall.recall_any@5"),
                _get(bm, "held_out.overall.recall_any@5"),
            ),
        ]
        for name, value, reference, peer in figures:
            rows.append(
                [
                    f"{size:,}",
                    name,
                    value,
                    reference,
                    _ratio(value, reference),
                    peer,
                    _ratio(value, peer),
                ]
            )
        if size == 1000:
            hand = _get(speed.get(size, {}), "hand_edit_searchable.p50_ms")
            rows.append(
                [
                    f"{size:,}",
                    "hand edit -> searchable p50, ms",
                    hand,
                    "–",
                    "–",
                    "700-1600 (published)",
                    _range_ratio(hand, 700, 1600),
                ]
            )
    header = ["size", "figure", "vault_tool", "bm25s", "vault_tool / bm25s", "Basic Memory"]
    header.append("vault_tool / Basic Memory")
    note = (
        "\n### Side by side: ratios\n\nbm25s has no server and no write path, so only index, "
        "search and quality have a counterpart; Basic Memory was measured at 1,000 notes in this "
        "run (its figures at other sizes would take hours to index), and its hand-edit figure is "
        "the earlier probe's (shared/notes/measured.md), marked published, not measured here.\n"
    )
    return note + "\n" + _table(header, rows)


def _range_ratio(value: Any, low: float, high: float) -> str:
    if not isinstance(value, int | float):
        return "–"
    return f"{value / high:.2f}-{value / low:.2f}×"


def _quality_tables(quality: dict[int, dict[str, Any]]) -> str:
    parts = ["\n### Side by side: index, search and quality (bench/quality.py)\n"]
    metrics = [
        "recall_any@1",
        "recall_any@5",
        "recall_any@10",
        "recall_all@1",
        "recall_all@5",
        "recall_all@10",
        "ndcg@10",
        "mrr",
        "stale_above_current",
    ]
    header = ["size", "system", "index s", "search p50 ms", "p95 ms", *metrics]
    header += ["abst. precision", "abst. recall", "false abst."]
    rows = []
    ratio_rows = []
    for size in sorted(quality):
        systems = quality[size]["systems"]
        ours = systems.get("vault_tool", {})
        for name, res in systems.items():
            if "held_out" not in res:
                rows.append([f"{size:,}", name, res.get("status", "not measured")])
                continue
            overall = res["held_out"]["overall"]
            ab = res["abstention"]["held_out"]
            rows.append(
                [
                    f"{size:,}",
                    name,
                    res["index_s"],
                    res["search"]["p50_ms"],
                    res["search"]["p95_ms"],
                    *[overall.get(m) for m in metrics],
                    ab["precision"],
                    ab["recall"],
                    ab["false_abstention_rate"],
                ]
            )
            if name != "vault_tool" and ours:
                o, ab_o = ours["held_out"]["overall"], ours["abstention"]["held_out"]
                ratio_rows.append(
                    [
                        f"{size:,}",
                        f"vault_tool / {name}",
                        _ratio(ours["index_s"], res["index_s"]),
                        _ratio(ours["search"]["p50_ms"], res["search"]["p50_ms"]),
                        _ratio(ours["search"]["p95_ms"], res["search"]["p95_ms"]),
                        *[_ratio(o.get(m), overall.get(m)) for m in metrics],
                        _ratio(ab_o["precision"], ab["precision"]),
                        _ratio(ab_o["recall"], ab["recall"]),
                        _ratio(ab_o["false_abstention_rate"], ab["false_abstention_rate"]),
                    ]
                )
    parts.append("Held-out seed; quality metrics are means over its answerable questions.\n")
    parts.append(_table(header, rows))
    if ratio_rows:
        parts.append("\nRatios (vault_tool divided by the reference; for times lower is better,")
        parts.append(
            "for quality higher is better; stale and false abstention: lower is better).\n"
        )
        parts.append(_table(header, ratio_rows))
    parts.append("\n#### By question type (held-out seed)\n")
    rows = []
    for size in sorted(quality):
        for name, res in quality[size]["systems"].items():
            if "held_out" not in res:
                continue
            for qtype, m in res["held_out"]["by_type"].items():
                rows.append(
                    [
                        f"{size:,}",
                        name,
                        qtype,
                        m.get("recall_any@1"),
                        m.get("recall_any@5"),
                        m.get("recall_all@10"),
                        m.get("ndcg@10"),
                        m.get("mrr"),
                        m.get("stale_above_current"),
                    ]
                )
    parts.append(
        _table(
            [
                "size",
                "system",
                "type",
                "recall_any@1",
                "recall_any@5",
                "recall_all@10",
                "nDCG@10",
                "MRR",
                "stale>current",
            ],
            rows,
        )
    )
    parts.append("\n#### Tuning seeds against the held-out seed (vault_tool)\n")
    rows = []
    for size in sorted(quality):
        ours = quality[size]["systems"].get("vault_tool")
        if not ours:
            continue
        for part in ("tuning", "held_out"):
            o = ours[part]["overall"]
            rows.append(
                [
                    f"{size:,}",
                    part,
                    ours[part]["n"],
                    o.get("recall_any@1"),
                    o.get("recall_any@5"),
                    o.get("recall_all@10"),
                    o.get("ndcg@10"),
                    o.get("mrr"),
                    ours["abstention"][part]["tau"],
                    ours["abstention"][part]["precision"],
                ]
            )
    parts.append(
        _table(
            [
                "size",
                "seeds",
                "questions",
                "recall_any@1",
                "recall_any@5",
                "recall_all@10",
                "nDCG@10",
                "MRR",
                "tau",
                "abst. precision",
            ],
            rows,
        )
    )
    parts.append("\n#### Effect of operator feedback (vault_tool)\n")
    rows = []
    for size in sorted(quality):
        fb = quality[size].get("feedback")
        if not fb:
            continue
        for part in ("tuning", "held_out"):
            for metric in ("recall_any@1", "recall_any@5", "ndcg@10", "mrr"):
                rows.append(
                    [
                        f"{size:,}",
                        part,
                        fb["judged_searches"],
                        metric,
                        fb["before"][part][metric],
                        fb["after"][part][metric],
                        fb["delta"][part][metric],
                    ]
                )
    parts.append(
        _table(["size", "seeds", "judged searches", "metric", "before", "after", "delta"], rows)
    )
    parts.append("\n#### Native abstention (empty result, reason nothing_relevant), held-out\n")
    rows = []
    for size in sorted(quality):
        for name, res in quality[size]["systems"].items():
            native = _get(res, "abstention.held_out_native_empty_results")
            if native:
                rows.append(
                    [
                        f"{size:,}",
                        name,
                        native["abstained"],
                        native["correct"],
                        native["of_abstention_questions"],
                    ]
                )
    parts.append(
        _table(["size", "system", "empty results", "of them correct", "abstention questions"], rows)
    )
    return "\n".join(parts)


def plots(results: dict[str, dict[int, dict[str, Any]]], out: Path) -> list[Path]:
    """Draw the PNG plots; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    made: list[Path] = []
    speed, mcp, quality = results["speed"], results["mcp"], results["quality"]

    fig, ax = plt.subplots(figsize=(7, 4))
    for label, runs, key in (
        ("in-process, 1-3 words", speed, "search_short"),
        ("in-process, sentence", speed, "search_sentence"),
        ("MCP stdio, 1-3 words", mcp, "search_short"),
        ("MCP stdio, sentence", mcp, "search_sentence"),
    ):
        sizes = sorted(s for s in runs if key in runs[s])
        if sizes:
            ax.plot(
                sizes, [runs[s][key]["p95_ms"] for s in sizes], marker="o", label=f"{label} p95"
            )
    sizes = sorted(s for s in quality if "search" in quality[s]["systems"].get("bm25s", {}))
    if sizes:
        ax.plot(
            sizes,
            [quality[s]["systems"]["bm25s"]["search"]["p95_ms"] for s in sizes],
            marker="s",
            linestyle="--",
            label="bm25s p95",
        )
    ax.axhline(10, color="grey", linewidth=0.8, linestyle=":")
    ax.axhline(50, color="grey", linewidth=0.8, linestyle=":")
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="memories",
        ylabel="ms",
        title="Search latency p95 (dotted: 10 ms and 50 ms targets)",
    )
    ax.legend(fontsize=7)
    made.append(_save(fig, out / "search-latency.png"))

    fig, ax = plt.subplots(figsize=(7, 4))
    for name, marker in (("vault_tool", "o"), ("bm25s", "s"), ("basic_memory", "^")):
        sizes = sorted(s for s in quality if "index_s" in quality[s]["systems"].get(name, {}))
        if sizes:
            ax.plot(
                sizes,
                [quality[s]["systems"][name]["index_s"] for s in sizes],
                marker=marker,
                label=name,
            )
    ax.set(
        xscale="log", yscale="log", xlabel="memories", ylabel="seconds", title="Full index build"
    )
    ax.legend(fontsize=8)
    made.append(_save(fig, out / "index-time.png"))

    if quality:
        sizes = sorted(quality)
        fig, axes = plt.subplots(len(sizes), 1, figsize=(8, 3.2 * len(sizes)), squeeze=False)
        for ax, size in zip(axes[:, 0], sizes, strict=True):
            systems = {k: v for k, v in quality[size]["systems"].items() if "held_out" in v}
            types = list(next(iter(systems.values()))["held_out"]["by_type"])
            width = 0.8 / max(1, len(systems))
            for i, (name, res) in enumerate(systems.items()):
                values = [res["held_out"]["by_type"].get(t, {}).get("ndcg@10", 0) for t in types]
                ax.bar([x + i * width for x in range(len(types))], values, width, label=name)
            ax.set_xticks([x + width * (len(systems) - 1) / 2 for x in range(len(types))])
            ax.set_xticklabels([t.replace("_", " ") for t in types], fontsize=8)
            ax.set(ylim=(0, 1.05), ylabel="nDCG@10", title=f"Held-out nDCG@10 by type, {size:,}")
            ax.legend(fontsize=7, loc="lower left")
        made.append(_save(fig, out / "quality-by-type.png"))

        fig, ax = plt.subplots(figsize=(7, 4))
        sizes = sorted(s for s in quality if quality[s].get("feedback"))
        labels, before, after = [], [], []
        for s in sizes:
            fb = quality[s]["feedback"]
            for part in ("tuning", "held_out"):
                labels.append(f"{s:,}\n{part}")
                before.append(fb["before"][part]["ndcg@10"])
                after.append(fb["after"][part]["ndcg@10"])
        xs = range(len(labels))
        ax.bar([x - 0.2 for x in xs], before, 0.4, label="before feedback")
        ax.bar([x + 0.2 for x in xs], after, 0.4, label="after feedback")
        ax.set_xticks(list(xs))
        ax.set_xticklabels(labels, fontsize=8)
        ax.set(ylim=(0, 1.05), ylabel="nDCG@10", title="Operator feedback on tuning questions")
        ax.legend(fontsize=8)
        made.append(_save(fig, out / "feedback.png"))

    if speed:
        fig, ax = plt.subplots(figsize=(7, 4))
        keys = [
            "remember_create",
            "remember_update",
            "remember_batch20",
            "hand_edit_searchable",
            "hand_edit_committed",
        ]
        sizes = sorted(speed)
        width = 0.8 / len(sizes)
        for i, s in enumerate(sizes):
            ax.bar(
                [x + i * width for x in range(len(keys))],
                [_get(speed[s], f"{k}.p50_ms") or 0 for k in keys],
                width,
                label=f"{s:,}",
            )
        ax.set_xticks([x + width * (len(sizes) - 1) / 2 for x in range(len(keys))])
        ax.set_xticklabels([k.replace("_", "\n") for k in keys], fontsize=8)
        ax.set(ylabel="ms (p50)", yscale="log", title="Writes and hand edits, in-process")
        ax.legend(fontsize=8)
        made.append(_save(fig, out / "writes.png"))
    return made


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


def update_doc(doc: Path, body: str, start: str = START, end: str = END) -> None:
    """Replace one generated section of the doc (between its markers)."""
    text = doc.read_text(encoding="utf-8") if doc.exists() else f"{start}\n{end}\n"
    if start not in text or end not in text:
        text += f"\n{start}\n{end}\n"
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    doc.write_text(f"{head}{start}\n{body}{end}{tail}", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--doc", type=Path, default=ROOT / "docs" / "benchmarks.md")
    parser.add_argument("--img", type=Path, default=ROOT / "docs" / "img")
    parser.add_argument(
        "--only-targets",
        action="store_true",
        help="rewrite only the targets table (from targets-N.json), keeping the other tables",
    )
    args = parser.parse_args()
    results = load(args.results)
    if results["targets"]:
        update_doc(args.doc, target_limits.markdown(results["targets"]), TARGETS_START, TARGETS_END)
    if not args.only_targets:
        update_doc(args.doc, markdown_tables(results))
        for path in plots(results, args.img):
            print("drew", path)
    print("updated", args.doc)


if __name__ == "__main__":
    main()
