"""A vault shared through a git remote: its remotes, and sync (fetch, merge, push).

storage/remote.py does the git; this composes it with the vault: the merge is made under
the vault's write lock (no write lands half-way through it), and the files it changed are
read into the index before the lock is let go, so they are searchable when sync returns.
A push the remote rejects because it moved on is fetched, merged and pushed again, a
bounded number of times with a growing, jittered pause (two clones syncing at the same
moment do not collide again in step). A remote that cannot be reached is not an error:
writes go on, and the sync says so and is tried again.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from vault_tool.core import changelog
from vault_tool.engine.intake import Intake
from vault_tool.errors import InvalidInput, VaultBusy
from vault_tool.storage import sync_requests
from vault_tool.storage.remote import Remote, Unreachable
from vault_tool.storage.store import Store

ATTEMPTS = 5
_FIRST_PAUSE_SECONDS = 0.2
_LONGEST_PAUSE_SECONDS = 5.0


@dataclass
class SyncOutcome:
    """What one sync did; `line()` is its one line of status."""

    remote: str
    branch: str
    status: str  # synced, up to date, offline
    commits_in: int = 0
    merge: str = "up to date"  # up to date, ahead, fast-forward, merge
    pushed: bool = False
    attempts: int = 1
    reindexed: list[str] = field(default_factory=list)
    kept_edited: list[str] = field(default_factory=list)
    flagged: list[str] = field(default_factory=list)
    kept_both: list[tuple[str, str]] = field(default_factory=list)
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        where = f"{self.remote}/{self.branch}"
        if self.status == "offline":
            return f"{where}: offline ({self.reason}); writes go on, the next sync tries again"
        parts = [f"{where}: {self.status}"]
        if self.commits_in:
            parts.append(f"{_commits(self.commits_in)} in ({self.merge})")
        if self.pushed:
            parts.append("pushed")
        if self.kept_edited:
            parts.append(f"{len(self.kept_edited)} kept edited over a deletion")
        if self.flagged:
            parts.append(f"{len(self.flagged)} with conflict markers in the body (doctor)")
        if self.kept_both:
            parts.append(f"{len(self.kept_both)} path(s) two new memories shared: both kept")
        if self.attempts > 1:
            parts.append(f"{self.attempts} attempts")
        return ", ".join(parts)


class Team:
    """Remotes and sync for one open vault."""

    def __init__(self, store: Store, intake: Intake) -> None:
        self._store = store
        self._intake = intake

    def remotes(self) -> dict[str, str]:
        """name -> URL of each remote."""
        return Remote.listed(self._store.root)

    def add_remote(self, name: str, url: str) -> None:
        """Add a remote (InvalidInput for a name that is not plain or is taken)."""
        Remote(self._store.root, name).add(url)

    # How often this process asks for syncs; the leader syncs as often as any live process
    # asked (storage/sync_requests.py, server/background_sync.py).
    def ask_to_sync(self, seconds: float) -> None:
        sync_requests.ask(self._store.run_dir, seconds)

    def asking_to_sync(self) -> bool:
        return sync_requests.asking(self._store.run_dir)

    def stop_asking_to_sync(self) -> None:
        sync_requests.withdraw(self._store.run_dir)

    def asked_period(self) -> float:
        """The shortest period a live process asked for (0.0: none asked)."""
        return sync_requests.shortest(self._store.run_dir)

    def sync(
        self,
        remote: str | None = None,
        *,
        attempts: int = ATTEMPTS,
        pause: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
    ) -> SyncOutcome:
        """Fetch, merge and push until the push lands (at most `attempts` rounds)."""
        branch = self._store.commits.guard.require_idle_branch()
        name = remote or self._default_remote(branch)
        chosen = Remote(self._store.root, name, self._store.git_environment())
        outcome = SyncOutcome(chosen.name, branch, "up to date")
        for attempt in range(1, attempts + 1):
            outcome.attempts = attempt
            try:
                theirs = chosen.fetch(branch)
            except Unreachable as why:
                outcome.status, outcome.reason = "offline", str(why)
                return outcome
            head = self._merged(chosen, theirs, outcome)
            if outcome.commits_in:
                outcome.status = "synced"
            if head == theirs:
                return outcome
            try:
                outcome.pushed = chosen.push(head, branch)
            except Unreachable as why:
                outcome.status, outcome.reason = "offline", str(why)
                return outcome
            if outcome.pushed:
                outcome.status = "synced"
                return outcome
            doubled = _FIRST_PAUSE_SECONDS * 2 ** (attempt - 1)
            pause(min(_LONGEST_PAUSE_SECONDS, doubled) * (0.5 + jitter()))
        raise VaultBusy(
            f"{chosen.name} moved on {attempts} times while this vault synced: its push was "
            "rejected each time (nothing was lost; the merges made are kept)",
            hint="run `vault-tool sync` again in a moment",
        )

    def _merged(self, chosen: Remote, theirs: str | None, outcome: SyncOutcome) -> str:
        """Merge their commit under the write lock, read what changed into the index; HEAD."""
        with self._store.write_lock():
            self._store.commits.require_committable()
            pending = self._store.uncommitted_paths()
            if pending:  # hand edits the watcher has not committed yet: the write path does
                self._intake.sync_paths(pending)
            if theirs is None:
                return self._store.head_sha()
            source = f"{chosen.name}/{outcome.branch}"
            merged = chosen.merge(
                theirs,
                lambda m: changelog.synced(
                    m.commits_in, source, m.kept_edited, m.flagged, m.kept_both
                ),
            )
            outcome.commits_in += merged.commits_in
            outcome.merge = merged.how
            outcome.kept_edited += merged.kept_edited
            outcome.flagged += merged.flagged
            outcome.kept_both += merged.kept_both
            if merged.paths:
                self._intake.sync_paths(merged.paths, commit=False)
                outcome.reindexed = sorted({*outcome.reindexed, *merged.paths})
            return self._store.head_sha()

    def _default_remote(self, branch: str) -> str:
        """The branch's upstream remote, else the only remote, else `origin`."""
        configured = self._store.git("config", "--default", "", "--get", f"branch.{branch}.remote")
        listed = self.remotes()
        if configured in listed:
            return configured
        if len(listed) == 1:
            return next(iter(listed))
        if "origin" in listed:
            return "origin"
        raise InvalidInput(
            "the vault has no remote to sync with"
            if not listed
            else f"the vault has {len(listed)} remotes and none is this branch's upstream",
            hint="add one with `vault-tool remote add origin URL`"
            if not listed
            else f"name one: `vault-tool sync --remote NAME` ({', '.join(sorted(listed))})",
        )


def _commits(n: int) -> str:
    return f"{n} commit" + ("" if n == 1 else "s")
