"""`vault-tool verify`: the files against the index against git, every disagreement listed.

It looks through a Checkup (checkup.py), so it repairs nothing: `reindex`, `commit` or any
command that writes does the fixing.

What verify costs (measured on 10k memories): one walk of the folder, one read and hash of
every file (~0.1 s), one pass over the index's stored fields (~0.15 s), one `git ls-tree`
of HEAD, one walk of the history for every clean file's version (0.17 s over 10k commits),
and a parse of only the files whose bytes differ from what the index holds (a file the
index holds parsed when it was indexed). Every version is checked; no sampling.

`verify --files` (files_only.py) checks only the files, for a clone with no index.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from vault_tool.checks.checkup import Checkup
from vault_tool.core import changelog
from vault_tool.core.changelog import Entry
from vault_tool.core.ids import path_id, path_problem
from vault_tool.core.memory import UTF8_HINT, Memory, parse
from vault_tool.core.moves import find_moves
from vault_tool.core.printable import escape
from vault_tool.core.redact import find_secret_kinds, redact_name
from vault_tool.errors import UnparseableFile, VaultError
from vault_tool.search.documents import INDEX_SCHEMA_VERSION
from vault_tool.search.index import Index
from vault_tool.storage.git import blob_sha
from vault_tool.storage.problems import MERGED_REASON, PURGE_HINT
from vault_tool.storage.processes import flock_held, git_processes
from vault_tool.storage.repo_state import CONFLICT_REASON, conflict_line, markers_in_front_matter
from vault_tool.storage.store import Store

Progress = Callable[[int, int], None]

# What to do about each kind of disagreement verify finds.
FIXES = {
    "index_missing": "run `vault-tool reindex` (the index is a cache of the files)",
    "index_outdated": "run `vault-tool reindex` (this vault-tool reads a newer index format)",
    "index_damaged": "run `vault-tool reindex` (the index is a cache of the files: nothing is "
    "lost; a running server rebuilds it by itself)",
    "not_indexed": "run `vault-tool reindex`, or let a running watcher take the file in",
    "indexed_but_missing": "run `vault-tool reindex` to drop the entry",
    "stale_index": "run `vault-tool reindex`, or let a running watcher take the file in",
    "indexed_twice": "run `vault-tool reindex` (searches serve the file's memory twice)",
    "wrong_version": "run `vault-tool reindex` to read versions from git again",
    "unparseable": "fix the file at the line shown (`vault-tool doctor` says how); its last "
    "good version stays searchable meanwhile",
    "refused": "remove the secret from the file; it was never written to git",
    "committed_secret": PURGE_HINT,
    "refused_name": "rename the file: a memory's name becomes its id and reaches every answer; "
    "under this one it is neither committed nor indexed",
    "uncommitted": "run `vault-tool commit` (or commit or undo it with git)",
    "deleted_uncommitted": "run `vault-tool commit` to record the deletion, or "
    "`git checkout -- PATH` to bring the file back",
    "moved_uncommitted": "run `vault-tool commit` to record the move (one commit of both "
    "paths), or move the file back",
    "conflict_markers": "resolve the conflict in the file: keep the right lines of each side "
    "and delete the marker lines (<<<<<<<, |||||||, =======, >>>>>>>); the watcher or "
    "`vault-tool commit` commits the fix",
    "duplicate_id": "if the files are one memory (added on two clones, or copied), keep one, "
    "move into it what the other adds and delete the other; if they are two memories, "
    "delete one's `id:` line (it is then addressed by its path); then commit",
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
    # The fix the file's own error gave (UnparseableFile.hint), which doctor shows.
    hint: str = ""
    moved_from: str | None = None  # a moved_uncommitted file's path in HEAD
    # conflict_markers only: in the body of a file committed as it is (a merge committed
    # it so: indexed and flagged), not in git's work in progress nor in the front matter.
    merged: bool = False

    def __post_init__(self) -> None:
        # As it is printed and recorded: a secret in a file's name never is (redact_name).
        self.path, self.detail = redact_name(self.path), redact_name(self.detail)
        self.moved_from = self.moved_from and redact_name(self.moved_from)

    @property
    def fix(self) -> str:
        """What to do about this kind of disagreement."""
        return FIXES[self.kind]

    def to_dict(self) -> dict[str, Any]:
        """The issue as --json prints it."""
        shown = {
            "kind": self.kind,
            "path": self.path,
            "detail": self.detail,
            "line": self.line,
            "fix": self.fix,
        }
        return shown | ({"moved_from": self.moved_from} if self.moved_from else {})


@dataclass
class VerifyReport:
    """What verify compared and every disagreement it found."""

    files: int = 0
    indexed: int = 0
    committed: int = 0
    index: str = "ok"  # ok, missing, outdated or damaged
    issues: list[Issue] = field(default_factory=list)
    # Memories holding values a merge set aside (`merge_conflicts`): no disagreement, but
    # for a person to review (doctor lists them). path -> the notes.
    set_aside: dict[str, list[Any]] = field(default_factory=dict)

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
            "issues": [i.to_dict() for i in self.issues],
        }


# --- verify --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Doc:
    memory_id: str
    version_id: str
    blob: str
    key: str


def _documents(index: Index) -> tuple[dict[str, Doc], list[str]]:
    """The index's document of each file, and the files it holds more than one of."""
    stored = index.read(lambda searcher: list(searcher.all_stored_fields()))
    docs = {
        f["path"]: Doc(f["memory_id"], f["version_id"], f["blob"], f.get("key") or "")
        for f in stored
    }
    paths = Counter(f["path"] for f in stored)
    return docs, sorted(p for p, n in paths.items() if n > 1)


