"""`vault-tool verify`: the files against the index against git, every disagreement listed.

Checkup opens a vault only to look at it (doctor.py looks through it too): the repository
without repairing interrupted writes, the index without creating or catching it up. So
verify reports what it finds instead of quietly fixing it; `reindex`, `commit` or any
command that writes does the fixing.

What verify costs (measured on 10k memories): one walk of the folder, one read and hash of
every file (~0.1 s), one pass over the index's stored fields (~0.15 s), one `git ls-tree`
of HEAD, one walk of the history for every clean file's version (0.17 s over 10k commits),
and a parse of only the files whose bytes differ from what the index holds (a file the
index holds parsed when it was indexed). Every version is checked; no sampling.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from vault_tool.errors import UnparseableFile, VaultError, VaultUnavailable
from vault_tool.search.index import _META_FILE, INDEX_SCHEMA_VERSION, Index
from vault_tool.storage import config as config_module
from vault_tool.storage.git import blob_sha, open_repo
from vault_tool.storage.store import Store, is_memory_path

Progress = Callable[[int, int], None]

# What to do about each kind of disagreement verify finds.
FIXES = {
    "index_missing": "run `vault-tool reindex` (the index is a cache of the files)",
    "index_outdated": "run `vault-tool reindex` (this vault-tool reads a newer index format)",
    "not_indexed": "run `vault-tool reindex`, or let a running watcher take the file in",
    "indexed_but_missing": "run `vault-tool reindex` to drop the entry",
    "stale_index": "run `vault-tool reindex`, or let a running watcher take the file in",
    "wrong_version": "run `vault-tool reindex` to read versions from git again",
    "unparseable": "fix the file at the line shown (`vault-tool doctor` says how); its last "
    "good version stays searchable meanwhile",
    "refused": "remove the secret from the file; it was never written to git",
    "uncommitted": "run `vault-tool commit` (or commit or undo it with git)",
    "deleted_uncommitted": "run `vault-tool commit` to record the deletion, or "
    "`git checkout -- PATH` to bring the file back",
    "duplicate_id": "give one of the files another id: delete its `id:` line (it is then "
    "addressed by its path) and commit",
    "duplicate_key": "keys are unique: change or remove the `key:` of all but one file",
    "stale_git_lock": "remove .git/index.lock: no git process works in this vault, and git "
    "refuses every commit while it is there",
    "interrupted_write": "run `vault-tool commit`: opening the vault to write finishes or rolls "
    "back the interrupted write (a file a person edited since is left alone)",
}


@dataclass
class Issue:
    """One disagreement between the files, the index and git."""

    kind: str
    path: str
    detail: str
    line: int | None = None

    @property
    def fix(self) -> str:
        return FIXES[self.kind]


@dataclass
class VerifyReport:
    """What verify compared and every disagreement it found."""

    files: int = 0
    indexed: int = 0
    committed: int = 0
    index: str = "ok"  # ok, missing or outdated
    issues: list[Issue] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return not self.issues

    def to_dict(self) -> dict[str, Any]:
        """The report as --json prints it."""
        return {
            "healthy": self.healthy,
            "files": self.files,
            "indexed": self.indexed,
            "committed": self.committed,
            "index": self.index,
            "issues": [{**asdict(i), "fix": i.fix} for i in self.issues],
        }


class Checkup:
    """A vault opened only to look at it: no repair, no catch-up, no index created."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).absolute()
        if not (self.root / ".git").exists() or not (self.root / ".vault").is_dir():
            raise VaultUnavailable(
                f"no vault at {self.root}",
                hint="create one with `vault-tool init PATH`, or point --vault / "
                f"${config_module.ENV_VAR} at an existing vault",
            )
        self.config_problem: VaultError | None = None
        try:
            settings = config_module.read_config(self.root)
        except VaultUnavailable as problem:  # doctor reports it; the defaults stand in
            self.config_problem = problem
            settings = config_module.Config()
        self.store = Store(self.root, open_repo(self.root), settings)
        self.run_dir = self.store.run_dir
        self.index_state, self.index_version = _index_state(self.root)
        try:
            self.index: Index | None = Index(self.root).open() if self.index_state == "ok" else None
        except BaseException:
            self.store.close()
            raise

    def close(self) -> None:
        """Release the index and git's helper processes."""
        if self.index is not None:
            self.index.close()
        self.store.close()

    def __enter__(self) -> Checkup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def recorded_problems(self) -> dict[str, dict[str, Any]]:
        """What the watcher or catch-up recorded about files that did not parse."""
        try:
            return json.loads((self.run_dir / "problems.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}


def _index_state(root: Path) -> tuple[str, int | None]:
    """ok, missing or outdated, and the schema version the index was built with."""
    from whoosh import index as whoosh_index

    folder = root / ".vault" / "index"
    try:
        version = json.loads((folder / _META_FILE).read_text())["schema_version"]
    except (OSError, ValueError, KeyError, TypeError):
        return "missing", None
    if version != INDEX_SCHEMA_VERSION:
        return "outdated", version
    if not whoosh_index.exists_in(str(folder)):
        return "missing", version
    return "ok", version


# --- verify --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Doc:
    memory_id: str
    version_id: str
    blob: str
    key: str


def _documents(index: Index) -> dict[str, _Doc]:
    with index.searcher() as searcher:
        return {
            f["path"]: _Doc(f["memory_id"], f["version_id"], f["blob"], f.get("key") or "")
            for f in searcher.all_stored_fields()
        }


def verify(checkup: Checkup, progress: Progress | None = None) -> VerifyReport:
    """Compare every file with the index and with git; list every disagreement."""
    from vault_tool.core.memory import parse
    from vault_tool.core.redact import find_secret_kinds

    store = checkup.store
    report = VerifyReport(index=checkup.index_state)
    on_disk = sorted(p for p, _ in store.iter_memory_paths())
    try:
        head = {p: b for p, b in store.head_blobs().items() if is_memory_path(p)}
    except VaultError:
        head = {}  # no commit yet: doctor's git check says so
    docs = _documents(checkup.index) if checkup.index is not None else {}
    report.files, report.indexed, report.committed = len(on_disk), len(docs), len(head)
    if checkup.index is None:
        detail = (
            "the search index is missing"
            if checkup.index_state == "missing"
            else f"the index has schema version {checkup.index_version}; "
            f"this vault-tool uses {INDEX_SCHEMA_VERSION}"
        )
        report.issues.append(Issue(f"index_{checkup.index_state}", ".vault/index", detail))

    recorded = checkup.recorded_problems()
    blobs: dict[str, str] = {}
    for n, path in enumerate(on_disk, 1):
        if progress:
            progress(n, len(on_disk))
        data = store.read_bytes(path)
        if data is None:
            continue  # gone since the walk
        blob = blobs[path] = blob_sha(data)
        if path not in head:
            report.issues.append(Issue("uncommitted", path, "new file, never committed"))
        elif head[path] != blob:
            report.issues.append(Issue("uncommitted", path, "differs from the last commit"))
        doc = docs.get(path)
        # A file whose bytes the index holds parsed when it was indexed; only the others
        # are parsed (without an index: those that differ from git, or had a problem).
        if doc is not None and doc.blob == blob:
            continue
        if checkup.index is None and head.get(path) == blob and path not in recorded:
            continue
        try:
            parse(data.decode("utf-8"), path)
        except UnicodeDecodeError as problem:
            report.issues.append(Issue("unparseable", path, f"not UTF-8 text ({problem.reason})"))
            continue
        except UnparseableFile as problem:
            report.issues.append(Issue("unparseable", path, problem.reason, problem.line))
            continue
        secrets = find_secret_kinds(data.decode("utf-8"))
        if secrets:
            report.issues.append(Issue("refused", path, f"holds a secret ({', '.join(secrets)})"))
        elif checkup.index is None:
            continue
        elif doc is None:
            report.issues.append(Issue("not_indexed", path, "on disk but not in the index"))
        else:
            report.issues.append(
                Issue("stale_index", path, "the index holds other bytes than the file")
            )
    for path in sorted(set(head) - set(blobs)):
        report.issues.append(
            Issue("deleted_uncommitted", path, "tracked in git but missing on disk")
        )
    if checkup.index is not None:
        for path in sorted(set(docs) - set(blobs)):
            report.issues.append(
                Issue("indexed_but_missing", path, "in the index but missing on disk")
            )
        report.issues += _wrong_versions(store, docs, blobs, head)
        report.issues += _duplicates(docs, set(blobs), "memory_id", "duplicate_id", "id")
        report.issues += _duplicates(docs, set(blobs), "key", "duplicate_key", "key")
    report.issues += _half_done_writes(checkup)
    return report


def _half_done_writes(checkup: Checkup) -> list[Issue]:
    """A git index lock nobody holds, and journal entries no writer is finishing."""
    issues = []
    if (checkup.root / ".git" / "index.lock").exists() and not git_processes(checkup.root):
        detail = "git's index lock was left by a git that crashed (no git process runs here)"
        issues.append(Issue("stale_git_lock", ".git/index.lock", detail))
    journal = sorted((checkup.run_dir / "journal").glob("*.json"))
    if journal and not flock_held(checkup.run_dir / "write.lock"):
        issues += [
            Issue(
                "interrupted_write",
                entry.relative_to(checkup.root).as_posix(),
                "a write crashed before its commit",
            )
            for entry in journal
        ]
    return issues


def _wrong_versions(
    store: Store, docs: dict[str, _Doc], blobs: dict[str, str], head: dict[str, str]
) -> list[Issue]:
    """Clean files (disk = index = HEAD) whose indexed version is not git's last commit."""
    clean = {p for p, d in docs.items() if blobs.get(p) == d.blob == head.get(p)}
    last = store.last_commits(clean)
    return [
        Issue(
            "wrong_version",
            path,
            f"the index says version {docs[path].version_id[:10]}, "
            f"git's last commit of the file is {last.get(path, 'none')[:10]}",
        )
        for path in sorted(clean)
        if last.get(path) != docs[path].version_id
    ]


def _duplicates(
    docs: dict[str, _Doc], present: set[str], attribute: str, kind: str, label: str
) -> list[Issue]:
    holders: dict[str, list[str]] = {}
    for path, doc in docs.items():
        value = getattr(doc, attribute)
        if value and path in present:
            holders.setdefault(value, []).append(path)
    issues = []
    for value, paths in sorted(holders.items()):
        if len(paths) > 1:
            paths.sort()
            detail = f"{label} {value} is used by {len(paths)} files: {', '.join(paths)}"
            issues += [Issue(kind, path, detail) for path in paths]
    return issues


# --- processes and locks -------------------------------------------------------------------


def flock_held(path: Path) -> bool:
    """Whether another open file holds an flock on path (tried without waiting)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False  # no lock file: nobody ever locked it
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def git_processes(root: Path) -> list[int]:
    """Pids of git processes working in the vault that may hold its locks (as repo.py judges).

    `git cat-file --batch` helpers (GitPython keeps them alive for as long as a server
    runs) only read objects and never take a lock, so they do not count.
    """
    proc = Path("/proc")
    found = []
    if not proc.is_dir():
        return [0]  # cannot tell: assume one lives
    for pid_dir in proc.iterdir():
        if not pid_dir.name.isdigit():
            continue
        try:
            if not (pid_dir / "comm").read_text().strip().startswith("git"):
                continue
            argv = (pid_dir / "cmdline").read_bytes().split(b"\0")
            if b"cat-file" in argv:
                continue
            cwd = Path(os.readlink(pid_dir / "cwd"))
            # A git started elsewhere with -C, --git-dir or --work-tree names the vault.
            named = any(os.fsencode(root) in arg for arg in argv)
            if named or cwd == root or root in cwd.parents:
                found.append(int(pid_dir.name))
        except OSError:
            continue
    return found
