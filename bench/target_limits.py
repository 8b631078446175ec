"""The speed targets: what each one measures, its limit at a vault size, and its floor.

Limits are the ones docs/benchmarks.md states for 10,000 hand-made notes. Reindex scales
with the vault (8 s per 10,000 notes up to 10,000; 90 s per 100,000 beyond); search's p95
may reach 30 ms at 100,000; every other limit holds at any size.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def _at(results: dict[str, Any], dotted: str | None) -> float | None:
    """results["a"]["b"] for "a.b"; None when a part is missing (a figure not measured)."""
    if dotted is None:
        return None
    value: Any = results
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return None if value is None else float(value)


@dataclass(frozen=True)
class Target:
    what: str
    unit: str
    figure_key: str
    limit: Callable[[dict[str, Any]], float]
    floor_key: str | None = None

    def figure(self, results: dict[str, Any]) -> float | None:
        return _at(results, self.figure_key)

    def floor(self, results: dict[str, Any]) -> float | None:
        return _at(results, self.floor_key)


def _reindex_limit(results: dict[str, Any]) -> float:
    count = results["count"]
    return round(8 * count / 10_000 if count <= 10_000 else 90 * count / 100_000, 2)


def _ping_plus(extra: float) -> Callable[[dict[str, Any]], float]:
    return lambda results: round((_at(results, "floor_ping.p50_ms") or 0.0) + extra, 2)


def _search_p95(results: dict[str, Any]) -> float:
    return 8 if results["count"] <= 10_000 else 30


def _fixed(limit: float) -> Callable[[dict[str, Any]], float]:
    return lambda results: limit


TARGETS = (
    Target("reindex", "s", "reindex_s", _reindex_limit, "floor_read_notes_s"),
    Target(
        "spawn -> tools/list, p50",
        "ms",
        "start_to_tools_list.p50_ms",
        _fixed(400),
        "floor_python_start.p50_ms",
    ),
    Target(
        "spawn -> first search, p50",
        "ms",
        "start_to_first_search.p50_ms",
        _fixed(800),
        "floor_python_start.p50_ms",
    ),
    Target("tools/list payload", "chars", "tools_list_chars", _fixed(8150)),
    Target(
        "search in the server, p50",
        "ms",
        "search_in_server.p50_ms",
        _fixed(3),
        "floor_bm25s.p50_ms",
    ),
    Target(
        "search in the server, p95",
        "ms",
        "search_in_server.p95_ms",
        _search_p95,
        "floor_bm25s.p95_ms",
    ),
    Target(
        "... each query asked the first time, p50",
        "ms",
        "search_first_in_server.p50_ms",
        _fixed(3),
        "floor_bm25s.p50_ms",
    ),
    Target(
        "... each query asked the first time, p95",
        "ms",
        "search_first_in_server.p95_ms",
        _search_p95,
        "floor_bm25s.p95_ms",
    ),
    Target("search over stdio, p50", "ms", "search.p50_ms", _ping_plus(4), "floor_ping.p50_ms"),
    Target(
        "stress search over stdio, p95",
        "ms",
        "stress_search.p95_ms",
        _fixed(15),
        "stress_floor_ping.p95_ms",
    ),
    Target(
        "... each query asked the first time, p95",
        "ms",
        "stress_search_first.p95_ms",
        _fixed(15),
        "stress_floor_ping.p95_ms",
    ),
    Target(
        "remember create, p50", "ms", "remember_create.p50_ms", _fixed(30), "floor_git_write.p50_ms"
    ),
    Target(
        "remember create, p95", "ms", "remember_create.p95_ms", _fixed(60), "floor_git_write.p95_ms"
    ),
    Target(
        "remember update, p50", "ms", "remember_update.p50_ms", _fixed(30), "floor_git_write.p50_ms"
    ),
    Target(
        "remember update, p95", "ms", "remember_update.p95_ms", _fixed(60), "floor_git_write.p95_ms"
    ),
    Target(
        "remember 20-item batch, p50",
        "ms",
        "remember_batch20.p50_ms",
        _fixed(120),
        "floor_git_write.p50_ms",
    ),
    Target(
        "hand edit -> searchable, p95",
        "ms",
        "hand_edit_searchable.p95_ms",
        _fixed(600),
        "floor_quiet_period_ms",
    ),
    Target("server peak memory", "MB", "server_peak_rss_mb", _fixed(160)),
)


def _cell(target: Target, results: dict[str, Any]) -> str:
    figure = target.figure(results)
    if figure is None:
        return "–"
    limit, floor = target.limit(results), target.floor(results)
    verdict = "met" if figure <= limit else "**not met**"
    against = f"; floor {floor:g}, {figure / floor:.1f}×" if floor else ""
    return f"{figure:g} (≤ {limit:g}{against}) {verdict}"


def markdown(by_size: dict[int, dict[str, Any]]) -> str:
    """The targets table for docs/benchmarks.md: one row per target, one column per size."""
    sizes = sorted(by_size)
    lines = [
        "| target | " + " | ".join(f"{size:,} notes" for size in sizes) + " |",
        "|---|" + "---|" * len(sizes),
    ]
    for target in TARGETS:
        cells = [_cell(target, by_size[size]) for size in sizes]
        lines.append(f"| {target.what} ({target.unit}) | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
