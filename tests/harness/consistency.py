"""Is a vault whole after a fault? The checks the crash harness and the torture run share.

Each check returns a list of problems (strings), empty when all is well, so a harness can
count them instead of stopping at the first. Nothing here writes to the vault except
recover(), which does what the next process to open the vault would do.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.helpers import eventually

# The counter the harnesses put in the bodies they write: "Revision 3 by w1."
REVISION_RE = re.compile(r"Revision (\d+) by ")
TMP_GLOB = ".*.vault-tmp-*"


@dataclass
class Ack:
    """The last acknowledged state of one memory: written at version with this revision,
    or deleted at version."""

    memory_id: str
    version: str
    revision: int
    deleted: bool = False


def git(root: Path, *args: str, check: bool = True) -> str:
    """Run git in the vault; its stdout."""
    done = subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, errors="replace"
    )
    if check and done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.strip()


def git_processes_in(root: Path) -> list[int]:
    """Pids of git processes working in this vault (from /proc)."""
    found = []
    root = root.resolve()
    for pid_dir in Path("/proc").iterdir():
        if not pid_dir.name.isdigit():
            continue
        try:
            if not (pid_dir / "comm").read_text().startswith("git"):
                continue
            if b"cat-file" in (pid_dir / "cmdline").read_bytes().split(b"\0"):
                continue  # a GitPython helper: reads only, and ends with its parent's pipe
            cwd = Path(os.readlink(pid_dir / "cwd"))
        except OSError:
            continue
        if cwd == root or root in cwd.parents:
            found.append(int(pid_dir.name))
    return found


def descendants(pid: int) -> list[int]:
    """Pids of a process's children and theirs (from /proc), taken before it is killed: a
    child forked but not yet exec'd is not a git process yet, and may become one."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            # (the command name, in parentheses, may hold spaces: split after it)
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
    found, frontier = [], [pid]
    while frontier:
        children = [child for child, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def ended(pid: int) -> bool:
    """Whether a process is gone (a zombie counts: it holds no file and runs no code)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def within(condition: Callable[[], Any], timeout: float, interval: float = 0.02) -> Any:
    """eventually(), for a harness that counts a timeout as a problem: None if time ran out."""
    try:
        return eventually(condition, timeout, interval)
    except AssertionError:
        return None


def wait_for_git(root: Path, timeout: float = 15.0, *, orphans: Sequence[int] = ()) -> bool:
    """Wait until no git process works in the vault and the orphans of a killed writer
    (its descendants()) have ended."""

    def quiet() -> bool:
        return all(ended(pid) for pid in orphans) and not git_processes_in(root)

    return within(quiet, timeout) is not None


def open_when_free(root: Path, *, client: str, timeout: float) -> Any:
    """Vault.open, retried while another process holds the vault (VaultBusy)."""
    from vault_tool.engine.vault import Vault
    from vault_tool.errors import VaultBusy

    def attempt() -> Any:
        try:
            return Vault.open(root, client=client)
        except VaultBusy:
            return None

    return eventually(attempt, timeout, interval=0.1, what="the vault to stop being busy")


def recover(root: Path, *, client: str = "harness", timeout: float = 60.0) -> Any:
    """What the next process does: open (repairing), then take in changes nobody watched.

    Returns the open Vault; the caller closes it. Raises if the vault stays unusable.
    """
    vault = open_when_free(root, client=client, timeout=timeout)
    try:
        vault.take_in_offline_changes()
    except BaseException:
        vault.close()
        raise
    return vault


def check_acks(vault: Any, acks: dict[str, Ack]) -> list[str]:
    """Every acknowledged write is there, at its acknowledged version or a later one."""
    root = vault.root
    problems = []
    # Newest first: a commit's position says which of two commits came later (the vaults
    # the harnesses make have a linear history; anything else falls back to merge-base).
    order = {
        sha: n for n, sha in enumerate(git(root, "rev-list", "--first-parent", "HEAD").split())
    }
    docs = {memory_id: vault.find(memory_id) for memory_id in acks}
    current = vault._store.last_commits({d.path for d in docs.values() if d is not None})
    for memory_id, ack in acks.items():
        doc = docs[memory_id]
        if ack.deleted:
            if doc is not None:
                problems.append(f"{memory_id}: acknowledged delete, but it is still indexed")
            continue
        if doc is None:
            if not _deleted_later(root, memory_id, ack.version):
                problems.append(f"{memory_id}: acknowledged at {ack.version[:10]}, now missing")
            continue
        data = (root / doc.path).read_bytes() if (root / doc.path).is_file() else None
        if data is None:
            problems.append(f"{memory_id}: indexed at {doc.path} but the file is gone")
            continue
        now = current.get(doc.path, "")
        if not _at_or_after(root, order, ack.version, now):
            problems.append(
                f"{memory_id}: acknowledged version {ack.version[:10]} is not in the history "
                f"of its current version {now[:10]}"
            )
        found = REVISION_RE.search(data.decode("utf-8", "replace"))
        revision = int(found.group(1)) if found else -1
        if revision < ack.revision:
            problems.append(
                f"{memory_id}: revision {revision} on disk, {ack.revision} was acknowledged"
            )
    return problems


def _at_or_after(root: Path, order: dict[str, int], acknowledged: str, current: str) -> bool:
    if acknowledged in order and current in order:
        return order[acknowledged] >= order[current]
    done = subprocess.run(
        ["git", "merge-base", "--is-ancestor", acknowledged, current or "HEAD"],
        cwd=root,
        capture_output=True,
    )
    return done.returncode == 0


def _deleted_later(root: Path, memory_id: str, version: str) -> bool:
    """Whether a commit after version deleted the memory (a write in flight when killed)."""
    subjects = git(
        root, "log", "--format=%s", f"--grep=^Memory-Id: {memory_id}$", f"{version}..HEAD"
    )
    # A delete that was on disk but not committed when the writer died is committed by Repair.
    return any(s.startswith(("Delete ", "Expire ", "Repair: ")) for s in subjects.splitlines())


def check_files(vault: Any, broken_on_purpose: set[str] = frozenset()) -> list[str]:  # type: ignore[assignment]
    """No half-written file: every memory file parses (except those broken on purpose)."""
    from vault_tool.core.memory import parse
    from vault_tool.errors import UnparseableFile

    problems = []
    for relpath, _ in vault._store.iter_memory_paths():
        if relpath in broken_on_purpose:
            continue
        try:
            parse((vault.root / relpath).read_bytes().decode("utf-8"), relpath)
        except (UnparseableFile, UnicodeDecodeError) as problem:
            problems.append(f"{relpath} does not parse: {problem}")
    return problems


def check_leftovers(root: Path) -> list[str]:
    """No temp file of an interrupted write, no journal, no stale git index lock."""
    problems = [
        f"temp file left: {p.relative_to(root)}"
        for p in root.rglob(TMP_GLOB)
        if ".git" not in p.relative_to(root).parts
    ]
    journal = root / ".vault" / "run" / "journal"
    if journal.is_dir():
        problems += [f"journal left: {p.name}" for p in journal.glob("*.json")]
    if (root / ".git" / "index.lock").exists():
        problems.append(".git/index.lock left behind")
    return problems


def check_commits(root: Path, since: str | None) -> list[str]:
    """No commit since `since` holds a memory file that does not parse (a broken state)."""
    from vault_tool.core.ids import is_memory_path
    from vault_tool.core.memory import parse
    from vault_tool.errors import UnparseableFile

    span = f"{since}..HEAD" if since else "HEAD"
    out = git(
        root,
        "-c",
        "core.quotepath=off",
        "log",
        "--format=\x01%H",
        "--name-only",
        "--diff-filter=AM",
        "--no-renames",
        span,
    )
    wanted = []
    for block in out.split("\x01")[1:]:
        sha, *paths = [line for line in block.splitlines() if line.strip()]
        wanted += [(sha, path) for path in paths if is_memory_path(path)]
    problems = []
    for (sha, path), blob in zip(wanted, _blobs(root, wanted), strict=True):
        try:
            parse(blob.decode("utf-8"), path)
        except (UnparseableFile, UnicodeDecodeError) as problem:
            problems.append(f"commit {sha[:10]} holds a broken {path}: {problem}")
    return problems


def _blobs(root: Path, wanted: list[tuple[str, str]]) -> list[bytes]:
    """The bytes of each (commit, path), through one `git cat-file --batch`."""
    return _cat_batch(root, [f"{sha}:{path}" for sha, path in wanted])


def _cat_batch(root: Path, names: list[str]) -> list[bytes]:
    """The bytes of each object named, through one `git cat-file --batch`."""
    if not names:
        return []
    listed = b"".join(name.encode() + b"\n" for name in names)
    out = subprocess.run(
        ["git", "cat-file", "--batch"], cwd=root, input=listed, capture_output=True, check=True
    ).stdout
    blobs, at = [], 0
    for _ in names:
        header_end = out.index(b"\n", at)
        size = int(out[at:header_end].split()[2])
        blobs.append(out[header_end + 1 : header_end + 1 + size])
        at = header_end + 1 + size + 1
    return blobs


def check_git(root: Path) -> tuple[list[str], list[str]]:
    """(fsck problems, status problems): `git fsck --strict` and `git status` clean."""
    fsck = subprocess.run(
        ["git", "fsck", "--strict", "--no-progress", "--no-dangling"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    fsck_problems = (
        []
        if fsck.returncode == 0 and not fsck.stdout.strip()
        else [f"git fsck: {(fsck.stdout + fsck.stderr).strip()[:500]}"]
    )
    status = git(root, "status", "--porcelain", "--untracked-files=all")
    return fsck_problems, [f"git status not clean: {status[:500]}"] if status else []


def check_verify(root: Path, allowed: set[str] = frozenset()) -> list[str]:  # type: ignore[assignment]
    """`vault-tool verify` (files vs index vs git), or the same comparison by hand."""
    try:
        from vault_tool.checks import verify as health
    except ImportError:
        return _verify_by_hand(root, allowed)
    with health.Checkup(root) as checkup:
        report = health.verify(checkup)
    return [
        f"verify: {issue.kind} {issue.path}: {issue.detail}"
        for issue in report.issues
        if issue.path not in allowed
    ]


def _verify_by_hand(root: Path, allowed: set[str]) -> list[str]:
    from vault_tool.engine.vault import Vault
    from vault_tool.storage.git import blob_sha

    problems = []
    with Vault.open(root, client="verify", catch_up=False) as vault:
        head = vault._store.head_blobs()
        states = vault._index.states()
        on_disk = dict(vault._store.iter_memory_paths())
        for path in sorted(set(on_disk) | set(states)):
            if path in allowed:
                continue
            data = vault._store.read_bytes(path)
            if data is None:
                problems.append(f"verify: {path} indexed but missing")
                continue
            blob = blob_sha(data)
            if head.get(path) != blob:
                problems.append(f"verify: {path} differs from HEAD")
            if path not in states or states[path][2] != blob:
                problems.append(f"verify: {path} index holds other bytes")
            doc = vault.at_path(path)
            if doc and doc.version_id != vault._store.last_commit(path):
                problems.append(f"verify: {path} indexed at a wrong version")
    return problems


def duplicate_ids(vault: Any) -> list[str]:
    """Ids used by more than one file."""
    seen: dict[str, str] = {}
    problems = []
    with vault._index.searcher() as searcher:
        for fields in searcher.all_stored_fields():
            other = seen.setdefault(fields["memory_id"], fields["path"])
            if other != fields["path"]:
                problems.append(f"id {fields['memory_id']} used by {other} and {fields['path']}")
    return problems


def server_log_errors(root: Path) -> list[str]:
    """ERROR and CRITICAL lines (and tracebacks) in the servers' logs."""
    problems = []
    for path in sorted((root / ".vault" / "run").glob("server.log*")):
        with contextlib.suppress(OSError):
            text = path.read_text(encoding="utf-8", errors="replace")
            problems += [f"{path.name}: {line}" for line in log_errors(text)]
    return problems


def log_errors(text: str) -> list[str]:
    """A log's ERROR and CRITICAL lines, and each traceback by the exception that ended it."""
    lines = text.splitlines()
    found = []
    for n, line in enumerate(lines):
        if " ERROR " in line or " CRITICAL " in line:
            found.append(line[:300])
        elif line.startswith("Traceback"):
            rest = lines[n + 1 :]
            end = next((k for k, x in enumerate(rest) if x.strip() and not x[:1].isspace()), None)
            ending = rest[end] if end is not None else "?"
            # The frame that raised, so the report says where as well as what.
            frames = [x.strip() for x in rest[:end] if x.strip().startswith("File ")]
            where = f" at {frames[-1][:200]}" if frames else ""
            found.append(f"Traceback: {ending[:300]}{where}")
    return found


# Lines git writes into a file it could not merge (the `=======` between them is left out:
# alone it is also Markdown's underline of a heading).
CONFLICT_MARKER_RE = re.compile(rb"^(?:<{7}|>{7}|\|{7})(?: |$)", re.MULTILINE)


def check_conflict_markers(root: Path) -> list[str]:
    """No version of any memory file, in any commit on any ref, holds conflict-marker lines."""
    from vault_tool.core.ids import is_memory_path

    listed = git(root, "-c", "core.quotepath=off", "rev-list", "--objects", "--all")
    paths: dict[str, str] = {}
    for line in listed.splitlines():
        sha, _, path = line.partition(" ")
        if path and is_memory_path(path):
            paths.setdefault(sha, path)
    problems = []
    blobs = _cat_batch(root, list(paths))
    for sha, data in zip(paths, blobs, strict=True):
        found = CONFLICT_MARKER_RE.search(data)
        if found is None:
            continue
        line_no = data.count(b"\n", 0, found.start()) + 1
        commits = git(root, "log", "--all", "--format=%h %s", f"--find-object={sha}")
        first = commits.splitlines()[-1] if commits else "no commit"
        problems.append(
            f"conflict markers committed: {paths[sha]} line {line_no} "
            f"({found.group().decode(errors='replace')!r}), first in commit {first[:90]}"
        )
    return problems


def check_secrets(root: Path) -> list[str]:
    """No line any commit on any ref added holds something the redactor calls a secret."""
    from vault_tool.core.redact import find_secret_kinds

    out = git(root, "-c", "core.quotepath=off", "log", "--all", "-p", "--format=\x01%h %s")
    problems = []
    for block in out.split("\x01")[1:]:
        header, _, patch = block.partition("\n")
        path = "?"
        for line in patch.splitlines():
            if line.startswith("+++ "):
                path = line[6:] if line.startswith("+++ b/") else line[4:]
            elif line.startswith("+"):
                kinds = find_secret_kinds(line[1:])
                if kinds:
                    problems.append(
                        f"secret in history: commit {header[:60]} adds {', '.join(kinds)} to {path}"
                    )
    return problems
