"""The person at the keyboard: git run with a person's patience (when another git holds a
lock, wait and run it again), saves, commits by hand, the laptop clone, and what HEAD holds
of the person's paths. GitPerson (git_person.py) builds its actions from these.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tests.harness import consistency
from tests.harness.agents import Shared

# A bound on waits for the vault to do something (never a speed: the run fails past it).
SETTLE_TIMEOUT = 30.0
LOCK_RETRIES = 60
LAPTOP = ("-c", "user.name=Person on a laptop", "-c", "user.email=person@laptop.example")


def leader_pid(vault: Path) -> int | None:
    """The pid in leader.json, if that process lives (stopped counts as living)."""
    try:
        pid = int(json.loads((vault / ".vault" / "run" / "leader.json").read_text())["pid"])
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError, KeyError, TypeError):
        return None


def open_log_errors(root: Path) -> list[str]:
    """ERROR lines and tracebacks in server logs `git clean -xfd` removed from the folder
    that a live server still writes to, read through its open file descriptors."""
    problems = []
    wanted = str((root / ".vault" / "run").resolve())
    for fd in Path("/proc").glob("[0-9]*/fd/*"):
        try:
            target = os.readlink(fd)
            if not (target.startswith(wanted) and target.endswith("(deleted)")):
                continue
            if "server.log" not in target:
                continue
            text = fd.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        problems += [
            f"{Path(target).name}: {line}"  # the same file may be open in several servers
            for line in consistency.log_errors(text)
        ]
    return problems


class Hands:
    """The person's hands on one vault (and on its clone, the laptop)."""

    def __init__(self, shared: Shared, laptop: Path) -> None:
        self.shared = shared
        self.vault = shared.vault
        self.laptop = laptop

    def commit_by_hand(self, path: str, data: bytes, message: str) -> None:
        """Save, `git add`, `git commit -- path` (the tool may have committed it first)."""
        self.write(path, data)
        self.git("add", "--", path)
        done = self.git("commit", "-q", "-m", message, "--", path, check=False)
        if done.returncode != 0 and "nothing" not in out(done) and "no changes" not in out(done):
            raise RuntimeError(f"git commit -- {path} failed: {out(done)}")
        if path.endswith(".md"):
            self.record(path, data)
        if consistency.within(lambda: path not in self.uncommitted([path]), SETTLE_TIMEOUT) is None:
            raise RuntimeError(f"{path} not at its committed bytes in HEAD {self.head()}")

    def on_laptop(self, branch: str, path: str, data: bytes, push: bool = False) -> None:
        """The same note changed on the person's other clone, on a branch of the vault's main."""
        self.git("fetch", "-q", "origin", cwd=self.laptop)
        self.git("checkout", "-q", "-B", branch, "origin/main", cwd=self.laptop)
        (self.laptop / path).write_bytes(data)
        self.git("add", "--", path, cwd=self.laptop)
        self.git(*LAPTOP, "commit", "-q", "-m", f"{path} from the laptop", cwd=self.laptop)
        if push:
            self.git("push", "-q", "origin", branch, cwd=self.laptop)

    def until(self, attempt: Callable[[], subprocess.CompletedProcess], name: str) -> None:
        """Run a checkout until git lets it through (uncommitted edits block it for a while)."""
        last = None
        for _ in range(int(SETTLE_TIMEOUT / 0.3)):
            last = attempt()
            if last.returncode == 0:
                return
            self.count("git_checkout_retries")
            time.sleep(0.3)
        raise RuntimeError(f"{name}: git checkout kept failing: {out(last)}")

    def stash_push(self, name: str) -> None:
        """`git stash push` until it gets through: when another program's commit holds git's
        index lock, it fails before saving anything, or saves the stash and then cannot
        reset the folder (the edits are still there: the person drops it and stashes again)."""
        stash_top = lambda: self.git("rev-parse", "-q", "--verify", "refs/stash", check=False)  # noqa: E731
        done = None
        for _ in range(LOCK_RETRIES):
            before = stash_top().stdout.strip()
            done = self.git("stash", "push", "-m", f"wip {name}", check=False, tries=1)
            if done.returncode == 0:
                return
            if not lost_a_lock_race(done):
                break
            if stash_top().stdout.strip() != before:
                self.git("stash", "drop", "-q")
                self.count("git_stashes_saved_but_not_reset")
            self.count("git_stash_retries")
            time.sleep(0.1)
        listed = self.git("stash", "list", check=False).stdout.strip()
        status = self.git("status", "--porcelain", check=False).stdout.strip()
        raise RuntimeError(
            f"{name}: git stash push failed: {out(done)}; stash list {listed!r:.120}; "
            f"status {status!r:.200}"
        )

    def stash_pop(self, name: str) -> None:
        """`git stash pop` until it gets through the index lock (it changes nothing then)."""
        done = None
        for _ in range(LOCK_RETRIES):
            done = self.git("stash", "pop", check=False, tries=1)
            if done.returncode == 0:
                return
            if not lost_a_lock_race(done) or self.git("ls-files", "-u", check=False).stdout:
                break
            self.count("git_stash_pop_retries")
            time.sleep(0.1)
        status = self.git("status", "--porcelain", check=False).stdout.strip()
        raise RuntimeError(f"{name}: git stash pop failed: {out(done)}; status {status!r:.300}")

    def uncommitted(self, paths: Sequence[str] | None = None) -> list[str]:
        """The person's paths (all, or these) whose bytes, as last saved, HEAD does not hold."""
        from vault_tool.storage.git import blob_sha

        head = consistency.git(self.vault, "-c", "core.quotepath=off", "ls-tree", "-r", "HEAD")
        committed = {line.split("\t", 1)[1]: line.split()[2] for line in head.splitlines()}
        with self.shared.lock:
            hand = dict(self.shared.hand)
        left = []
        for path in hand if paths is None else paths:
            data = hand[path] if path in hand else self.disk(path)
            if data is None or committed.get(path) != blob_sha(data):
                left.append(path)
        return left

    def git(
        self,
        *args: str,
        cwd: Path | None = None,
        check: bool = True,
        env: dict | None = None,
        tries: int = LOCK_RETRIES,
    ) -> Any:
        """git as a person runs it: when another git holds a lock, wait and run it again
        (`tries` times). check: its stdout, or RuntimeError; else the CompletedProcess."""
        run_env = {**os.environ, **(env or {})}
        for attempt in range(tries):
            done = subprocess.run(
                ["git", *args], cwd=cwd or self.vault, capture_output=True, text=True, env=run_env
            )
            if done.returncode == 0 or not locked(done):
                break
            self.count("git_person_lock_retries")
            time.sleep(min(0.05 * (attempt + 1), 0.5))
        if not check:
            return done
        if done.returncode != 0:
            raise RuntimeError(
                f"git {' '.join(args)} failed ({done.returncode}; HEAD {self.head()}): {out(done)}"
            )
        return done.stdout.strip()

    def in_progress(self) -> str | None:
        """The operation git has stopped in the middle of, if any."""
        git_dir = self.vault / ".git"
        for name, marker in (("merge", "MERGE_HEAD"), ("rebase", "rebase-merge")):
            if (git_dir / marker).exists():
                return name
        return "rebase" if (git_dir / "rebase-apply").exists() else None

    def unmerged(self, path: str) -> bool:
        return bool(self.git("ls-files", "-u", "--", path, check=False).stdout.strip())

    def branch(self) -> str:
        return self.git("symbolic-ref", "-q", "--short", "HEAD", check=False).stdout.strip()

    def head(self) -> str:
        done = subprocess.run(
            ["git", "log", "-1", "--format=%h %s"], cwd=self.vault, capture_output=True, text=True
        )
        return done.stdout.strip()[:80]

    def disk(self, path: str) -> bytes | None:
        target = self.vault / path
        return target.read_bytes() if target.is_file() else None

    def write(self, path: str, data: bytes) -> None:
        target = self.vault / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    def record(self, path: str, data: bytes) -> None:
        with self.shared.lock:
            self.shared.hand[path] = data

    def count(self, what: str, n: int = 1) -> None:
        with self.shared.lock:
            self.shared.counts[what] += n


