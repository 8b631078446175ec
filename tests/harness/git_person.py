"""The person's git in the torture: merges stopped on a conflict, rebases, checkouts of old
commits, stashes, `git clean -xfd`, and a leader frozen with SIGSTOP, then SIGCONT.

Each action is done the way a person does it, one at a time and holding Shared.person (the
person types, commits or runs git, never two at once), inside a Shared.window: writes the
vault refuses with vault_busy meanwhile were never acknowledged and are counted, not failed.
A conflict is made as it happens to people: the same line of a note changed on the desk
and on a second clone (the laptop), then `git pull` or `git rebase`. Every edit the person
makes (resolutions, stashed lines, notes typed mid-operation) goes into Shared.hand, so the
torture's end checks find it committed and served. Whatever goes wrong is a problem naming
the action, the path and the commit.
"""

from __future__ import annotations

import os
import random
import re
import signal
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from tests.harness import consistency
from tests.harness.agents import Shared
from tests.harness.git_hand import (
    LOCK_RETRIES,
    SETTLE_TIMEOUT,
    Hands,
    leader_pid,
    locked,
    lost_a_lock_race,
    out,
    raced_a_commit,
    raced_a_write,
)

# git clean's stop on a vault write's temporary file that was renamed away meanwhile.
_RENAMED_AWAY = re.compile(r"^fatal: Cannot lstat '[^']*\.vault-tmp-[^']*': No such file")

ACTIONS = ("stash", "merge", "checkout", "rebase", "merge_abort", "clean", "stop_leader")
TAKEOVER_TIMEOUT = 20.0  # a bound on a wait, not a speed


def note(k: int, plan: str) -> bytes:
    """A note whose one line the desk and the laptop both change."""
    return f"# Plan {k}\n\nFirst line.\n\nThe plan: {plan}.\n\nLast line.\n".encode()