def verify(checkup: Checkup, progress: Progress | None = None) -> VerifyReport:
    """Compare every file with the index and with git; list every disagreement."""
    store = checkup.store
    report = VerifyReport(index=checkup.index_state)
    on_disk = sorted(p for p, _ in store.iter_memory_paths())
    try:
        committed = store.head_blobs()
        listed = store.memory_files(list(committed))  # (as the folder's are: left_out.py)
        head = {p: committed[p] for p in listed}
    except VaultError:
        head = {}  # no commit yet: doctor's git check says so
    docs, twice = _documents(checkup.index) if checkup.index is not None else ({}, [])
    report.files, report.indexed, report.committed = len(on_disk), len(docs), len(head)
    if checkup.index is not None and checkup.index.damaged:
        report.index = "damaged"  # (found only by reading it: its segments all opened)
        report.issues.append(Issue("index_damaged", ".vault/index", checkup.index.damaged))
    elif checkup.index is None:
        detail = {
            "missing": "the search index is missing",
            "damaged": "the search index is damaged: a segment or its table of contents "
            "cannot be read (a zero-length or truncated file)",
        }.get(
            checkup.index_state,
            f"the index has schema version {checkup.index_version}; "
            f"this vault-tool uses {INDEX_SCHEMA_VERSION}",
        )
        report.issues.append(Issue(f"index_{checkup.index_state}", ".vault/index", detail))

    recorded = checkup.recorded_problems()
    blobs: dict[str, str] = {}
    arrived: dict[str, bytes] = {}  # files HEAD does not have: a move's possible new end
    for n, path in enumerate(on_disk, 1):
        if progress:
            progress(n, len(on_disk))
        data = read_or_issue(store, path)
        if isinstance(data, Issue):
            blobs[path] = ""  # (there, with no bytes any version could have)
            report.issues.append(data)
            continue
        if data is None:
            continue  # gone since the walk
        blob = blobs[path] = blob_sha(data)
        if path not in docs and (named := path_problem(path)):  # (indexed: its name served)
            report.issues.append(Issue("refused_name", path, named))
            continue
        if path not in head:
            report.issues.append(Issue("uncommitted", path, "new file, never committed"))
            arrived[path] = data
        elif head[path] != blob:
            report.issues.append(Issue("uncommitted", path, "differs from the last commit"))
        if notes := _set_aside(data, path):
            report.set_aside[path] = notes
        if marked := markers_issue(data, path, head.get(path) == blob):
            report.issues.append(marked)
            continue
        doc = docs.get(path)
        # A file whose bytes the index holds parsed when it was indexed; only the others
        # are parsed (without an index: those that differ from git, or had a problem).
        if doc is not None and doc.blob == blob:
            continue
        if checkup.index is None and head.get(path) == blob and path not in recorded:
            continue
        if isinstance(found := parsed_or_issue(data, path), Issue):
            report.issues.append(found)
            continue
        if secrets := find_secret_kinds(data.decode("utf-8")):  # (never indexed, git's or not)
            in_git = head.get(path) == blob
            said = f"holds a secret ({', '.join(secrets)})" + (" committed to git" * in_git)
            report.issues.append(Issue("committed_secret" if in_git else "refused", path, said))
        elif checkup.index is None:
            continue
        elif doc is None:
            report.issues.append(Issue("not_indexed", path, "on disk but not in the index"))
        else:
            report.issues.append(
                Issue("stale_index", path, "the index holds other bytes than the file")
            )
    # A file that cannot be taken in is reported once, with its own fix: `vault-tool
    # commit` would not commit it, so "uncommitted" would send the person the wrong way.
    blocked = {
        i.path
        for i in report.issues
        if i.kind in ("unparseable", "refused") or (i.kind == "conflict_markers" and not i.merged)
    }
    report.issues = [i for i in report.issues if i.kind != "uncommitted" or i.path not in blocked]
    for path in sorted(set(head) - set(blobs)):
        report.issues.append(
            Issue("deleted_uncommitted", path, "tracked in git but missing on disk")
        )
    report.issues = _paired_moves(store, report.issues, arrived)
    if checkup.index is not None:
        for path in twice:
            report.issues.append(Issue("indexed_twice", path, "the index holds it twice"))
        for path in sorted(set(docs) - set(blobs)):
            report.issues.append(
                Issue("indexed_but_missing", path, "in the index but missing on disk")
            )
        report.issues += _wrong_versions(store, docs, blobs, head)
        report.issues += duplicates(docs, set(blobs), "memory_id", "duplicate_id", "id")
        report.issues += duplicates(docs, set(blobs), "key", "duplicate_key", "key")
    report.issues += _half_done_writes(checkup)
    return report


