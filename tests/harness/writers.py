"""The processes the crash harness starts and kills, and what they write.

    python -m tests.harness.writers VAULT TAG SEED LIVE_FILE

runs the engine writer: it opens the vault and loops over creates, batches, updates and
deletes of the memories listed in LIVE_FILE (JSON) and its own, printing `READY` once open
and `ACK <json>` after every acknowledged write, until it is killed. drive_server() plays
the same part against a `vault-tool serve` over raw JSON-RPC on its stdio.
"""

from __future__ import annotations

import contextlib
import json
import random
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from tests.harness import consistency


def body(title: str, revision: int, tag: str) -> str:
    """Content whose revision counter the checks read back."""
    return f"# {title}\n\nRevision {revision} by {tag}.\n"


def delta(title: str) -> dict[str, Any]:
    """A valid semantic delta."""
    return {
        "memory_type": "decision",
        "title": title,
        "entities": [
            {"n": "Ana", "kind": "person", "is": "backend engineer"},
            {"n": "billing", "kind": "service", "is": "issues invoices"},
        ],
        "facts": [{"subject": "Ana", "predicate": "owns", "object": "billing"}],
    }


# --- the processes that get killed ---------------------------------------------------------


def child_writer(vault_path: str, tag: str, seed: int, live_file: str) -> None:
    """The engine in a loop; prints `ACK <json>` after every acknowledged write."""
    from vault_tool.engine.vault import Vault

    rng = random.Random(seed)
    live: list[str] = json.loads(Path(live_file).read_text())
    vault = Vault.open(vault_path, client=f"crash-{tag}")
    print("READY", flush=True)
    n = 0
    while True:
        n += 1
        roll = rng.random()
        if roll < 0.35 or len(live) < 3:
            title = f"{tag} memory {n}"
            result = vault.remember(
                {
                    "mode": "create",
                    "content_md": body(title, 1, tag),
                    "semantic_delta": delta(title),
                }
            )
            live.append(result["memory_id"])
            _ack("write", result["memory_id"], result["version_id"], 1)
        elif roll < 0.55:
            items = []
            for k in range(rng.randint(2, 5)):
                title = f"{tag} batch {n} item {k}"
                items.append({"content_md": body(title, 1, tag), "semantic_delta": delta(title)})
            done = vault.remember({"mode": "create", "items": items})
            for item in done["results"]:
                live.append(item["memory_id"])
                _ack("write", item["memory_id"], item["version_id"], 1)
        elif roll < 0.85:
            memory_id = rng.choice(live)
            current = _read_live(vault, memory_id, live)
            if current is None:
                continue
            found = consistency.REVISION_RE.search(current["content_md"])
            revision = (int(found.group(1)) if found else 0) + 1
            title = current["title"]
            result = vault.remember(
                {
                    "mode": "update",
                    "memory_id": memory_id,
                    "expected_version_id": current["version_id"],
                    "content_md": body(title, revision, tag),
                    "semantic_delta": delta(title),
                }
            )
            _ack("write", memory_id, result["version_id"], revision)
        else:
            memory_id = live[rng.randrange(len(live))]
            current = _read_live(vault, memory_id, live)
            if current is None:
                continue
            live.remove(memory_id)
            result = vault.remember(
                {
                    "mode": "delete",
                    "memory_id": memory_id,
                    "expected_version_id": current["version_id"],
                }
            )
            _ack("delete", memory_id, result["version_id"], 0)


def _read_live(vault: Any, memory_id: str, live: list[str]) -> dict[str, Any] | None:
    """The memory, or None (and out of live) if it was deleted: a write killed after its
    commit and before its acknowledgement deletes one the harness still lists."""
    from vault_tool.errors import NotFound

    try:
        return vault.read(memory_id)
    except NotFound:
        live.remove(memory_id)
        return None


def _ack(kind: str, memory_id: str, version: str, revision: int) -> None:
    record = {"kind": kind, "id": memory_id, "version": version, "revision": revision}
    print("ACK " + json.dumps(record), flush=True)


def drive_server(
    process: subprocess.Popen,
    tag: str,
    live: list[str],
    seed: int,
    acks: list[dict[str, Any]],
    stop: threading.Event,
) -> None:
    """Raw JSON-RPC over the server's stdio: one call at a time, acks on each answer."""
    rng = random.Random(seed)
    live = list(live)
    request_id = 0

    def call(method: str, params: dict[str, Any] | None = None) -> dict[str, Any] | None:
        nonlocal request_id
        request_id += 1
        message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            process.stdin.write(json.dumps(message) + "\n")  # type: ignore[union-attr]
            process.stdin.flush()  # type: ignore[union-attr]
            while True:
                line = process.stdout.readline()  # type: ignore[union-attr]
                if not line.endswith("\n"):
                    return None
                answer = json.loads(line)
                if answer.get("id") == request_id:
                    return answer
        except (OSError, ValueError):
            return None

    def tool(name: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        answer = call("tools/call", {"name": name, "arguments": arguments})
        if answer is None or "result" not in answer or answer["result"].get("isError"):
            return None
        return answer["result"]["structuredContent"]

    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": f"crash-{tag}", "version": "1"},
    }
    if call("initialize", init) is None:
        return
    with contextlib.suppress(OSError, ValueError):
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        process.stdin.write(json.dumps(note) + "\n")  # type: ignore[union-attr]
        process.stdin.flush()  # type: ignore[union-attr]
    n = 0
    while not stop.is_set():
        n += 1
        roll = rng.random()
        if roll < 0.5 or len(live) < 2:
            title = f"{tag} served {n}"
            result = tool(
                "remember",
                {
                    "mode": "create",
                    "content_md": body(title, 1, tag),
                    "semantic_delta": delta(title),
                },
            )
            if result:
                live.append(result["memory_id"])
                acks.append(
                    {
                        "kind": "write",
                        "id": result["memory_id"],
                        "version": result["version_id"],
                        "revision": 1,
                    }
                )
            continue
        memory_id = rng.choice(live)
        current = tool("search", {"memory_id": memory_id})
        if current is None:
            continue
        if roll < 0.85:
            found = consistency.REVISION_RE.search(current["content_md"])
            revision = (int(found.group(1)) if found else 0) + 1
            result = tool(
                "remember",
                {
                    "mode": "update",
                    "memory_id": memory_id,
                    "expected_version_id": current["version_id"],
                    "content_md": body(current["title"], revision, tag),
                    "semantic_delta": delta(current["title"]),
                },
            )
            if result:
                acks.append(
                    {
                        "kind": "write",
                        "id": memory_id,
                        "version": result["version_id"],
                        "revision": revision,
                    }
                )
        else:
            result = tool(
                "remember",
                {
                    "mode": "delete",
                    "memory_id": memory_id,
                    "expected_version_id": current["version_id"],
                },
            )
            if result:
                live.remove(memory_id)
                acks.append(
                    {
                        "kind": "delete",
                        "id": memory_id,
                        "version": result["version_id"],
                        "revision": 0,
                    }
                )


def main() -> None:
    """The engine writer, with the arguments the harness gives it."""
    child_writer(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])


if __name__ == "__main__":
    main()
