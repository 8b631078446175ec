"""Whether the vault may commit now: git must not be in the middle of something.

A commit made while a person's git works through a merge, a rebase, a cherry-pick, a revert
or a bisect, or while HEAD is not a branch, lands where that git throws it away (`rebase
--abort`, `switch main`) or sweeps an unfinished conflict into history. Git keeps that state
in files (HEAD, MERGE_HEAD, rebase-merge/, ...): reading them costs a few stats per write.
git itself is asked (unmerged paths) and the index checked whole (a damaged one fails every
write after the first) only when the index changed since it was last found sound.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from vault_tool.errors import VaultBusy, VaultError, VaultUnavailable

BISECT = "a bisect"
# Lies in git's folder while `vault-tool sync` merges, and after a sync died merging
# (sync_merge.py): the tool's own merge, never a person's.
SYNC_RECORD = "vault-tool/sync-merge"
SYNC_MERGING = "a merge by `vault-tool sync`"


def _finish(verb: str) -> str:
    return f"`git {verb} --continue` or `git {verb} --abort`"


# (what git leaves in its folder while it works, what is in progress, the way out); the
# first present names the state (a stopped rebase may also leave a pick's files; a sync's
# merge leaves MERGE_HEAD, or while git writes the folder nothing of git's own).
OPERATIONS = (
    (SYNC_RECORD, SYNC_MERGING, "retry in a moment"),
    ("rebase-merge", "a rebase", _finish("rebase")),
    ("rebase-apply/applying", "a `git am`", _finish("am")),
    ("rebase-apply", "a rebase", _finish("rebase")),
    ("MERGE_HEAD", "a merge", _finish("merge")),
    ("CHERRY_PICK_HEAD", "a cherry-pick", _finish("cherry-pick")),
    ("REVERT_HEAD", "a revert", _finish("revert")),
    ("sequencer", "a cherry-pick or revert of several commits",
     _finish("cherry-pick") + " (or the same of `git revert`)"),
    ("BISECT_LOG", BISECT, "`git bisect reset`"),
)  # fmt: skip
INDEX_HINT = (
    "rebuild git's index from the last commit: `rm .git/index && git reset` (your files stay "
    "as they are; anything you had staged must be staged again)"
)
# What git says when its index file is damaged: `vault-tool doctor` cannot mend that.
_INDEX_DAMAGED = re.compile(
    r"index file (corrupt|smaller than expected)|bad index file sha1 signature"
    r"|bad signature 0x[0-9a-f]+|cache entry has null sha1"
)
# A folder holding one of these is another repository or vault: never this vault's files.
NESTED_MARKERS = (".git", ".vault")
# A line git writes around a conflict: <<<<<<< ours, =======, >>>>>>> theirs.
_MARKER_LINE = re.compile(rb"^(?:(?:<{7}|>{7})(?:[ \t\r][^\n]*)?|={7}[ \t\r]*)$", re.MULTILINE)
_SHA = re.compile(r"[0-9a-f]{40}")
_MOVED = re.compile(r"\tcheckout: moving from (\S+) to ")


@dataclass(frozen=True)
class GitState:
    """What git is doing in the vault, read from its files."""

    branch: str | None  # None: HEAD is detached (or points outside refs/heads)
    head: str  # the ref or the sha HEAD names
    operation: str | None  # "a merge", "a rebase", ... in progress; None: nothing
    way_out: str

    @property
    def busy(self) -> bool:
        """Whether the vault must not commit now."""
        return self.operation is not None or self.branch is None

    @property
    def applying(self) -> bool:
        """Whether git is half-way through applying changes to the folder (a merge, a
        rebase, ...): what the folder holds then is no commit's state, so nothing indexes
        it. (A detached HEAD or a bisect's checkout shows a commit as it is.)"""
        return self.operation not in (None, BISECT)

    def refusal(self, git_dir: Path) -> VaultBusy:
        """The error of a write or hand edit that must wait for this state to end."""
        if self.operation == SYNC_MERGING:
            return VaultBusy(
                "`vault-tool sync` is merging the remote's changes; the vault commits nothing "
                "until it is done",
                hint="retry in a moment (a merge a stopped sync left is undone by the next "
                "write or sync: nothing is lost)",
            )
        if self.operation is not None:
            return VaultBusy(
                f"{self.operation} is in progress in the vault's repository; the vault commits "
                "nothing until it is over",
                hint=f"finish it with {self.way_out}; then retry (hand edits are taken in then)",
            )
        branch = previous_branch(git_dir) or "main"
        where = self.head[:7] if _SHA.fullmatch(self.head) else self.head
        return VaultBusy(
            f"HEAD is detached at {where}: a commit now would be lost when a branch is checked "
            "out again, so the vault commits nothing",
            hint=f"check the branch out again (`git switch {branch}`); then retry",
        )


def read_state(git_dir: Path) -> GitState:
    """The state of the repository whose git folder is git_dir (a worktree's has its own)."""
    try:
        head = (git_dir / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        head = ""
    ref = head.removeprefix("ref: ").strip() if head.startswith("ref:") else None
    branch = ref.removeprefix("refs/heads/") if ref and ref.startswith("refs/heads/") else None
    for marker, operation, way_out in OPERATIONS:
        if os.path.exists(os.path.join(git_dir, marker)):
            return GitState(branch, ref or head, operation, way_out)
    return GitState(branch, ref or head, None, "")


def previous_branch(git_dir: Path) -> str | None:
    """The branch HEAD last left (from HEAD's reflog), if it names one."""
    try:
        with (git_dir / "logs" / "HEAD").open("rb") as log:
            log.seek(0, 2)
            log.seek(max(0, log.tell() - 65536))
            lines = log.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        moved = _MOVED.search(line)
        if moved and not _SHA.fullmatch(moved.group(1)):
            return moved.group(1)
    return None


def index_key(git_dir: Path) -> tuple[int, int, int] | None:
    """What tells one version of git's index file from another: inode, mtime and size."""
    try:
        stat = (git_dir / "index").stat()
    except OSError:
        return None
    return (stat.st_ino, stat.st_mtime_ns, stat.st_size)


def index_damage(git_dir: Path) -> str | None:
    """Why git's index file is damaged (its header or its checksum), or None if it is sound.

    git reads the index without checking its checksum, so a truncated or altered one often
    reads without complaint until git writes it again.
    """
    try:
        data = (git_dir / "index").read_bytes()
    except FileNotFoundError:
        return None  # no index yet: git makes one
    except OSError as problem:
        return f"it cannot be read ({problem.strerror})"
    if len(data) < 32:
        return f"it is {len(data)} bytes long, shorter than its own header"
    if data[:4] != b"DIRC":
        return "it does not begin with git's index signature"
    trailer = data[-20:]
    # index.skipHash writes zeros in place of the checksum.
    if trailer != bytes(20) and hashlib.sha1(data[:-20], usedforsecurity=False).digest() != trailer:
        return "its checksum does not match its content (truncated or altered)"
    return None


def damaged_index(reason: str) -> VaultUnavailable:
    """The error of a write refused because git's index is damaged."""
    return VaultUnavailable(f"git's index (.git/index) is damaged: {reason}", hint=INDEX_HINT)


def unmerged_busy(paths: list[str]) -> VaultBusy:
    """The error of a write refused while git's index holds conflicts not resolved yet."""
    shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
    return VaultBusy(
        f"git's index has unmerged paths (a conflict not resolved yet): {shown}; the vault "
        "commits nothing until they are resolved",
        hint="fix each file and `git add` it, or undo the conflicting change with "
        "`git reset --merge`; then retry",
    )


def git_failure(command: str, stderr: str) -> VaultError:
    """The error of a git command that failed, with the fix its message points to."""
    if _INDEX_DAMAGED.search(stderr):
        return VaultUnavailable(
            f"git {command} failed: git's index (.git/index) is damaged: {stderr}",
            hint=INDEX_HINT,
        )
    return VaultError(
        f"git {command} failed: {stderr}", hint="run `vault-tool doctor`; nothing was changed"
    )


RunGit = Callable[..., str]


def unmerged_paths(run_git: RunGit) -> list[str]:
    """Paths git's index holds at a conflict stage (`git ls-files -u`)."""
    out = run_git("-c", "core.quotepath=off", "ls-files", "--unmerged", "-z")
    return sorted({record.split("\t", 1)[1] for record in out.split("\0") if "\t" in record})


class Guard:
    """Refuses commits while git is busy; remembers the last index version found sound."""

    def __init__(self, git_dir: Path, run_git: RunGit) -> None:
        self.git_dir = git_dir
        self._run_git = run_git
        self._sound_index: tuple[int, int, int] | None = None
        # The index as the vault last wrote it: no other git has written it since.
        self.index_written: tuple[int, int, int] | None = None
        # Undoes a dead sync's merge now if the vault's write lock is free (store.py).
        self.undo_stopped_sync: Callable[[], None] | None = None

    def require_idle(self) -> None:
        """Raise VaultBusy (or VaultUnavailable for a damaged index) unless the vault may
        commit now."""
        self.require_idle_branch()
        key = index_key(self.git_dir)
        if key is None or key == self._sound_index:
            return
        # Read before the checks: an index replaced meanwhile has another key, checked next time.
        reason = index_damage(self.git_dir)
        if reason is not None:
            raise damaged_index(reason)
        unmerged = unmerged_paths(self._run_git)
        if unmerged:
            raise unmerged_busy(unmerged)
        self._sound_index = key

    def require_idle_branch(self) -> str:
        """The branch HEAD is on, or VaultBusy while git is busy (its files only: cheap)."""
        state = read_state(self.git_dir)
        if state.operation == SYNC_MERGING and self.undo_stopped_sync is not None:
            # Whoever notices a sync's record undoes its merge if that sync is dead (the
            # lock is free); a live sync holds the lock, and this waits for it as for git.
            self.undo_stopped_sync()
            state = read_state(self.git_dir)
        if state.busy or state.branch is None:
            raise state.refusal(self.git_dir)
        return state.branch

    def index_replaced(self, before: tuple[int, int, int] | None) -> None:
        """The vault replaced git's index (under its lock), changing only its own paths: if
        the index was sound before, the new one is too."""
        self.index_written = index_key(self.git_dir)
        if before is not None and before == self._sound_index:
            self._sound_index = self.index_written


class NestedFolders:
    """Which vault-relative paths lie in a folder holding another repository or vault."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._nested: dict[str, bool] = {}  # folder -> whether it or a parent is another's

    def holds(self, relpath: str) -> bool:
        """Whether relpath belongs to a repository or vault nested in this one."""
        parts = relpath.split("/")[:-1]
        return any(self._is_nested("/".join(parts[: n + 1])) for n in range(len(parts)))

    def _is_nested(self, folder: str) -> bool:
        if folder not in self._nested:
            self._nested[folder] = any(
                os.path.lexists(self.root / folder / name) for name in NESTED_MARKERS
            )
        return self._nested[folder]


CONFLICT_REASON = "holds merge conflict markers (<<<<<<<, =======, >>>>>>> lines)"
CONFLICT_HINT = (
    "resolve the conflict: keep the right lines and delete the marker lines (to quote "
    "markers in a memory, indent them)"
)


def conflict_line(data: bytes) -> int | None:
    """The line (from 1) where these bytes hold a conflict as git writes one: a `<<<<<<<`
    line, a `=======` line, then a `>>>>>>>` line; None if they hold none (a lone `=======`
    is a Markdown heading's underline). One pass over the marker lines only."""
    if b"<<<<<<<" not in data:
        return None
    stage, start = 0, 0
    for line in _MARKER_LINE.finditer(data):
        kind = line.group(0)[:1]
        if kind == b"<":
            stage, start = 1, line.start()
        elif kind == b"=" and stage == 1:
            stage = 2
        elif kind == b">" and stage == 2:
            return data.count(b"\n", 0, start) + 1
    return None


# The lines that open and close front matter, as python-frontmatter finds them.
_BOUNDARY = re.compile(rb"^-{3,}[ \t]*\r?$", re.MULTILINE)
_ANY_MARKER = re.compile(rb"^(?:<{7}|\|{7}|={7}|>{7})", re.MULTILINE)


def markers_in_front_matter(data: bytes) -> bool:
    """Whether a line of the file's front matter (all of the file after an opening `---`
    never closed) begins as a conflict marker does: a merge must never leave one there."""
    text = data.removeprefix("\ufeff".encode())
    opening = _BOUNDARY.match(text)
    if opening is None:
        return False
    closing = _BOUNDARY.search(text, opening.end())
    end = len(text) if closing is None else closing.start()
    return _ANY_MARKER.search(text, 0, end) is not None
