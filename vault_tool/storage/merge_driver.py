"""The merge driver git runs on a memory file or a work state list
(`vault-tool merge-driver -- %O %A %B %L %P`).

git hands over three temporary files (the common ancestor, ours, theirs), the conflict
marker size and the file's path; the driver writes the result into ours and answers 0
(merged) or 1 (conflicts remain: git stops as for any text conflict). The rules are
core/merge.py's (a list's: its plan_list); this module reads the files, runs `git
merge-file` on what the rules leave to lines (the bodies, or the whole file when they do
not apply) and writes. A path that cannot hold a memory (README.md, a dot folder's file)
is merged as git merges text. Messages go to stderr, where git shows them; a clean merge
says nothing.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from vault_tool.core import merge
from vault_tool.core.ids import is_memory_path, is_state_path

# `git merge-file` answers the number of conflicts, at most 127; above that, an error.
_MOST_CONFLICTS = 127


def run(base: Path, ours: Path, theirs: Path, marker_size: int, path: str) -> int:
    """Merge theirs into ours (base: their common ancestor) and write ours; 0 if clean."""
    if is_state_path(path):
        merged = merge.plan_list(base.read_bytes(), ours.read_bytes(), theirs.read_bytes(), path)
        if isinstance(merged, merge.Fallback):
            _merge_files((ours, base, theirs), marker_size, path, ours)
            _say(f"{path}: {merged.reason}; merged as text, resolve it by hand")
            return 1
        ours.write_bytes(merged)
        return 0
    if not is_memory_path(path):
        return _merge_files((ours, base, theirs), marker_size, path, ours)
    outcome = merge.plan(base.read_bytes(), ours.read_bytes(), theirs.read_bytes(), path)
    if isinstance(outcome, merge.Fallback):
        conflicts = _merge_files((ours, base, theirs), marker_size, path, ours)
        if outcome.hint and conflicts:
            _say(f"{path}: {outcome.reason}; {outcome.hint}")
        if outcome.report:
            _say(f"{path}: {outcome.reason}; merged as text, resolve it by hand")
            return 1
        return conflicts
    body = outcome.body
    conflicts = 0
    if body is None:
        body, conflicts = _merge_bodies(outcome.bodies, marker_size, path)
        if body is None:
            return 1  # git could not merge the bodies (said why): ours stays as it was
    ours.write_bytes(outcome.text(body).encode("utf-8"))
    if conflicts:
        _say(
            f"{path}: the body has {conflicts} conflict(s) (marked in the body); the front "
            "matter is merged"
        )
        return 1
    return 0


def _merge_bodies(
    bodies: tuple[str, str, str], marker_size: int, path: str
) -> tuple[str | None, int]:
    """(merged body, conflicts) from git merge-file over the three bodies, or (None, 1)."""
    with tempfile.TemporaryDirectory(prefix="vault-tool-merge-") as folder:
        files = []
        for name, body in zip(("base", "ours", "theirs"), bodies, strict=True):
            file = Path(folder) / name
            file.write_bytes(body.encode("utf-8"))
            files.append(file)
        base, ours, theirs = files
        result = _git_merge_file((ours, base, theirs), marker_size, path)
    if result is None:
        return None, 1
    return result[0].decode("utf-8"), result[1]


def merge_bodies(base: str, ours: str, theirs: str, path: str) -> str | None:
    """Two changes of a body merged by git's text merge, or None when they conflict (or
    git could not merge them): for a caller that keeps the file as it is then."""
    body, conflicts = _merge_bodies((base, ours, theirs), 7, path)
    return None if conflicts else body


def _merge_files(files: tuple[Path, Path, Path], marker_size: int, path: str, out: Path) -> int:
    """git's text merge of whole files (ours, base, theirs) into out; its conflict count."""
    result = _git_merge_file(files, marker_size, path)
    if result is None:
        return 1
    out.write_bytes(result[0])
    return min(result[1], 1)


def _git_merge_file(
    files: tuple[Path, Path, Path], marker_size: int, path: str
) -> tuple[bytes, int] | None:
    """(merged bytes, number of conflicts) by `git merge-file --diff3`, or None on an error.
    Conflict markers name each side by its branch and last writer (`main (agent-b)`,
    `origin/main (agent-a)`): "ours" and "theirs" mean the opposite to the clone that did
    not merge. Those names cost git processes, so they are looked up only for a conflict."""
    result = _merge_file(files, marker_size, path, ("ours", "base", "theirs"))
    if result is None or result[1] == 0:
        return result
    return _merge_file(files, marker_size, path, _sides(path)) or result


def _merge_file(
    files: tuple[Path, Path, Path], marker_size: int, path: str, sides: tuple[str, str, str]
) -> tuple[bytes, int] | None:
    command = ["git", "merge-file", "-p", "--diff3", f"--marker-size={marker_size}"]
    for side in sides:
        command += ["-L", f"{side}: {path}"]
    done = subprocess.run(
        [*command, *map(str, files)], capture_output=True, check=False, stdin=subprocess.DEVNULL
    )
    if not 0 <= done.returncode <= _MOST_CONFLICTS:
        reason = done.stderr.decode("utf-8", "replace").strip() or f"exit {done.returncode}"
        _say(f"{path}: git merge-file could not merge it ({reason}); resolve it by hand")
        return None
    return done.stdout, done.returncode


def _sides(path: str) -> tuple[str, str, str]:
    """The labels of ours, the base and theirs. git runs a driver at the top of the work
    tree; `git merge` names the commit it merges in GITHEAD_<sha> (a sync merges a sha:
    the remote branch pointing at it is the better name). Anything git does not say (a
    rebase, a cherry-pick) keeps the plain word."""
    ours = _git("symbolic-ref", "--short", "-q", "HEAD") or "HEAD"
    ours_writer = _git("log", "-1", "--format=%an", "HEAD", "--", path)
    theirs, theirs_writer = "theirs", ""
    for key, name in os.environ.items():
        sha = key.removeprefix("GITHEAD_")
        if sha != key and _SHA.match(sha):
            refs = _git(
                "for-each-ref", "--points-at", sha, "--format=%(refname:short)",
                "refs/remotes", "refs/heads",
            )  # fmt: skip
            named = [ref for ref in refs.splitlines() if not ref.endswith("/HEAD")]
            theirs = (named or [name])[0]  # (origin/HEAD only points at a branch)
            theirs_writer = _git("log", "-1", "--format=%an", sha, "--", path)
            break
    return (_label(ours, ours_writer), "base", _label(theirs, theirs_writer))


_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?\Z")


def _label(side: str, writer: str) -> str:
    label = f"{side} ({writer})" if writer else side
    return "".join(c for c in label if c.isprintable())[:120]


def _git(*args: str) -> str:
    done = subprocess.run(
        ["git", *args], capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL
    )
    return done.stdout.strip() if done.returncode == 0 else ""


def _say(message: str) -> None:
    print(f"vault-tool merge-driver: {message}", file=sys.stderr)