def read_or_issue(store: Store, path: str) -> bytes | Issue | None:
    """The file's bytes (None: gone), or the `unparseable` issue of one too large to read."""
    try:
        return store.read_bytes(path)
    except UnparseableFile as problem:
        return Issue("unparseable", path, problem.reason, problem.line, problem.hint)


def parsed_or_issue(data: bytes, path: str) -> Memory | Issue:
    """The file's memory, or the `unparseable` issue that says why it has none."""
    try:
        return parse(data.decode("utf-8"), path)
    except UnicodeDecodeError as problem:
        return Issue("unparseable", path, f"not UTF-8 text ({problem.reason})", hint=UTF8_HINT)
    except UnparseableFile as problem:
        return Issue("unparseable", path, problem.reason, problem.line, problem.hint)


def markers_issue(data: bytes, path: str, committed: bool) -> Issue | None:
    """The conflict_markers issue of a file holding them, or None."""
    line = conflict_line(data)
    if line is None:
        return None
    if markers_in_front_matter(data):
        return Issue("conflict_markers", path, f"{CONFLICT_REASON} in its front matter", line)
    if committed:
        return Issue("conflict_markers", path, f"{MERGED_REASON} (committed)", line, merged=True)
    detail = f"{CONFLICT_REASON}, not committed (a merge or `git stash pop` stopped there)"
    return Issue("conflict_markers", path, detail, line)


def _set_aside(data: bytes, path: str) -> list[Any]:
    """The values a merge set aside in this file (its `merge_conflicts`), if any."""
    if b"merge_conflicts:" not in data:  # (the cheap test first: this runs on every file)
        return []
    try:
        notes = parse(data.decode("utf-8"), path).extra.get("merge_conflicts")
    except (UnparseableFile, UnicodeDecodeError):
        return []
    return notes if isinstance(notes, list) and notes else []


@dataclass(frozen=True)
class _End:
    """One end of a possible move, as core/moves.py pairs them."""

    memory_id: str
    memory: Memory | None = None
    data: bytes | None = None
    was: Entry | None = None
    was_data: bytes | None = None
    was_id_declared: bool = False
    new: bool = False


def _paired_moves(store: Store, issues: list[Issue], arrived: dict[str, bytes]) -> list[Issue]:
    """A new file and a deleted one that are one memory moved become one moved_uncommitted
    issue, paired as `vault-tool commit` will pair them (by id, else by content)."""
    gone = [i.path for i in issues if i.kind == "deleted_uncommitted"]
    new = [i.path for i in issues if i.kind == "uncommitted" and i.path in arrived]
    if not (gone and new):
        return issues
    ends: dict[str, _End] = {}
    for path in new:
        try:
            memory = parse(arrived[path].decode("utf-8"), path)
        except (UnparseableFile, UnicodeDecodeError):
            continue
        ends[path] = _End(memory.id or path_id(path), memory, arrived[path], new=True)
    for path in gone:
        was_data = store.show_file("HEAD", path) or b""
        try:
            old: Memory | None = parse(was_data.decode("utf-8"), path)
        except (UnparseableFile, UnicodeDecodeError):
            old = None
        was = changelog.entry(old, path) if old else changelog.entry_of_file(was_data, path)
        declared = old is not None and old.id is not None
        ends[path] = _End(was.memory_id, was=was, was_data=was_data, was_id_declared=declared)
    moves = find_moves(ends)
    if not moves:
        return issues
    targets = {new_path: old for old, new_path in moves.items()}
    kept = [i for i in issues if not (i.kind == "deleted_uncommitted" and i.path in moves)]
    return [
        Issue("moved_uncommitted", i.path, f"moved from {escape(targets[i.path])}, never "
              "committed", moved_from=targets[i.path])
        if i.kind == "uncommitted" and i.path in targets
        else i
        for i in kept
    ]  # fmt: skip


def _half_done_writes(checkup: Checkup) -> list[Issue]:
    """A git index lock nobody holds, and journal entries no writer is finishing."""
    issues = []
    if (checkup.root / ".git" / "index.lock").exists() and not git_processes(checkup.root):
        detail = "git's index lock was left by a git that crashed (no git process runs here)"
        issues.append(Issue("stale_git_lock", ".git/index.lock", detail))
    journal = checkup.journal()
    if journal and not flock_held(checkup.store.write_lock_path):
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
    store: Store, docs: dict[str, Doc], blobs: dict[str, str], head: dict[str, str]
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


def duplicates(
    docs: dict[str, Doc], present: set[str], attribute: str, kind: str, label: str
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
            # Escaped: a detail is printed as it is, and a path may hold a line break.
            named = ", ".join(escape(p) for p in paths)
            detail = f"{label} {escape(value)} is used by {len(paths)} files: {named}"
            issues += [Issue(kind, path, detail) for path in paths]
    return issues
