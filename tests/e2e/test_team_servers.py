"""Servers on clones of one team vault, driven by the official MCP client: what an agent
writes on one clone is found by the agent on another once they sync, in the foreground
(`vault-tool sync`) or in the background (`serve --sync-every`), and a storm of syncs
while agents write ends with every clone holding the same files."""

from __future__ import annotations

import contextlib
import functools
import os
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.cli_support import invoke
from tests.clones import fact, memory_args, memory_problems, team, tree
from tests.e2e.mcp_client import (  # noqa: F401 (anyio_backend is a fixture)
    anyio_backend,
    stdio_session,
)
from tests.helpers import eventually_async, git
from vault_tool.engine.vault import Vault

pytestmark = pytest.mark.anyio

# The storm's length: a minute is the full run (VAULT_TOOL_STORM_SECONDS=60); CI runs less.
STORM_SECONDS = float(os.environ.get("VAULT_TOOL_STORM_SECONDS", "15"))


async def _found(session, memory_id: str) -> dict | None:
    read = await session.call_tool("search", {"memory_id": memory_id})
    return None if read.is_error else read.structured_content


async def _update(session, read: dict, new_fact: dict, tag: str, body_change=None) -> Any:
    """An update adding a fact (its names declared) and a tag, the body changed or not."""
    delta = read["semantic_delta"]
    names = {e["n"] for e in delta["entities"]}
    entities = delta["entities"] + [
        {"n": n, "kind": "thing", "is": f"what the team calls {n}"}
        for n in dict.fromkeys((new_fact["subject"], new_fact["object"]))
        if n not in names
    ]
    return await session.call_tool(
        "remember",
        {
            "mode": "update",
            "memory_id": read["memory_id"],
            "expected_version_id": read["version_id"],
            "content_md": (body_change or (lambda body: body))(read["content_md"]),
            "semantic_delta": {
                **delta,
                "entities": entities,
                "facts": [*delta["facts"], new_fact],
                "tags": list(dict.fromkeys([*delta["tags"], tag])),
            },
        },
    )


async def _add_fact(session, memory_id: str, new_fact: dict) -> None:
    """Add a fact to a memory as an agent would: read, update; read again when a sync's
    merge changed it meanwhile (version_conflict) or git was busy merging (vault_busy)."""
    for _ in range(20):
        read = await _found(session, memory_id)
        done = await _update(session, read, new_fact, "storm") if read else None
        if done is not None and not done.is_error:
            return
        code = done.structured_content["error"]["code"] if done is not None else "not_found"
        assert code in ("version_conflict", "vault_busy", "not_found"), done.structured_content
        await anyio.sleep(0.2)
    last = done.structured_content if done is not None else None
    raise AssertionError(f"could not add {new_fact} to {memory_id}: {last}")


async def _create(session, title: str, text: str, k: int, n: int) -> str:
    """A storm's memory by clone k in round n: its id."""
    made = await session.call_tool(
        "remember",
        memory_args(
            title, f"# {title}\n\n{text}\n", [fact(f"clone {k}", "wrote", f"note {n}")], ["storm"]
        ),
    )
    assert not made.is_error, made.structured_content
    return made.structured_content["memory_id"]


async def _append_item(session, item: str) -> None:
    """Add an item to the work state list as an agent should: read, write with the read's
    version; read again when a sync's merge changed the list meanwhile."""
    for _ in range(20):
        held = (await session.call_tool("work_state_read", {"name": "todo"})).structured_content
        args = {"name": "todo", "items": [*held["items"], item]}
        if held["exists"]:
            args["expected_version_id"] = held["version_id"]
        done = await session.call_tool("work_state_write", args)
        if not done.is_error:
            return
        code = done.structured_content["error"]["code"]
        assert code in ("version_conflict", "vault_busy"), done.structured_content
        await anyio.sleep(0.2)
    raise AssertionError(f"could not add {item}: {done.structured_content}")


async def _holds_facts(session, memory_id: str, wanted: set[tuple[str, str]]) -> bool:
    read = await _found(session, memory_id)
    held = (
        {(f["subject"], f["predicate"]) for f in read["semantic_delta"]["facts"]} if read else set()
    )
    return wanted <= held


