"""Putting a set of file changes in place, and undoing them: the file half of Store.apply.

Order, per change: the new bytes go to a temp file (all of them, fsynced, or the write
fails); the current file gets a second name (a hard link, TMP_MARKER in its name); the
target is read again and compared with the bytes the caller planned from (someone may have
saved it meanwhile); then the temp file is renamed over the target (a new file is linked
in, which fails if one appeared), or the target is removed. Undoing is renaming the kept
name back, so it needs no free space, and only over the write's own bytes (put_back). A
journal names every temp and kept file first, so the next open can finish what a crash or
a failed undo left (Store.repair).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISREG
from typing import Final

from vault_tool.core import redact, stages
from vault_tool.errors import InvalidInput, UnparseableFile, VaultError, VersionConflict
from vault_tool.storage import durable
from vault_tool.storage.git import blob_sha
from vault_tool.storage.processes import CLEAN, git_processes

log = logging.getLogger(__name__)

# A journal whose undo could not finish is renamed to end so: repair then undoes, never
# commits, what it names.
UNDO_SUFFIX = ".undo.json"
# Less free space than this when git fails: the disk is taken to be full.
NEARLY_FULL = 1 << 20
# How long a write that made new files waits for a `git clean` running in the vault to end
# (_wait_out_cleans); a clean still running then is left to finish on its own.
CLEAN_WAIT_SECONDS = 10.0
CLEAN_POLL_SECONDS = 0.01


class Unchecked:
    """The caller did not read the target before planning the change: nothing to compare."""

    def __repr__(self) -> str:
        return "UNCHECKED"


UNCHECKED: Final = Unchecked()


@dataclass(frozen=True)
class Change:
    """One path to write (data) or delete (data is None), with a title for messages.

    expected: the target's bytes the change was planned from (None: no file), compared
    again right before the rename; UNCHECKED skips the comparison.
    """

    path: str
    data: bytes | None
    title: str = ""
    expected: bytes | Unchecked | None = UNCHECKED


@dataclass
class _Staged:
    change: Change
    target: Path
    kept: Path | None  # the old file's second name, while it has one
    placed: bool = False  # the target holds the change (written or removed)


class Placing:
    """One Store.apply's files: put_in_place(), then finish() or undo()."""

    def __init__(
        self,
        root: Path,
        journal: Path,
        changes: list[Change],
        message: str,
        resolve: Callable[[str], Path],
        head_sha: Callable[[], str],
    ) -> None:
        self.root = root
        self.journal = journal
        self.changes = changes
        self.head_sha = head_sha
        self.targets = [resolve(change.path) for change in changes]
        self.tmps = [durable.temp_path(t) for t in self.targets]
        self.keeps = [durable.temp_path(t, "old-") for t in self.targets]
        self.message = message
        self.staged: list[_Staged] = []
        self.made_folders: list[Path] = []

    def _rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def journal_bytes(self) -> bytes:
        entries = [
            {
                "path": change.path,
                "tmp": self._rel(tmp),
                "keep": self._rel(keep),
                "blob": blob_sha(change.data) if change.data is not None else None,
                "title": change.title,
            }
            for change, tmp, keep in zip(self.changes, self.tmps, self.keeps, strict=True)
        ]
        return json.dumps({"message": self.message, "entries": entries}).encode()

    @stages.timed("files")
    def put_in_place(self) -> None:
        """Write every change's file; raises (having changed only what undo() undoes).

        The journal and every new version are written first and synced together (each
        must be on disk before the first target changes; the disk then commits them at
        once, not one after another), and the folders synced together after the renames.
        """
        self.journal.parent.mkdir(parents=True, exist_ok=True)
        files = [(self.journal, self.journal_bytes())]
        for change, target, tmp in zip(self.changes, self.targets, self.tmps, strict=True):
            if change.data is not None:
                self._make_folders(target.parent)
                files.append((tmp, change.data))
        durable.write_all_durably(files)
        for change, target, tmp, keep in zip(
            self.changes, self.targets, self.tmps, self.keeps, strict=True
        ):
            staged = _Staged(change, target, self._keep(target, keep))
            self.staged.append(staged)
            self._compare(change, target, staged.kept is not None)
            if change.data is None:
                if staged.kept is not None:
                    durable.remove(target)
            elif staged.kept is not None:
                durable.replace(tmp, target)
            else:
                try:
                    durable.create_exclusively(tmp, target)
                except FileExistsError:
                    raise self._conflict(change, "made") from None
            staged.placed = True
            if change.data is not None and staged.kept is None:
                durable.remove(tmp)  # a create leaves it as a second name of the new file
        durable.fsync_folders([staged.target.parent for staged in self.staged])

    def finish(self, in_head: Callable[[str, bytes], bool]) -> None:
        """The commit landed: drop the kept old versions, then the journal (in_head: whether
        HEAD holds these bytes at a path). A failure here fails nothing: the write is done,
        and the journal (kept if anything is left) has the next open remove what stayed."""
        try:
            # A new file is untracked to git until its commit has put it in git's index: a
            # `git clean` then removes it. The write is to be acknowledged: it is put back.
            made = [  # (through the temp names the journal holds, for a crash meanwhile)
                (staged.change.path, staged.target, tmp, staged.change.data)
                for staged, tmp in zip(self.staged, self.tmps, strict=False)
                if staged.kept is None and staged.placed and staged.change.data is not None
            ]
            if made:
                wait_out_cleans(self.root)
                put_back_removed(made, in_head)
            for staged in self.staged:
                if staged.kept is not None:
                    durable.remove(staged.kept)
            durable.remove(self.journal)
        except OSError as problem:
            log.warning("committed, but could not remove its temp files: %s", problem)

    def undo(self, cause: BaseException) -> VaultError | None:
        """Put every file back as it was after cause stopped the write; an error to raise
        if that could not be finished (the journal then stays, renamed, and the next open
        finishes the undo)."""
        failed: OSError | None = None
        for staged in reversed(self.staged):
            try:
                if staged.placed:
                    data = staged.change.data
                    ours = _holds(staged.target, data)
                    put_back(staged.target, staged.kept, ours=ours, deleted=data is None)
                elif staged.kept is not None:
                    durable.remove(staged.kept)
                staged.kept = None
                if staged.placed:
                    durable.fsync_folder(staged.target.parent)
                log.info("rolled back %s", staged.change.path)
            except OSError as problem:
                failed = failed or problem
        for tmp in self.tmps:
            with contextlib.suppress(OSError):
                durable.remove(tmp)
        for folder in reversed(self.made_folders):
            durable.remove_empty_folders(folder, self.root)
        if failed is None:
            with contextlib.suppress(OSError):  # (left, it is removed by the next open)
                durable.remove(self.journal)
            return None
        with contextlib.suppress(OSError):
            durable.replace(self.journal, self.journal.with_suffix(UNDO_SUFFIX))
        reported = failure(cause, self)
        what = reported.message if isinstance(reported, VaultError) else str(reported)
        _, hint = durable.describe_os_error(failed, self.what())
        return VaultError(
            f"{what.removesuffix('; nothing was changed')}; undoing the write failed too "
            f"({failed.strerror or failed}): the vault's next write or open finishes undoing it",
            hint=f"{hint}, then run `vault-tool verify`",
        )

    def what(self) -> str:
        if len(self.changes) == 1:
            change = self.changes[0]
            return f"{change.title!r} ({change.path})" if change.title else change.path
        return f"{len(self.changes)} files"

    def _make_folders(self, folder: Path) -> None:
        missing = []
        while not folder.exists() and folder != self.root:
            missing.append(folder)
            folder = folder.parent
        if missing:
            missing[0].mkdir(parents=True, exist_ok=True)
            self.made_folders.append(missing[0])

    def _keep(self, target: Path, keep: Path) -> Path | None:
        """Give target's file a second name; None if there is no file."""
        try:
            durable.keep_old(target, keep)
        except FileNotFoundError:
            return None
        return keep

    def _compare(self, change: Change, target: Path, exists: bool) -> None:
        """Refuse if the target is no longer what the change was planned from."""
        if isinstance(change.expected, Unchecked):
            return
        if _holds(target, change.expected) if exists else change.expected is None:
            return
        done = "made" if change.expected is None else "saved" if exists else "removed"
        raise self._conflict(change, done)

    def _conflict(self, change: Change, done: str) -> VersionConflict:
        return VersionConflict(
            f"{change.path} was {done} by someone else while this write ran; nothing was changed",
            current_version_id=self.head_sha(),
            hint="read it again (search with its memory_id) and retry with the new version",
        )