class GitPerson(Hands):
    """A thread doing `required` actions in order, then random ones while the work lasts."""

    def __init__(
        self,
        shared: Shared,
        seed: int,
        scratch: Path,
        required: Sequence[str] = ACTIONS,
        gap: tuple[float, float] = (0.3, 1.0),
    ) -> None:
        super().__init__(shared, scratch / "laptop")
        self.rng = random.Random(seed)
        self.required = list(required)
        self.gap = gap
        self.salvaged_log_problems: list[str] = []
        self.required_done = threading.Event()
        self.thread = threading.Thread(target=self._run, name="git-person", daemon=True)
        self._k = 0

    def start(self) -> GitPerson:
        self.thread.start()
        return self

    # --- the loop ------------------------------------------------------------------------

    def _run(self) -> None:
        todo = list(self.required)
        try:
            self.git("clone", "-q", str(self.vault), str(self.laptop), cwd=self.vault.parent)
            self.git("remote", "add", "laptop", str(self.laptop))
        except RuntimeError as problem:
            self.shared.problem(f"git person: could not set up the laptop clone: {problem}")
            self.required_done.set()
            return
        while todo or self.shared.work.is_set():
            action = todo.pop(0) if todo else self.rng.choice(ACTIONS)
            time.sleep(self.rng.uniform(*self.gap))
            with self.shared.person:
                try:
                    getattr(self, action)()
                except Exception as problem:  # reported, and the person goes on
                    self.shared.problem(
                        f"git person: {action}: {type(problem).__name__}: {problem}"
                    )
                    with self.shared.window(f"recovery after {action}", busy_ok=True):
                        self._back_on_main(action)
            if not todo:
                self.required_done.set()

    def _back_on_main(self, action: str) -> None:
        """Whatever went wrong, leave no operation in progress, and HEAD on main."""
        operation = self.in_progress()
        if operation is not None:
            self.shared.problem(f"git person: {action} left a {operation} in progress; aborted")
            self.git(operation, "--abort", check=False)
        if self.branch() != "main":
            self.shared.problem(f"git person: {action} left HEAD off main; checking out main")
            self.git("checkout", "-q", "main", check=False)

    # --- the actions ---------------------------------------------------------------------

    def merge(self, resolve: bool = True) -> None:
        """`git pull` of a laptop edit of the line the desk changed: it stops on the
        conflict; a pause; then the person resolves it by editing and `git commit`, or
        gives up with `git merge --abort`."""
        k = self._next()
        path, desk = f"notes/merge-{k}.md", note(k, f"desk {k}")
        self.commit_by_hand(path, note(k, "undecided"), f"Plan {k}")
        self.on_laptop(f"work-{k}", path, note(k, f"laptop {k}"))
        self.commit_by_hand(path, desk, f"Plan {k}: the desk's")
        name = f"merge {k}"
        with self.shared.window(name, busy_ok=True):
            # `git pull` would fetch, then merge from the HEAD it saw before fetching: the
            # vault's commits meanwhile make it "fast-forward" the folder from an old commit.
            self.git("fetch", "-q", "laptop")
            for _ in range(LOCK_RETRIES):  # `git merge` stashes first: that may lose a lock race
                # git merges only into a clean index: a hand edit the tool has not committed
                # yet is "local changes" (as it would be for a person who forgot to commit).
                self._wait_until_committed(name)
                merged = self.git("merge", "--no-edit", f"laptop/work-{k}", check=False)
                if self.unmerged(path):
                    break
                if self.in_progress() and "Unable to write index" in out(merged):
                    self.git("merge", "--abort")  # it lost the index to another commit
                elif self.in_progress() or not (lost_a_lock_race(merged) or raced_a_write(merged)):
                    break
                self.count("git_person_lock_retries")
                time.sleep(0.1)
            if not self.unmerged(path):
                raise RuntimeError(f"{name}: git merge did not stop on {path}: {out(merged)}")
            self.count("git_merges_stopped")
            self._stopped(name, path)
            if not resolve:
                self.git("merge", "--abort")
                self.count("git_merges_aborted")
                if self.disk(path) != desk:
                    self.shared.problem(
                        f"{name}: after git merge --abort {path} holds {self.disk(path)!r:.120}"
                        f", not the desk's committed version"
                    )
                return
            resolved = note(k, f"desk {k}, and laptop {k}")
            self.write(path, resolved)
            self.git("add", "--", path)
            self.git("commit", "-q", "--no-edit")
            self.count("git_merges_resolved")
            # (Agents' commits may already sit on top of it: find the merge, not HEAD.)
            merge = self.git("log", "-1", "--merges", "--format=%H", "--", path)
            if not merge or self.git("show", f"{merge}:{path}") != resolved.decode().strip():
                self.shared.problem(f"{name}: no merge commit holds the resolution of {path}")
        self.record(path, resolved)

    def merge_abort(self) -> None:
        self.merge(resolve=False)

    def rebase(self) -> None:
        """A local branch (pushed from the laptop) rebased onto main: it stops on the
        conflict; a pause; the person resolves, `git rebase --continue`, then merges it."""
        k = self._next()
        path, desk, branch = f"notes/rebase-{k}.md", note(k, f"desk {k}"), f"idea-{k}"
        self.commit_by_hand(path, note(k, "undecided"), f"Plan {k}")
        self.on_laptop(branch, path, note(k, f"laptop {k}"), push=True)
        self.commit_by_hand(path, desk, f"Plan {k}: the desk's")
        name = f"rebase {k}"
        with self.shared.window(name, busy_ok=True):
            for _ in range(LOCK_RETRIES):  # a rebase that lost a race is begun again
                self._wait_until_committed(name)
                started = self.git("rebase", "main", branch, check=False, tries=1)
                if self.unmerged(path) or not (locked(started) or raced_a_commit(started)):
                    break
                if self.in_progress():
                    self.git("rebase", "--abort", check=False)
                self.git("checkout", "-q", "main", check=False)
                self.count("git_person_lock_retries")
                time.sleep(0.1)
            if not self.unmerged(path):
                raise RuntimeError(f"{name}: git rebase did not stop on {path}: {out(started)}")
            self.count("git_rebases_stopped")
            self._stopped(name, path)
            resolved = note(k, f"desk {k}, then laptop {k}")
            self.write(path, resolved)
            self.git("add", "--", path)
            self.git("rebase", "--continue", env={"GIT_EDITOR": "true"})
            self.git("checkout", "-q", "main")
            self._merge_cleanly(name, branch)
            self.git("branch", "-q", "-d", branch)
            self.count("git_rebases")
        self.record(path, resolved)

    def _wait_until_committed(self, name: str) -> None:
        """git rebases only a clean folder: the person waits for the tool to commit edits,
        new notes too (one typed meanwhile would stop the checkout the rebase begins with)."""

        def dirty() -> str:
            listed = self.git("status", "--porcelain", "--untracked-files=all").splitlines()
            return "\n".join(line for line in listed if line[:2] != "??" or line.endswith(".md"))

        if consistency.within(lambda: not dirty(), SETTLE_TIMEOUT, 0.1) is None:
            raise RuntimeError(
                f"{name}: edits still uncommitted after {SETTLE_TIMEOUT:g} s: {dirty()}"
            )

    def _merge_cleanly(self, name: str, branch: str) -> None:
        """Merge a branch that conflicts with nothing, again if git lost a race with a write
        (its index taken meanwhile, or a write's new file on disk and not yet committed)."""
        for _ in range(LOCK_RETRIES):
            merged = self.git("merge", "-q", "--no-edit", branch, check=False)
            if merged.returncode == 0:
                return
            self._abort_merge(name)
            if not (lost_a_lock_race(merged) or raced_a_write(merged)):
                break
            self.count("git_person_write_race_retries")
            time.sleep(0.1)
        raise RuntimeError(f"{name}: git merge {branch} failed: {out(merged)}")

    def _abort_merge(self, name: str) -> None:
        """`git merge --abort` until no merge is left in progress: the abort can lose a race
        with a write too (a file the tool wrote meanwhile), and a merge left behind would
        make every next merge fail ("You have not concluded your merge") and the vault
        refuse writes."""
        aborted = None
        for _ in range(LOCK_RETRIES):
            if self.in_progress() != "merge":
                return
            aborted = self.git("merge", "--abort", check=False)
            if aborted.returncode != 0:
                self.count("git_person_write_race_retries")
                time.sleep(0.1)
        if self.in_progress() == "merge":
            status = self.git("status", "--porcelain", "--untracked-files=all", check=False)
            raise RuntimeError(
                f"{name}: git merge --abort left the merge in progress: {out(aborted)}; "
                f"status: {out(status)}"
            )

    def checkout(self) -> None:
        """`git checkout <old sha>` (HEAD detached, the folder as it was), a pause, `git
        checkout main`."""
        k = self._next()
        back = self.rng.randint(2, 8)
        found = self.git("rev-parse", "--verify", "-q", f"HEAD~{back}", check=False)
        old = found.stdout.strip() if found.returncode == 0 else self.git("rev-parse", "HEAD~1")
        name = f"checkout {k}"
        with self.shared.window(name, busy_ok=True):
            # A person whose unsaved-to-git edits stop the checkout waits for the tool to
            # commit them, then tries again.
            self.until(lambda: self.git("checkout", "-q", "--detach", old, check=False), name)
            self.count("git_checkouts_old")
            self._stopped(name, None)
            self.until(lambda: self.git("checkout", "-q", "main", check=False), name)

    def stash(self) -> None:
        """A hand edit of a note and of a tracked file, `git stash`, a pause, `git stash pop`;
        the person then commits the file (the tool commits the note)."""
        k = self._next()
        path, other = f"notes/stash-{k}.md", f"user/stash-{k}.txt"
        committed = note(k, "to be stashed")
        self.commit_by_hand(path, committed, f"Plan {k}")
        self.commit_by_hand(other, b"a tracked file\n", f"File {k}")
        edited, other_edited = committed + f"\nA thought {k}.\n".encode(), b"a tracked file\nhalf\n"
        self.write(path, edited)
        self.record(path, edited)
        self.write(other, other_edited)
        name = f"stash {k}"
        try:
            with self.shared.window(name, busy_ok=False):
                self._stash_and_pop(name, path, committed, other)
            for target, data in ((path, edited), (other, other_edited)):
                if self.disk(target) != data:
                    self.shared.problem(f"{name}: the stashed edit of {target} did not come back")
        finally:  # the person commits the file, whatever became of it
            self.commit_by_hand(other, self.disk(other) or b"", f"File {k}: done")

    def _stash_and_pop(self, name: str, path: str, committed: bytes, other: str) -> None:
        self.stash_push(name)
        self.count("git_stashes")
        if self.disk(other) != b"a tracked file\n":
            self.shared.problem(f"{name}: git stash left {other} as {self.disk(other)!r}")
        if self.disk(path) != committed:
            self.count("stash_note_taken_in_before_the_stash")
        time.sleep(self.rng.uniform(0.5, 1.5))
        self.stash_pop(name)

    def clean(self) -> None:
        """`git clean -xfd` once the person's notes are committed: it removes .vault/index,
        .vault/run and the ledger, which the vault must recreate as it goes on."""
        k = self._next()
        name = f"clean {k}"
        pending = consistency.within(lambda: not self.uncommitted(), SETTLE_TIMEOUT, 0.1)
        if pending is None:
            left = self.uncommitted()
            self.shared.problem(
                f"{name}: hand edits not committed in {SETTLE_TIMEOUT:g} s: {left[:5]}"
            )
            with self.shared.lock:
                for path in left:  # the person's own choice to remove them
                    self.shared.hand.pop(path, None)
        self.salvaged_log_problems += consistency.server_log_errors(self.vault)
        with self.shared.window(name, busy_ok=False):
            # A folder the vault recreated while git emptied it, or a file it removed while
            # git listed the folder: git warns about that path and goes on (its reason may
            # come on a line of its own, ": No such file or directory"). A write's temporary
            # file renamed into place between git's listing and its lstat makes git stop
            # ("fatal: Cannot lstat '....vault-tmp-...'"); the person runs it again.
            benign = ("Removing ", "warning: ", ": ")
            for _ in range(5):
                done = self.git("clean", "-xfd", check=False)
                said = (done.stdout + done.stderr).splitlines()
                if not (done.returncode and any(_RENAMED_AWAY.search(line) for line in said)):
                    break
                self.count("git_clean_reruns")
            self.count("git_cleans")
            unexpected = [line for line in said if line.strip() and not line.startswith(benign)]
            if done.returncode != 0 and unexpected:
                raise RuntimeError(f"{name}: git clean -xfd failed: {unexpected[:3]}")
            removed = [line for line in said if line.startswith("Removing ")]
            self.count("git_clean_removed", len(removed))
        after = f"notes/after-clean-{k}.md"
        self.write(after, f"# After clean {k}\n\nTyped after git clean -xfd.\n".encode())
        self.record(after, self.disk(after) or b"")
        checks: list[tuple[str, Callable[[], object]]] = [
            ("nobody leads (.vault/run/leader.json)", lambda: leader_pid(self.vault)),
            (".vault/index is not there", lambda: (self.vault / ".vault" / "index").is_dir()),
            (f"{after} is not committed", lambda: after not in self.uncommitted()),
        ]
        for what, condition in checks:
            if consistency.within(condition, SETTLE_TIMEOUT, 0.1) is None:
                self.shared.problem(f"{name}: {SETTLE_TIMEOUT:g} s after git clean -xfd, {what}")

    def stop_leader(self) -> None:
        """SIGSTOP the leading server until another takes over (or a bound), then SIGCONT.

        A leader frozen while it holds the vault's write lock (an flock) stops every
        writer until it runs again: then a hand edit typed meanwhile must be committed
        after SIGCONT, not by the new leader during the stop (counted apart)."""
        from vault_tool.storage.processes import flock_holder

        k = self._next()
        name = f"stop {k}"
        pid = consistency.within(lambda: leader_pid(self.vault), SETTLE_TIMEOUT, 0.1)
        if pid is None:
            raise RuntimeError(f"{name}: no server leads the watching")
        typed = f"notes/while-stopped-{k}.md"
        committed = lambda: typed not in self.uncommitted([typed])  # noqa: E731
        with self.shared.window(name, busy_ok=True):
            os.kill(pid, signal.SIGSTOP)
            try:
                # Frozen, it can neither take nor let go of a lock: what it holds, it keeps.
                holds_lock = flock_holder(self.vault / ".git" / "vault-tool" / "write.lock") == pid
                self.count("leader_stops")
                if holds_lock:
                    self.count("leader_stops_holding_write_lock")
                self.write(typed, f"# While stopped {k}\n\nTyped, leader frozen.\n".encode())
                self.record(typed, self.disk(typed) or b"")
                other = consistency.within(
                    lambda: leader_pid(self.vault) not in (None, pid), TAKEOVER_TIMEOUT, 0.1
                )
                if other is None:
                    self.shared.problem(
                        f"{name}: nobody took over from the stopped leader {pid} in "
                        f"{TAKEOVER_TIMEOUT:g} s (leader.json names {leader_pid(self.vault)})"
                    )
                else:
                    self.count("leader_takeovers_from_stopped")
                    if (
                        not holds_lock
                        and consistency.within(committed, SETTLE_TIMEOUT, 0.1) is None
                    ):
                        holder = flock_holder(self.vault / ".git" / "vault-tool" / "write.lock")
                        self.shared.problem(
                            f"{name}: {typed} not committed by the new leader (the write lock "
                            f"is held by {holder}; the frozen leader {pid} did not hold it)"
                        )
            finally:
                os.kill(pid, signal.SIGCONT)
        if consistency.within(lambda: leader_pid(self.vault), SETTLE_TIMEOUT, 0.1) is None:
            self.shared.problem(f"{name}: after SIGCONT of {pid} nobody leads")
        if holds_lock and consistency.within(committed, SETTLE_TIMEOUT, 0.1) is None:
            self.shared.problem(
                f"{name}: {typed} not committed {SETTLE_TIMEOUT:g} s after SIGCONT of {pid}, "
                f"which was frozen holding the write lock"
            )

    # --- what the actions share ----------------------------------------------------------

    def _stopped(self, name: str, path: str | None) -> None:
        """The pause while an operation is stopped: the person types a new note; the vault
        must commit nothing meanwhile and leave the conflict as git made it."""
        head = self.git("rev-parse", "HEAD")
        typed = f"notes/typed-during-{name.replace(' ', '-')}.md"
        self.write(typed, f"# Typed during {name}\n\nWhile git was stopped.\n".encode())
        self.record(typed, self.disk(typed) or b"")
        time.sleep(self.rng.uniform(1.0, 2.0))
        now = self.git("rev-parse", "HEAD")
        if now != head:
            made = self.git("log", "--format=%h %s", f"{head}..{now}", check=False)
            self.shared.problem(
                f"{name}: commits made while stopped, on {head[:10]}: {made.stdout.strip()!s:.300}"
            )
        if path is not None and not self.unmerged(path):
            self.shared.problem(
                f"{name}: the unmerged entries of {path} were cleared while git was stopped "
                f"(git status looks clean; HEAD {self.head()})"
            )
        shown = self.git("show", f"HEAD:{path}", check=False).stdout if path else ""
        if path is not None and consistency.CONFLICT_MARKER_RE.search(shown.encode()):
            self.shared.problem(f"{name}: HEAD {self.head()} holds the conflict markers of {path}")

    def _next(self) -> int:
        self._k += 1
        return self._k