async def test_a_write_on_one_clone_is_found_on_the_other_after_a_sync(tmp_path: Path):
    _, (a_path, b_path) = team(tmp_path)
    async with stdio_session(a_path) as (a, _), stdio_session(b_path) as (b, _):
        made = (
            await a.call_tool(
                "remember",
                memory_args(
                    "Invoice run moved",
                    "# Invoice run moved\n\nTo the 2nd of the month.\n",
                    [fact("invoice run", "moved_to", "the 2nd")],
                    ["billing"],
                ),
            )
        ).structured_content
        for path in (a_path, b_path):
            done = invoke("sync", "--vault", path)
            assert done.exit_code == 0, done.stdout + done.stderr

        async def hit() -> dict | None:
            found = (await b.call_tool("search", {"query": "invoice run moved"})).structured_content
            return found if found["selected_hits"] else None

        found = await eventually_async(hit, timeout=15, interval=0.1, what="the synced memory")
        assert found["selected_hits"][0]["memory_id"] == made["memory_id"]
        read = await eventually_async(lambda: _found(b, made["memory_id"]), timeout=15)
        assert read["version_id"] == made["version_id"]  # the same commit: a merge keeps ids


async def test_a_sync_storm_while_agents_write_ends_converged(tmp_path: Path):
    _, clones = team(tmp_path, members=3)
    written: list[str] = []
    added: dict[str, list[dict]] = {}  # shared memory -> the facts the clones added to it
    with Vault.open(clones[0], client="setup") as first:
        # A few memories every clone adds facts to (a memory holds at most 100 facts).
        shared = [
            first.remember(
                memory_args(
                    f"Storm log {j}",
                    f"# Storm log {j}\n\nEvery clone adds.\n",
                    [fact("storm", "started", "today")],
                    ["storm"],
                )
            )["memory_id"]
            for j in range(4)
        ]
        added = {memory_id: [] for memory_id in shared}
        first.team.sync()
    for path in clones[1:]:
        with Vault.open(path) as other:
            other.team.sync()
    async with contextlib.AsyncExitStack() as stack:
        every = ("--sync-every", "1s")
        opened = [await stack.enter_async_context(stdio_session(p, options=every)) for p in clones]
        sessions = [session for session, _ in opened]
        started = time.monotonic()
        n = 0
        while time.monotonic() - started < STORM_SECONDS:
            for k, session in enumerate(sessions):
                n += 1
                title = f"Storm note {n} from clone {k}"
                written.append(await _create(session, title, "Written during the storm.", k, n))
                target = shared[n % len(shared)]
                added[target].append(fact(f"clone {k}", f"added_line_{n}", "storm"))
                await _add_fact(session, target, added[target][-1])
            await anyio.sleep(0.3)

        # Writes stop; the background syncs go on until every clone holds the same tree.
        async def converged() -> bool:
            heads = {tree(path) for path in clones}
            remote = git(clones[0], "ls-remote", "origin", "refs/heads/main").split()[0]
            return len(heads) == 1 and all(
                git(path, "rev-parse", "HEAD") == remote for path in clones
            )

        await eventually_async(converged, timeout=60, interval=0.5, what="the clones to converge")
        for session in sessions:
            for memory_id in written:
                assert await eventually_async(
                    functools.partial(_found, session, memory_id), timeout=15
                )
            for memory_id, facts_added in added.items():
                # Every fact each clone added to a shared memory is there, on every clone.
                wanted = {(f["subject"], f["predicate"]) for f in facts_added}
                await eventually_async(
                    functools.partial(_holds_facts, session, memory_id, wanted), timeout=15
                )
    for path in clones:
        assert memory_problems(path) == []
        # Sync commits nothing but merges: every other commit is an agent's write.
        assert git(path, "log", "--no-merges", "--grep", "Client: sync", "--format=%h") == ""
        log = git(path, "log", "--no-merges", "--format=%s").splitlines()
        assert sum(s.startswith("Create decision: Storm note") for s in log) == len(written)


async def test_updates_through_two_servers_and_a_persons_pull_merge_fact_by_fact(tmp_path: Path):
    _, (a_path, b_path) = team(tmp_path)
    async with stdio_session(a_path) as (a, _), stdio_session(b_path) as (b, _):
        made = (
            await a.call_tool(
                "remember",
                memory_args(
                    "Billing on-call",
                    "# Billing on-call\n\nAna is on call.\n\nPages go to #billing.\n",
                    [fact("Ana", "is_on_call_for", "billing")],
                    ["on-call"],
                ),
            )
        ).structured_content
        assert invoke("sync", "--vault", a_path).exit_code == 0
        assert invoke("sync", "--vault", b_path).exit_code == 0
        b_read = await eventually_async(functools.partial(_found, b, made["memory_id"]))

        a_read = await _found(a, made["memory_id"])
        await _update(
            a,
            a_read,
            fact("Ben", "backs_up", "Ana"),
            "backup",
            lambda body: body.replace("Ana is on call.", "Ana is on call this week."),
        )
        await _update(
            b,
            b_read,
            fact("billing", "pages", "#billing"),
            "pager",
            lambda body: body.replace("Pages go to #billing.", "Pages go to #billing-oncall."),
        )
        assert invoke("sync", "--vault", a_path).exit_code == 0
        # B's person pulls with plain git while B's server runs: its watcher takes it in.
        git(b_path, "pull", "--no-rebase", "--quiet", "--no-edit")

        async def merged() -> dict | None:
            read = await _found(b, made["memory_id"])
            facts = {f["subject"] for f in read["semantic_delta"]["facts"]} if read else set()
            return read if {"Ana", "Ben", "billing"} <= facts else None

        read = await eventually_async(merged, timeout=15, interval=0.1, what="the pulled merge")
        assert set(read["semantic_delta"]["tags"]) == {"on-call", "backup", "pager"}
        assert "this week" in read["content_md"] and "#billing-oncall" in read["content_md"]
        assert memory_problems(b_path) == []