def locked(done: subprocess.CompletedProcess) -> bool:
    text = done.stderr + done.stdout
    # "cannot lock ref 'HEAD': is at X but expected Y": another commit moved HEAD meanwhile.
    return "cannot lock ref" in text or (
        ".lock" in text and ("File exists" in text or "Unable to" in text)
    )


# All git says when a step of `git stash` (push, pop, create; `git merge` runs `git stash
# create` first) finds git's index lock taken: it takes the lock without waiting, and quietly.
_QUIET_LOCK_FAILURES = {"fatal: stash failed", "The stash entry is kept in case you need it again."}


def lost_a_lock_race(done: subprocess.CompletedProcess) -> bool:
    """Whether git failed only because another program held one of git's locks meanwhile."""
    said = {line.strip() for line in (done.stdout + done.stderr).splitlines() if line.strip()}
    return locked(done) or (done.returncode != 0 and said <= _QUIET_LOCK_FAILURES)


def raced_a_write(done: subprocess.CompletedProcess) -> bool:
    """Whether git refused only because of the vault's own writes in flight: its index
    taken while it wrote it ("Unable to write index"), or files only agents write (under
    decision/) on disk and not yet committed ("would be overwritten")."""
    text = done.stdout + done.stderr
    if "Unable to write index" in text:
        return True
    if "would be overwritten by merge" not in text:
        return False
    listed = text.split("would be overwritten by merge:", 1)[1].split("Please", 1)[0]
    named = [w for w in listed.split() if "/" in w]
    return bool(named) and all(w.startswith("decision/") for w in named)


def raced_a_commit(done: subprocess.CompletedProcess) -> bool:
    """Whether git refused to begin only because a commit of the vault's was in flight: its
    files staged, or a hand edit not yet taken in, when git looked at the folder."""
    text = done.stdout + done.stderr
    return done.returncode != 0 and (
        "Your index contains uncommitted changes" in text or "You have unstaged changes" in text
    )


def out(done: subprocess.CompletedProcess | None) -> str:
    """What git said, on one line: its start and its end (where the error usually is)."""
    if done is None:
        return ""
    text = " ".join((done.stdout + " " + done.stderr).split())
    return text if len(text) <= 400 else f"{text[:150]} ... {text[-250:]}"
