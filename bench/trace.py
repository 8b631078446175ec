"""What one tool call passes through: the modules and Python function calls of a `search`
and a `remember` create, traced on the calling thread of a warm vault.

    python -m bench.trace [--count 1000] [--json]

Makes a person's notes folder of --count notes (bench.notes) a vault, warms it (one search,
one create, the server's idle warm), then traces each call as the stdio server makes it
(server/tools.run_tool, the engine and everything below) with sys.setprofile: every
Python function entered counts as a call; a module counts when one of its functions runs.
Printed: the vault_tool modules passed, every module passed (the standard library and
dependencies too), and the calls.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from bench import notes

# Three words of the notes' vocabulary (bench.notes: the same seed every run), one common.
SEARCH = {"query": "", "top_k": 5}


def remember_args(n: int) -> dict[str, Any]:
    title = f"Ana owns the billing service {n}"
    return {
        "mode": "create",
        "content_md": f"# {title}\n\nShe took it over from Bo in week {n}.\n",
        "semantic_delta": {
            "memory_type": "decision",
            "title": title,
            "entities": [
                {"n": "Ana", "kind": "person", "is": "backend engineer on the platform team"},
                {"n": "billing service", "kind": "service", "is": "the service for invoices"},
            ],
            "facts": [{"subject": "Ana", "predicate": "owns", "object": "billing service"}],
            "tags": ["billing"],
        },
    }


def traced(call: Any) -> dict[str, Any]:
    """The modules and function calls of call(), on this thread."""
    calls: Counter = Counter()

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            calls[frame.f_globals.get("__name__", "?")] += 1

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    ours = sorted(name for name in calls if name.startswith("vault_tool"))
    return {
        "vault_tool_modules": len(ours),
        "modules": len(calls),
        "calls": sum(calls.values()),
        "vault_tool_calls": sum(calls[name] for name in ours),
        "vault_tool_module_names": ours,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()

    from vault_tool.engine.vault import Vault
    from vault_tool.server.tools import run_tool

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "vault"
        notes.write_notes(root, options.count)
        Vault.create(root)
        first = sorted(root.rglob("*.md"))[len(list(root.rglob("*.md"))) // 2]
        SEARCH["query"] = " ".join(re.findall(r"[a-z]{4,}", first.read_text())[-3:])
        with Vault.open(root) as vault:
            assert run_tool(vault, "search", SEARCH, client="bench").structured["total_matches"]
            assert not run_tool(vault, "remember", remember_args(0), client="bench").is_error
            vault.warm_search(lambda: False)
            found = {
                "search": traced(lambda: run_tool(vault, "search", SEARCH, client="bench")),
                "remember create": traced(
                    lambda: run_tool(vault, "remember", remember_args(1), client="bench")
                ),
            }
    if options.json:
        print(json.dumps(found, indent=2))
        return
    print(f"{'call':<16} {'vault_tool modules':>18} {'calls':>7} {'all modules':>12} {'calls':>7}")
    for name, figures in found.items():
        print(
            f"{name:<16} {figures['vault_tool_modules']:>18} {figures['vault_tool_calls']:>7} "
            f"{figures['modules']:>12} {figures['calls']:>7}"
        )


if __name__ == "__main__":
    main()