async def test_a_storm_with_agents_and_a_person_on_both_clones_loses_nothing(tmp_path: Path):
    """Two clones, each with a server syncing every second, an agent and a person. The
    agents create memories with the same titles at the same moments (one path, two ids),
    write the same work state list, and add facts to a shared memory; the persons write
    notes by hand with tags in their own case and script. Every sync goes through (none
    stops on a file the tool wrote), and every memory, fact, tag and list item is there."""
    _, clones = team(tmp_path, members=2)
    with Vault.open(clones[0], client="setup") as first:
        shared = first.remember(
            memory_args(
                "Storm ledger",
                "# Storm ledger\n\nBoth add.\n",
                [fact("storm", "started", "today")],
                ["storm"],
            )
        )["memory_id"]
        first.team.sync()
    with Vault.open(clones[1]) as other:
        other.team.sync()
    made: list[str] = []
    facts_added: list[dict] = []
    items: list[str] = []
    hand_tags: dict[Path, list[str]] = {path: [] for path in clones}
    async with contextlib.AsyncExitStack() as stack:
        options = ("--sync-every", "1s", "--tools", "extended", "--project", "ops")
        sessions = [
            (await stack.enter_async_context(stdio_session(p, options=options)))[0] for p in clones
        ]
        started, n = time.monotonic(), 0
        while time.monotonic() - started < STORM_SECONDS:
            n += 1
            for k, (path, session) in enumerate(zip(clones, sessions, strict=True)):
                title = f"Same title {n}"  # on both clones: one path, two memories
                made.append(await _create(session, title, f"Clone {k} wrote this.", k, n))
                facts_added.append(fact(f"clone {k}", f"added_{n}", "ledger"))
                await _add_fact(session, shared, facts_added[-1])
                items.append(f"item {n} from {k}")
                await _append_item(session, items[-1])
                # The person: a note of their own, its tags in their case and script.
                tag = ["Reise", "旅行", "Café", "URGENT"][n % 4] + f"-{n}"
                hand_tags[path].append(tag)
                note = path / f"journal-{k}.md"
                note.write_text(
                    f"---\ntitle: Journal {k}\ntags: [{', '.join(hand_tags[path])}]\n---\n"
                    f"# Journal {k}\n\nEntry {n}.\n",
                    encoding="utf-8",
                )
            await anyio.sleep(0.3)

        async def converged() -> bool:
            heads = {tree(path) for path in clones}
            remote = git(clones[0], "ls-remote", "origin", "refs/heads/main").split()[0]
            clean = all(git(path, "status", "--porcelain") == "" for path in clones)
            return (
                clean
                and len(heads) == 1
                and all(git(path, "rev-parse", "HEAD") == remote for path in clones)
            )

        await eventually_async(converged, timeout=90, interval=0.5, what="the clones to converge")
        for session in sessions:
            for memory_id in made:
                assert await eventually_async(
                    functools.partial(_found, session, memory_id), timeout=15
                )
            wanted = {(f["subject"], f["predicate"]) for f in facts_added}
            await eventually_async(
                functools.partial(_holds_facts, session, shared, wanted), timeout=15
            )
            listed = await session.call_tool("work_state_read", {"name": "todo"})
            assert set(items) <= set(listed.structured_content["items"])
    for path in clones:
        assert memory_problems(path) == []
        for k, other in enumerate(clones):
            text = (path / f"journal-{k}.md").read_text(encoding="utf-8")
            assert all(tag in text for tag in hand_tags[other]), (path.name, k)
    print(f"\nstorm: {len(made)} memories ({len(made) // 2} paths shared), "
          f"{len(facts_added)} facts, {len(items)} list items, "
          f"{sum(map(len, hand_tags.values()))} hand tags; 0 lost")  # fmt: skip
