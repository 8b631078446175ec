"""Moving the branch a commit lands on in-process, as `git update-ref` does it.

`git update-ref -m MSG refs/heads/B NEW OLD` is a process per write (2.6-2.9 ms from a
small process at 10,000 notes, more from a large server on a busy machine; this takes
0.8-0.9 ms). With git's files backend it does this, and so does
move_branch: take `refs/heads/B.lock` (created exclusively: a git holding it is left to
git), read the branch under that lock (its loose file, else packed-refs) and refuse unless
it is OLD, write `NEW` into the lock file and fsync it (the vault sets
`core.fsync=committed`, which names references), append the reflog lines of the branch
and of HEAD (HEAD names the branch), and rename the lock onto the branch. A reader sees
the old value or the new, never a part.

Only where that is exactly what git does (in_process): the files backend (no
`extensions.refStorage`), not a linked worktree (its refs live in the common folder), no
`reference-transaction` hook (git runs it around every ref update), and a
`core.logAllRefUpdates` git reads as true or "always" (the default of a repository with
a work tree); anything else runs git's command, as before.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable
from pathlib import Path

from vault_tool.errors import VaultError
from vault_tool.storage import durable

# The whitespace git's copy_reflog_msg collapses to one space (its isspace: " \t\n\r").
_SPACES = re.compile(rb"[ \t\n\r]+")
_TRUE = ("", "yes", "on", "1", "true", "always")
_SHA = re.compile(rb"[0-9a-f]{40}")


def in_process(git_dir: Path, setting: Callable[[str, str], str], hooks: Path) -> bool:
    """Whether move_branch does exactly what git's update-ref would in this repository
    (setting(key, default): a git setting; hooks: the folder of git's hooks)."""
    if setting("extensions.refstorage", "files").lower() != "files":
        return False
    if (git_dir / "commondir").exists():
        return False
    if os.access(hooks / "reference-transaction", os.X_OK):
        return False
    return setting("core.logallrefupdates", "true").lower() in _TRUE


def move_branch(
    git_dir: Path,
    branch: str,
    new: str,
    old: str,
    ident: bytes,
    when: bytes,
    message: str,
    last_look: Callable[[], None] = lambda: None,
) -> bool:
    """Move refs/heads/<branch> from old to new (ident: `Name <email>`, when: git's
    `seconds +hhmm`); False where git must do it (a git holds a lock it needs, HEAD names
    another branch now, the branch is a symbolic ref): the caller runs git's command, which
    waits for its locks and says what is wrong. VaultError if the branch is not at old.

    last_look runs once the new value is written and synced, right before the reflog and
    the rename that make it the branch's; what it raises leaves the branch as it was."""
    name = f"refs/heads/{branch}"
    # git locks HEAD too when it writes HEAD's reflog: a checkout cannot move it meanwhile.
    with _GitLock(git_dir / "HEAD") as head, _GitLock(git_dir / name) as ref:
        if not (head.taken and ref.taken):
            return False
        current = _current(git_dir, name)
        if head.path.read_bytes().strip() != b"ref: " + name.encode() or current is False:
            return False
        if current != old.encode():
            shown = current.decode() if current else "missing"
            raise VaultError(
                f"update-ref failed: {name} is at {shown}, not at {old} (it moved meanwhile)",
                hint="retry; nothing was changed",
            )
        line = b"%s %s %s %s\t%s\n" % (old.encode(), new.encode(), ident, when, _logged(message))
        ref.write(new.encode() + b"\n")  # (written and synced before any reflog names it)
        last_look()
        for log in (git_dir / "logs" / name, git_dir / "logs" / "HEAD"):
            _append(log, line)
        ref.commit()
    return True


class _GitLock:
    """git's lock of a file: `<file>.lock`, made exclusively (taken: False if a git holds
    it); removed at the end unless committed (renamed onto the file)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = path.with_name(path.name + ".lock")
        self._fd: int | None = None

    @property
    def taken(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> _GitLock:
        self.lock.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            self._fd = durable.os_open(self.lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        return self

    def write(self, data: bytes) -> None:
        assert self._fd is not None
        durable.write_all(self._fd, data, self.lock)
        durable.os_fsync(self._fd)

    def commit(self) -> None:
        assert self._fd is not None
        fd, self._fd = self._fd, None
        try:
            os.close(fd)
            durable.os_replace(self.lock, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                durable.os_unlink(self.lock)
            raise

    def __exit__(self, *_: object) -> None:
        if self._fd is not None:  # (not committed: the lock is still ours to remove)
            os.close(self._fd)
            self._fd = None
            # Never raised: HEAD's lock is let go after the branch moved, and a write whose
            # branch moved has landed. One left behind is a stale lock (git.py's rule).
            with contextlib.suppress(OSError):
                durable.os_unlink(self.lock)


def _current(git_dir: Path, name: str) -> bytes | bool | None:
    """The sha a branch names (its loose file, else its line of packed-refs); None if it
    has none; False if its loose file holds no sha (a symbolic ref: left to git)."""
    try:
        value = (git_dir / name).read_bytes().strip()
    except FileNotFoundError:
        return _packed(git_dir, name)
    return value if _SHA.fullmatch(value) else False


def _packed(git_dir: Path, name: str) -> bytes | None:
    try:
        lines = (git_dir / "packed-refs").read_bytes().splitlines()
    except FileNotFoundError:
        return None
    wanted = name.encode()
    for line in lines:
        sha, _, ref = line.partition(b" ")
        if ref == wanted and _SHA.fullmatch(sha):
            return sha
    return None


def _logged(message: str) -> bytes:
    """A reflog message as git stores it: whitespace runs as one space, none at the ends."""
    return _SPACES.sub(b" ", message.encode()).strip(b" ")


def _append(log: Path, line: bytes) -> None:
    """Append one reflog line as git does (made if missing: logAllRefUpdates is on)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    fd = durable.os_open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        durable.write_all(fd, line, log)
    finally:
        os.close(fd)