def failure(problem: BaseException, placing: Placing) -> BaseException:
    """The error to report for a failed apply whose files were put back."""
    if isinstance(problem, OSError):
        message, hint = durable.describe_os_error(problem, placing.what())
        return VaultError(f"{message}; nothing was changed", hint=hint)
    if isinstance(problem, VaultError) and _disk_full(problem.message, placing.root):
        return VaultError(
            f"the disk is full: git could not store the commit of {placing.what()}; "
            "nothing was changed",
            hint="free some disk space and retry",
        )
    return problem


def _disk_full(git_said: str, root: Path) -> bool:
    """Whether a git failure was the disk filling up (git does not always say so: "couldn't
    write .git/refs/heads/main.lock")."""
    if "No space left on device" in git_said:
        return True
    with contextlib.suppress(OSError):
        stat = os.statvfs(root)
        return stat.f_bavail * stat.f_frsize < NEARLY_FULL
    return False


def refuse_secrets(changes: list[Change]) -> None:
    """The last check before anything is written: no rendered file may hold a secret,
    whichever field it is in (the callers redact each field; this catches what they miss)."""
    for change in changes:
        if change.data is None:
            continue
        text = change.data.decode("utf-8", "replace")
        kinds = redact.find_secret_kinds(text)
        if kinds:
            field = _field_of_secret(text)
            where = "the body" if field == "content_md" else f"the {field!r} field"
            raise InvalidInput(
                f"{change.path}: {where} holds a secret ({', '.join(kinds)}); nothing was written",
                hint=f"remove the secret from {where} (keep a reference to where it is "
                "stored instead) and retry",
                field=field,
            )


