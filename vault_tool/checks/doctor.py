"""`vault-tool doctor`: everything that can make a vault unhealthy, each with its fix.

It runs verify (health.py) and looks at what verify does not: settings, git's branch and
identity, lock files and who holds them, interrupted writes, and the watcher's leader.
Each check is ok, warn (worth knowing, still healthy) or fail (unhealthy). Like verify it
only looks: it repairs nothing and waits for nobody for long.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from vault_tool.checks.verify import (
    Checkup,
    Issue,
    Progress,
    VerifyReport,
    flock_held,
    git_processes,
    verify,
)
from vault_tool.errors import VaultError
from vault_tool.search.index import INDEX_SCHEMA_VERSION
from vault_tool.storage import config as config_module
from vault_tool.storage.store import Store


@dataclass
class Check:
    """One thing doctor looked at: ok, warn (worth knowing) or fail (unhealthy)."""

    name: str
    status: str
    summary: str
    details: list[dict[str, Any]] = field(default_factory=list)
    fix: str = ""


@dataclass
class DoctorReport:
    """Every check doctor ran."""

    checks: list[Check]

    @property
    def healthy(self) -> bool:
        return all(c.status != "fail" for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        """The report as --json prints it."""
        return {"healthy": self.healthy, "checks": [asdict(c) for c in self.checks]}


# How long doctor waits for the vault's write lock before saying who holds it.
WRITE_LOCK_PATIENCE = 1.0


def doctor(checkup: Checkup, progress: Progress | None = None) -> DoctorReport:
    """Everything that can make a vault unhealthy, each with what to do about it."""
    found = verify(checkup, progress)
    by_kind: dict[str, list[Issue]] = {}
    for issue in found.issues:
        by_kind.setdefault(issue.kind, []).append(issue)
    holder = _write_lock_holder(checkup.run_dir / "write.lock")
    checks = [
        _check_config(checkup),
        _check_git(checkup),
        _check_index(checkup, found),
        _check_files(by_kind),
        _check_uncommitted(checkup, by_kind),
        _check_drift(by_kind),
        _check_git_locks(checkup),
        _check_write_lock(holder),
        _check_journal(checkup, holder),
        _check_watcher(checkup),
    ]
    return DoctorReport(checks)


def _check_config(checkup: Checkup) -> Check:
    path = config_module.CONFIG_PATH
    if checkup.config_problem is not None:
        return Check(
            "config",
            "fail",
            checkup.config_problem.message,
            fix=checkup.config_problem.hint + "; until then every command refuses the vault",
        )
    try:
        data = tomllib.loads((checkup.root / path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Check("config", "ok", f"no {path}: the defaults apply")
    known = {
        "vault": {"schema_version"},
        "watch": {"auto_commit", "debounce_ms"},
        "write": {"lock_timeout_seconds"},
    }
    unknown = []
    for table, values in data.items():
        if table not in known:
            unknown.append(f"[{table}]")
        elif isinstance(values, dict):
            unknown += [f"[{table}] {key}" for key in values if key not in known[table]]
    vault_table = data.get("vault") if isinstance(data.get("vault"), dict) else {}
    version = vault_table.get("schema_version", config_module.SCHEMA_VERSION)
    if version != config_module.SCHEMA_VERSION:
        return Check(
            "config",
            "fail",
            f"{path} says schema_version {version}; this vault-tool reads "
            f"{config_module.SCHEMA_VERSION}",
            fix="use the vault-tool version that wrote this vault, or upgrade this one",
        )
    settings = checkup.store.config
    summary = (
        f"{path}: auto_commit {str(settings.auto_commit).lower()}, debounce "
        f"{settings.debounce_ms} ms, lock timeout {settings.lock_timeout_seconds:g} s"
    )
    if unknown:
        return Check(
            "config",
            "warn",
            f"{summary}; unknown settings are ignored: {', '.join(unknown)}",
            details=[{"setting": u} for u in unknown],
            fix=f"check the spelling against the comments in a new vault's {path}",
        )
    return Check("config", "ok", summary)


def _check_git(checkup: Checkup) -> Check:
    store = checkup.store
    try:
        head = store.head_sha()
    except VaultError as problem:
        return Check(
            "git", "fail", problem.message, fix="make a first commit, or re-create the vault"
        )
    branch = _git_or_none(store, "symbolic-ref", "--quiet", "--short", "HEAD")
    name = _git_or_none(store, "config", "user.name")
    email = _git_or_none(store, "config", "user.email")
    where = f"on {branch}" if branch else "on a detached HEAD"
    details = [{"head": head, "branch": branch, "user.name": name, "user.email": email}]
    if not (name and email):
        from vault_tool.storage.git import FALLBACK_EMAIL, FALLBACK_NAME

        return Check(
            "git",
            "warn",
            f"{where} at {head[:10]}; git knows no identity, so commits are made by "
            f"{FALLBACK_NAME} <{FALLBACK_EMAIL}>",
            details,
            fix="git config --global user.name 'Your Name'; git config --global user.email you@x",
        )
    if not branch:
        return Check(
            "git",
            "warn",
            f"{where} at {head[:10]}; commits are made by {name} <{email}>",
            details,
            fix="check out a branch (git switch main): commits on a detached HEAD get lost",
        )
    return Check("git", "ok", f"{where} at {head[:10]}; commits by {name} <{email}>", details)


def _check_index(checkup: Checkup, found: VerifyReport) -> Check:
    if checkup.index is None:
        issue = found.issues[0]
        return Check("index", "fail", issue.detail, fix=issue.fix)
    segments = checkup.index.segment_count()
    summary = (
        f"{found.indexed} memories indexed, schema version {checkup.index_version} "
        f"(this vault-tool: {INDEX_SCHEMA_VERSION}), {_count(segments, 'segment')}"
    )
    return Check("index", "ok", summary, [{"segments": segments, "documents": found.indexed}])


def _issue_rows(issues: list[Issue]) -> list[dict[str, Any]]:
    return [{"path": i.path, "line": i.line, "reason": i.detail, "fix": i.fix} for i in issues]


def _check_files(by_kind: dict[str, list[Issue]]) -> Check:
    bad = by_kind.get("unparseable", []) + by_kind.get("refused", [])
    if not bad:
        return Check("files", "ok", "every memory file parses")
    details = _issue_rows(bad)
    for row, issue in zip(details, bad, strict=True):
        if issue.kind == "unparseable":
            row["fix"] = _how_to_fix(issue.detail)
    return Check(
        "files",
        "fail",
        f"{_count(len(bad), 'file')} cannot be taken in (the last good versions stay searchable)",
        details,
        fix="fix each file as shown; the watcher or `vault-tool commit` then takes it in",
    )


def _how_to_fix(reason: str) -> str:
    """A concrete repair for a parse failure, from its reason."""
    if "not valid YAML" in reason:
        return (
            "fix the YAML between the --- lines at that line (a missing space after ':', a "
            "tab, an unclosed quote or bracket); `git diff` shows what changed"
        )
    if "not closed" in reason:
        return "end the front matter with a line '---' before the # heading"
    if "H1" in reason:
        return "start the body with a heading line such as '# What this memory is about'"
    if "UTF-8" in reason:
        return "save the file as UTF-8 text"
    if "too large" in reason:
        return "split it into smaller memories (at most 1 MB each)"
    return "make the front matter match schema/memory.schema.json (see the reason)"


def _check_uncommitted(checkup: Checkup, by_kind: dict[str, list[Issue]]) -> Check:
    pending = by_kind.get("uncommitted", []) + by_kind.get("deleted_uncommitted", [])
    if not pending:
        return Check("uncommitted", "ok", "every memory file is committed")
    auto = checkup.store.config.auto_commit
    return Check(
        "uncommitted",
        "fail" if auto else "warn",
        f"{_count(len(pending), 'memory file')} differ from the last commit"
        + ("" if auto else " (auto_commit is off: they wait for you to commit them)"),
        _issue_rows(pending),
        fix="`vault-tool commit` commits them (a running watcher does it within a second); "
        "`git checkout -- PATH` undoes one",
    )


DRIFT_KINDS = (
    "not_indexed",
    "indexed_but_missing",
    "stale_index",
    "wrong_version",
    "duplicate_id",
    "duplicate_key",
)


def _check_drift(by_kind: dict[str, list[Issue]]) -> Check:
    drift = [i for kind in DRIFT_KINDS for i in by_kind.get(kind, [])]
    if not drift:
        return Check("index_drift", "ok", "the index agrees with the files and with git")
    counts = ", ".join(f"{len(by_kind[k])} {k}" for k in DRIFT_KINDS if by_kind.get(k))
    fixes = sorted({i.fix for i in drift})
    return Check("index_drift", "fail", counts, _issue_rows(drift), fix="; ".join(fixes))


def _check_git_locks(checkup: Checkup) -> Check:
    git_dir = checkup.root / ".git"
    locks = [git_dir / "index.lock", git_dir / "HEAD.lock", *git_dir.glob("refs/**/*.lock")]
    present = [lock for lock in locks if lock.exists()]
    if not present:
        return Check("git_locks", "ok", "no git lock files")
    running = git_processes(checkup.root)
    details = [
        {"path": lock.relative_to(checkup.root).as_posix(), "age_seconds": _age(lock)}
        for lock in present
    ]
    names = ", ".join(d["path"] for d in details)
    if running:
        return Check(
            "git_locks",
            "warn",
            f"{names} held by a running git (pid {', '.join(map(str, running))})",
            details,
            fix="wait for that git command to finish; the vault waits for it too",
        )
    return Check(
        "git_locks",
        "fail",
        f"stale {names}: no git process works in this vault (a crashed git left it)",
        details,
        fix=f"remove it: rm {' '.join(d['path'] for d in details)}",
    )


def _check_write_lock(holder: int | None) -> Check:
    if holder is None:
        return Check("write_lock", "ok", "the vault's write lock is free")
    who = f"pid {holder} ({_command_of(holder)})" if holder > 0 else "another process"
    return Check(
        "write_lock",
        "warn",
        f"the vault's write lock has been held for over {WRITE_LOCK_PATIENCE:g} s by {who}",
        [{"pid": holder if holder > 0 else None}],
        fix="a long import or reindex holds it while it runs; if that process hangs, stop it "
        "(the lock is released by the kernel when it exits, so it is never stale)",
    )


def _check_journal(checkup: Checkup, holder: int | None) -> Check:
    journal = sorted((checkup.run_dir / "journal").glob("*.json"))
    if not journal:
        return Check("journal", "ok", "no interrupted writes")
    if holder is not None:
        return Check("journal", "ok", f"a write is in progress ({len(journal)} journal entries)")
    details = []
    for entry in journal:
        try:
            record = json.loads(entry.read_text(encoding="utf-8"))
            paths = [e["path"] for e in record.get("entries", [])]
            subject = str(record.get("message", "")).split("\n", 1)[0]
        except (OSError, ValueError, TypeError, KeyError):
            paths, subject = [], "(unreadable: the crash hit while it was written)"
        details.append({"entry": entry.name, "subject": subject, "paths": paths})
    return Check(
        "journal",
        "fail",
        f"{_count(len(journal), 'interrupted write')} left in .vault/run/journal (a writer "
        "crashed)",
        details,
        fix="run `vault-tool commit` (opening the vault to write finishes or rolls back each "
        "interrupted write; a file a person edited since is left alone)",
    )


def _check_watcher(checkup: Checkup) -> Check:
    from vault_tool.watcher import HEARTBEAT_SECONDS, live_leader

    try:
        info = json.loads((checkup.run_dir / "leader.json").read_text())
        pid = int(info["pid"])
        beat = time.time() - float(info.get("heartbeat", 0))
    except (OSError, ValueError, KeyError, TypeError):
        info, pid, beat = None, 0, 0.0
    lock_holder = _flock_holder(checkup.run_dir / "leader.lock")
    if info is not None:
        details = [{**info, "heartbeat_age_seconds": round(beat, 1)}]
        if live_leader(checkup.run_dir) is not None:
            return Check(
                "watcher",
                "ok",
                f"pid {pid} ({info.get('client', '?')}) leads; last heartbeat {beat:.1f} s ago",
                details,
            )
        if _alive(pid):
            return Check(
                "watcher",
                "fail",
                f"pid {pid} leads the watching but its last heartbeat was {beat:.0f} s ago "
                f"(expected every {HEARTBEAT_SECONDS:g} s): it hangs",
                details,
                fix=f"stop process {pid}; another server or `vault-tool watch` takes over",
            )
        return Check(
            "watcher",
            "warn",
            f"the last leader (pid {pid}) died without standing down; nobody watches now",
            details,
            fix="start a server or `vault-tool watch`; it takes over at once",
        )
    if lock_holder:
        return Check(
            "watcher",
            "ok",
            f"pid {lock_holder} is taking up the watching (no heartbeat yet)",
            [{"pid": lock_holder}],
        )
    return Check(
        "watcher",
        "ok",
        "no process watches this vault: hand edits are taken in when a server or "
        "`vault-tool watch` starts, or by `vault-tool commit`",
    )


# --- processes and locks -------------------------------------------------------------------


def _write_lock_holder(path: Path) -> int | None:
    """None if the write lock is free (or frees within a second); else the holder's pid
    (0 when /proc/locks does not say)."""
    deadline = time.monotonic() + WRITE_LOCK_PATIENCE
    while True:
        if not flock_held(path):
            return None
        if time.monotonic() >= deadline:
            return _flock_holder(path) or 0
        time.sleep(0.05)


def _flock_holder(path: Path) -> int | None:
    """The pid that holds an flock on path, from /proc/locks (Linux); None if none shows."""
    try:
        st = path.stat()
        locks = Path("/proc/locks").read_text()
    except OSError:
        return None
    wanted = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in locks.splitlines():
        parts = line.split()
        # "1: FLOCK  ADVISORY  WRITE 12345 fe:00:2146339 0 EOF"; blocked waiters have "->".
        if len(parts) >= 6 and parts[1] == "FLOCK" and parts[5] == wanted:
            with contextlib.suppress(ValueError):
                return int(parts[4])
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def _command_of(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "unknown command"
    return re.sub(r"\s+", " ", raw.replace(b"\0", b" ").decode("utf-8", "replace")).strip()[:120]


def _age(path: Path) -> float | None:
    with contextlib.suppress(OSError):
        return round(time.time() - path.stat().st_mtime, 1)
    return None


def _git_or_none(store: Store, *args: str) -> str | None:
    try:
        return store.git(*args) or None
    except VaultError:
        return None


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
