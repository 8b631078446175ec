"""A sync's merge, recorded while it runs, and undone by whoever finds it left by a dead sync.

`vault-tool sync` merges (or fast-forwards) under the vault's write lock, and records the
merge before git begins (.git/vault-tool/sync-merge: the commit merged into, the one
merged, and the files a person had changed before it began). The record is there only
while a live sync holds the lock, or after its sync died. So any process that takes the
lock and finds it (a running server's next write or its watcher, the next sync, the next
open) knows the sync is dead and that what git left is the tool's own merge, not a
person's; and while a live sync holds it, git's state reads as busy (repo_state.py), so no
watcher takes the merge's half-written files in as a person's hand edits.

A dead sync's merge is undone, never finished: git may have died half-way through writing
the folder (no MERGE_HEAD yet, some files of theirs written, its index lock left), and a
merge git finished has not had the settling sync does before its commit (remote.py). The
next sync makes it again from the start, and nothing is lost meanwhile: our commits are in
HEAD, theirs on the remote and in its tracking branch.

- git finished its merge (MERGE_HEAD names their commit): `git merge --abort`, or only
  `git merge --quit` when the merge's commit had landed (HEAD moved);
- git died inside its merge or fast-forward (HEAD not moved, no MERGE_HEAD): each path
  that differs between the two commits is put back as HEAD holds it, in git's index and
  in the folder, except the files a person had changed before the sync began (git never
  writes over those: a merge that would, refuses before it begins);
- HEAD moved on (the sync's commit or fast-forward landed): only the record goes.

A git the dead sync started may still be at work (only the sync was killed, not its
children): the undoing waits for it (VaultBusy; the next lock taken tries again).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from vault_tool.errors import VaultBusy
from vault_tool.storage.processes import HEAD_MOVERS, flock_held, git_processes
from vault_tool.storage.repo_state import SYNC_RECORD

log = logging.getLogger(__name__)

RunGit = Callable[..., str]
# The gits a dead sync may have left running that write the folder, git's index or HEAD.
_SYNCS_GITS = HEAD_MOVERS | {b"commit", b"add"}


@contextlib.contextmanager
def recorded(git_dir: Path, head: str, theirs: str, run: RunGit) -> Iterator[None]:
    """Record the merge of theirs into head while the block runs (the caller holds the
    vault's write lock); run is git in the vault, returning its output."""
    changed = set(_names(run("diff", "--name-only", "-z", "--no-renames", head, theirs)))
    status = run("--no-optional-locks", "status", "--porcelain=v1", "-z", "-uall", "--no-renames")
    dirty = sorted(changed.intersection(r[3:] for r in status.split("\0") if len(r) > 3))
    record = git_dir / SYNC_RECORD
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(
        json.dumps({"head": head, "theirs": theirs, "dirty": dirty, "pid": os.getpid()})
    )
    try:
        yield
    finally:
        record.unlink(missing_ok=True)


def read(git_dir: Path) -> dict | None:
    """The record of a sync's merge, if there is one (an older vault-tool wrote their
    commit alone)."""
    try:
        text = (git_dir / SYNC_RECORD).read_text().strip()
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        found = json.loads(text)
    except ValueError:
        found = None
    if not isinstance(found, dict):
        return {"head": None, "theirs": text, "dirty": [], "pid": None}
    return found


def undo(root: Path, git_dir: Path, run: RunGit) -> bool:
    """Undo the merge a dead sync left; True if there was a record. The caller holds the
    write lock (so the record's sync is dead). VaultBusy while a git it started still runs."""
    record = read(git_dir)
    if record is None:
        return False
    if git_processes(root, _SYNCS_GITS):
        raise VaultBusy(
            "a git command a stopped `vault-tool sync` started still runs in the vault",
            hint="retry in a moment: its merge is undone once it has ended",
        )
    lock = git_dir / "index.lock"
    if lock.exists():
        if flock_held(lock) or git_processes(root):
            raise VaultBusy(
                "git's index is locked by a running git while a stopped sync's merge waits "
                "to be undone",
                hint="retry once that git command has finished",
            )
        lock.unlink(missing_ok=True)  # the killed merge's: git never released it
    head = run("rev-parse", "--verify", "--quiet", "HEAD")
    merging = _text(git_dir / "MERGE_HEAD")
    if merging is not None and merging == record.get("theirs"):
        at_start = record.get("head") in (None, head)
        run("merge", "--abort" if at_start else "--quit")
    elif merging is None and record.get("head") == head:
        _put_back(root, run, head, record["theirs"], set(record.get("dirty") or []))
    (git_dir / SYNC_RECORD).unlink(missing_ok=True)
    log.warning(
        "undid the merge of %s a stopped `vault-tool sync` left; the next sync merges again",
        str(record.get("theirs"))[:10],
    )
    return True


def _put_back(root: Path, run: RunGit, head: str, theirs: str, dirty: set[str]) -> None:
    """Put every path git's merge of theirs may have written back as head holds it."""
    listed = _names(run("diff", "--name-status", "-z", "--no-renames", head, theirs))
    changes = list(zip(listed[::2], listed[1::2], strict=True))
    paths = [path for _, path in changes if path not in dirty]
    if not paths:
        return
    spec = "\0".join(paths).encode()
    pathspec = ["--pathspec-from-file=-", "--pathspec-file-nul"]
    run("--literal-pathspecs", "reset", "--quiet", head, *pathspec, stdin=spec)
    kept = [path for status, path in changes if status != "A" and path not in dirty]
    if kept:
        run(
            "--literal-pathspecs",
            "checkout",
            "--quiet",
            head,
            *pathspec,
            stdin="\0".join(kept).encode(),
        )
    for status, path in changes:
        if status == "A" and path not in dirty:
            _remove(root, path)


def _remove(root: Path, path: str) -> None:
    """Remove a file the merge added, and the folders that held only it."""
    target = root / path
    with contextlib.suppress(FileNotFoundError, IsADirectoryError, NotADirectoryError):
        target.unlink()
    for folder in target.parents:
        if folder == root:
            break
        try:
            folder.rmdir()
        except OSError:
            break  # not empty (or gone): the folders above it are kept too


def _names(out: str) -> list[str]:
    return [name for name in out.split("\0") if name]


def _text(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (FileNotFoundError, NotADirectoryError):
        return None