_TOP_KEY = re.compile(r"^([A-Za-z_][\w-]*):")


def _field_of_secret(text: str) -> str:
    """The front matter key (or content_md, for the body) whose lines hold the first secret."""
    lines = text.lstrip("\ufeff").split("\n")
    key = "front matter"
    if lines and lines[0] == "---":
        for number, line in enumerate(lines[1:], start=1):
            if line == "---":
                body = "\n".join(lines[number + 1 :])
                return "content_md" if redact.find_secret_kinds(body) else "front matter"
            if found := _TOP_KEY.match(line):
                key = found.group(1)
            if redact.find_secret_kinds(line):
                return key
    return "content_md"


def wait_out_cleans(root: Path) -> bool:
    """Wait for every `git clean` working in the vault to end; whether one ran. A clean
    reads git's index once, then walks the folder: one that read it before a commit put a
    new file there takes the file for untracked and may remove it after the commit, and the
    watcher would then commit the removal. A clean begun after the commit leaves it."""
    cleans = set(git_processes(root, CLEAN)) - {0}  # (0: no /proc to ask)
    ran = bool(cleans)
    deadline = time.monotonic() + CLEAN_WAIT_SECONDS
    while cleans and time.monotonic() < deadline:
        time.sleep(CLEAN_POLL_SECONDS)
        cleans &= set(git_processes(root, CLEAN))
    if cleans:
        log.warning("a `git clean` still runs after %ss: not waited for", CLEAN_WAIT_SECONDS)
    return ran


def put_back_removed(
    made: list[tuple[str, Path, Path, bytes]], in_head: Callable[[str, bytes], bool]
) -> None:
    """Put back each new file just committed (path, target, a temp name, bytes) that is
    gone while HEAD still holds it (in_head: whether HEAD holds these bytes at path), never
    over a file made since. A checkout of an older commit, a reset or a `git rm` that
    removed it moved HEAD away from it: put back, it would be an untracked file that git
    then refuses to overwrite when the person checks their branch out again."""
    for path, target, tmp, data in made:
        if os.path.lexists(target) or not in_head(path, data):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        durable.write_durably(tmp, data)
        with contextlib.suppress(FileExistsError):
            durable.create_exclusively(tmp, target)
        durable.remove(tmp)
        log.warning("put back %s: removed (a `git clean`?) before git's index had it", path)


def finish_undo(root: Path, record: dict, read_bytes: Callable[[str], bytes | None]) -> None:
    """Finish the undo of a write that failed and could not undo itself (an undo journal):
    each file still holding the write's bytes gets its kept old version back, or is
    removed if the write made it. A file changed since is left alone."""
    for entry in record["entries"]:
        target = root / entry["path"]
        ours = blob_at(read_bytes, entry["path"]) == entry["blob"]
        kept = root / entry["keep"] if entry.get("keep") else None
        kept = kept if kept is not None and os.path.lexists(kept) else None
        put_back(target, kept, ours=ours, deleted=entry["blob"] is None)
        durable.remove(root / entry["tmp"])
        log.warning("finished undoing a failed write of %s", entry["path"])


def blob_at(read_bytes: Callable[[str], bytes | None], relpath: str) -> str | None:
    """The blob id of the file at relpath (None: no file); "" for one too large to read,
    which no write of the tool's made."""
    try:
        data = read_bytes(relpath)
    except UnparseableFile:
        return ""
    return blob_sha(data) if data is not None else None


def put_back(target: Path, kept: Path | None, *, ours: bool, deleted: bool) -> None:
    """Undo one placed change: the old file (kept) back at target, or the made file removed,
    but only while target still holds what the write placed (ours). Anything else is
    another program's since (the person's checkout or stash, an editor's save) and is left
    as it is: the old bytes put over it would lose that save, or leave the folder changed
    against the commit that git just checked out, which then blocks its next checkout.
    (A save landing between the look at target and the rename is lost: microseconds.)"""
    if not ours:
        if kept is not None:
            durable.remove(kept)
    elif kept is None:
        if not deleted:
            durable.remove(target)
    elif deleted:
        with contextlib.suppress(FileExistsError):  # made since: it stays, the old one goes
            durable.create_exclusively(kept, target)
        durable.remove(kept)
    else:
        durable.replace(kept, target)


def _holds(target: Path, data: bytes | None) -> bool:
    """Whether target is exactly this (None: no file); what is not a regular file never is."""
    try:
        stat = os.lstat(target)
        # (read only at data's size: a file of another size, perhaps far larger, is not it)
        if not S_ISREG(stat.st_mode) or data is None or stat.st_size != len(data):
            return False
        return target.read_bytes() == data
    except (FileNotFoundError, NotADirectoryError):
        return data is None


def is_undo_journal(path: Path) -> bool:
    """Whether this journal is of a write whose undo must be finished (see Placing.undo)."""
    return path.name.endswith(UNDO_SUFFIX)
