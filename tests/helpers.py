"""Helpers shared by tests: waiting, running git, capturing a vault's visible state, valid calls."""

from __future__ import annotations

import inspect
import os
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def eventually(
    condition: Callable[[], T],
    timeout: float = 30.0,
    interval: float = 0.02,
    *,
    what: str | None = None,
) -> T:
    """Call condition until it returns something truthy and return it; fail after timeout s."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(_timed_out(condition, what, timeout, value))
        time.sleep(min(interval, left))


async def eventually_async(
    condition: Callable[[], Awaitable[T]],
    timeout: float = 30.0,
    interval: float = 0.02,
    *,
    what: str | None = None,
) -> T:
    """eventually() for a condition that must be awaited (a call over an MCP session)."""
    import anyio

    deadline = time.monotonic() + timeout
    while True:
        value = await condition()
        if value:
            return value
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(_timed_out(condition, what, timeout, value))
        await anyio.sleep(min(interval, left))


def _timed_out(condition: Callable, what: str | None, timeout: float, value: object) -> str:
    if what is None:
        try:
            what = " ".join(inspect.getsource(condition).split())
        except (OSError, TypeError):
            what = getattr(condition, "__qualname__", repr(condition))
    return f"timed out after {timeout:g} s waiting for {what[:300]} (last value: {value!r:.300})"


def git(path: Path, *args: str) -> str:
    """Run git in a vault and return its stdout."""
    return subprocess.run(
        ["git", *args], cwd=path, check=True, capture_output=True, text=True, env=os.environ.copy()
    ).stdout.strip()


def snapshot(path: Path) -> tuple[str, str, dict[str, bytes]]:
    """HEAD, `git status` and every file outside .git and .vault: the visible state."""
    files = {
        p.relative_to(path).as_posix(): p.read_bytes()
        for p in sorted(path.rglob("*"))
        if p.is_file() and not p.relative_to(path).as_posix().startswith((".git/", ".vault/"))
    }
    return git(path, "rev-parse", "HEAD"), git(path, "status", "--porcelain"), files


def delta(title: str = "Ana owns the billing service", **extra: object) -> dict:
    """A valid semantic delta."""
    base = {
        "memory_type": "decision",
        "title": title,
        "entities": [
            {"n": "Ana", "kind": "person", "is": "backend engineer on the platform team"},
            {"n": "billing service", "kind": "service", "is": "the service that issues invoices"},
        ],
        "facts": [{"subject": "Ana", "predicate": "owns", "object": "billing service"}],
        "tags": ["billing"],
    }
    base.update(extra)
    return base


def create_args(
    title: str = "Ana owns the billing service", body: str = "She took it over.", **extra: object
) -> dict:
    """A valid remember create call."""
    return {
        "mode": "create",
        "content_md": f"# {title}\n\n{body}\n",
        "semantic_delta": delta(title, **extra),
    }


def reason_of(vault: Any, path: str) -> str:
    """The recorded problem of a file ("" if none). A test waits for the reason it expects:
    on a busy machine the watcher may first read a file half-written (a problem of its own)."""
    return vault.problems().get(path, {}).get("reason", "")


def install_hook(vault_path: Path, name: str, script: str) -> None:
    """An executable git hook of the vault's repository running this shell script."""
    hook = vault_path / ".git" / "hooks" / name
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f"#!/bin/sh\n{script}\n")
    hook.chmod(0o755)
