"""The block an agent starts a session with: rules, pinned memories, current facts, and what
changed lately by day, cut to a character budget (the extended profile's session_context,
and `vault-tool context`).

The parts go in that order, one line a memory or fact, each line whole or not at all: what
must always hold first, then what a person pinned, then facts, then the recent memories,
newest day first. A line that would pass the budget ends the block there, and the result
says how many of each part it left out. Tokens are estimated at four characters each.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from vault_tool.core.projects import Scope
from vault_tool.core.times import valid_on
from vault_tool.search import listing
from vault_tool.search.index import Index

CHARS_PER_TOKEN = 4
PER_PART = 50  # memories read per part, at most: the budget cuts long before


def session_context(
    index: Index,
    *,
    max_chars: int,
    recent_days: int,
    max_facts: int,
    project: Scope | None = None,
    rules_here: Callable[[], set[str]] | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """The session-start block and its parts (see the module's docstring), of one project
    when asked (its memories; the rules whose ids rules_here gives)."""
    now = now or datetime.now(UTC)
    since = int((now - timedelta(days=recent_days)).timestamp())
    applying = rules_here() if rules_here is not None else None
    parts = index.read(lambda s: listing.session_parts(s, now, since, PER_PART, project, applying))
    day = now.date().isoformat()
    seen_facts: set[tuple[str, str, str]] = set()
    facts = []
    rules = {e["memory_id"] for e in parts["rules"]}
    parts["pinned"] = [e for e in parts["pinned"] if e["memory_id"] not in rules]
    for entry in [*parts["rules"], *parts["pinned"], *parts["recent"]]:
        if entry["superseded"]:
            continue  # its facts are replaced: the replacing memory's say what holds
        for fact in entry["facts"]:
            said = (fact["subject"], fact["predicate"], fact["object"])
            if valid_on(fact, day) and said not in seen_facts and len(facts) < max_facts:
                seen_facts.add(said)
                facts.append({**fact, "memory_id": entry["memory_id"]})
    by_day: dict[str, list[dict[str, Any]]] = {}
    shown = {e["memory_id"] for e in [*parts["rules"], *parts["pinned"]]}
    for entry in parts["recent"]:
        if entry["memory_id"] not in shown:
            by_day.setdefault(entry["updated"][:10], []).append(entry)
    lines, left_out = _cut(parts, facts, by_day, max_chars)
    block = "\n".join(lines)
    return {
        **({"project": project.name} if project else {}),
        "block": block,
        "chars": len(block),
        "tokens_estimate": -(-len(block) // CHARS_PER_TOKEN),
        "rules": [_brief(e) for e in parts["rules"]],
        "pinned": [_brief(e) for e in parts["pinned"]],
        "facts": facts,
        "recent": [{"day": d, "memories": [_brief(e) for e in es]} for d, es in by_day.items()],
        "left_out": left_out,
        "truncated": any(left_out.values()),
    }


def _cut(
    parts: dict[str, list[dict[str, Any]]],
    facts: list[dict[str, Any]],
    by_day: dict[str, list[dict[str, Any]]],
    max_chars: int,
) -> tuple[list[str], dict[str, int]]:
    """The block's lines within max_chars, and how many items of each part did not fit."""
    sections: list[tuple[str, str, list[str]]] = [
        ("rules", "## Rules", [_line(e) for e in parts["rules"]]),
        ("pinned", "## Pinned", [_line(e) for e in parts["pinned"]]),
        ("facts", "## Current facts", [_fact_line(f) for f in facts]),
    ]
    for day, entries in by_day.items():
        sections.append(("recent", f"## Updated {day}", [_line(e) for e in entries]))
    lines: list[str] = []
    used = 0
    left_out = {"rules": 0, "pinned": 0, "facts": 0, "recent": 0}
    full = False
    for name, heading, items in sections:
        if not items:
            continue
        if full or used + len(heading) + 1 + len(items[0]) + 1 > max_chars:
            full = True
            left_out[name] += len(items)
            continue
        lines.append(heading)
        used += len(heading) + 1
        for n, item in enumerate(items):
            if used + len(item) + 1 > max_chars:
                full = True
                left_out[name] += len(items) - n
                break
            lines.append(item)
            used += len(item) + 1
    return lines, left_out


def _line(entry: dict[str, Any]) -> str:
    return f"- {entry['title']} ({entry['memory_type']}, id {entry['memory_id']})"


def _fact_line(fact: dict[str, Any]) -> str:
    return f"- {fact['subject']} {fact['predicate'].replace('_', ' ')} {fact['object']}"


def _brief(entry: dict[str, Any]) -> dict[str, Any]:
    keep = ("memory_id", "version_id", "memory_type", "title", "path", "updated")
    return {k: entry[k] for k in keep}
