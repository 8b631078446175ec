"""Writing files so that a crash leaves either the old bytes or the new ones, never a mix.

A new version is written to a temp file beside its target, fsynced, renamed over the target,
and the folder fsynced so the rename itself survives a power cut. Temp files carry
TMP_MARKER in their name: .gitignore hides them and the next open of the vault removes them.

The seam for fault injection: every OS call that writes, syncs, links, renames or removes a
memory file or a journal goes through one of the module-level names below (os_write,
os_fsync, ...), looked up at each call. tests/faults.py swaps them, for one process, to make
any single call write short, fail (ENOSPC, EIO, EFBIG) or end the process, or to run a
person's save just before it. Product code never reassigns them.
"""

from __future__ import annotations

import contextlib
import errno
import os
import queue
import secrets
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

TMP_MARKER = ".vault-tmp-"
# How often a file is tried again in a machine-state folder removed under it (in_remade_folder).
REMADE_ATTEMPTS = 5

# The seam (see the module docstring). Nothing else in the write path calls these directly.
os_open = os.open
os_write = os.write
os_fsync = os.fsync
os_link = os.link
os_replace = os.replace
os_unlink = os.unlink


def temp_path(target: Path, kind: str = "") -> Path:
    """A fresh hidden temp file name beside target (kind: "old" for a kept old version)."""
    return target.with_name(f".{target.name}{TMP_MARKER}{kind}{secrets.token_hex(4)}")


def write_durably(path: Path, data: bytes) -> None:
    """Write all of data to path and fsync it, or raise (OSError) having written less."""
    write_all_durably([(path, data)])


def write_all_durably(files: list[tuple[Path, bytes]]) -> None:
    """write_durably for several files, their fsyncs at once (fsync_all): raises (OSError)
    unless every one holds all its bytes, on disk."""
    fds: list[int] = []
    try:
        for path, data in files:
            fds.append(os_open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
            write_all(fds[-1], data, path)
        fsync_all(fds)
        for fd, (path, data) in zip(fds, files, strict=True):
            if os.fstat(fd).st_size != len(data):
                raise OSError(
                    errno.EIO, f"wrote {len(data)} bytes but the file holds fewer", str(path)
                )
    finally:
        for fd in fds:
            os.close(fd)


def fsync_all(fds: list[int], fsync: Callable[[int], None] | None = None) -> None:
    """fsync several open files at once, each from its own thread: the filesystem then
    commits them together (ext4: one journal commit for all), so n files cost about what
    one does, where one after another each waits for the disk. Raises the first failure
    once every fsync has ended. fsync: the call to make (the seam's os_fsync)."""
    failures: list[BaseException] = []

    def sync(fd: int) -> None:
        try:
            (fsync or os_fsync)(fd)
        except BaseException as problem:
            failures.append(problem)

    done = [_SYNCERS.run(partial(sync, fd)) for fd in fds[1:]]
    if fds:
        sync(fds[0])
    for finished in done:
        finished.wait()
    if failures:
        raise failures[0]


class _Syncers:
    """The threads fsync_all hands its fsyncs to: started as needed and kept (a thread
    started for each fsync cost ~0.25 ms, several a write), daemons so that a hung disk
    never holds up the process's exit; none are inherited by a forked child."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._idle = 0
        self._mutex = threading.Lock()

    def run(self, job: Callable[[], None]) -> threading.Event:
        """Run job on a syncer thread; the event is set when it has ended."""
        finished = threading.Event()
        with self._mutex:
            if self._idle:
                self._idle -= 1
            else:
                threading.Thread(target=self._serve, name="fsync", daemon=True).start()
        self._jobs.put(partial(_then_set, job, finished))
        return finished

    def _serve(self) -> None:
        while True:
            self._jobs.get()()
            with self._mutex:
                self._idle += 1


def _then_set(job: Callable[[], None], finished: threading.Event) -> None:
    try:
        job()
    finally:
        finished.set()


_SYNCERS = _Syncers()
os.register_at_fork(after_in_child=lambda: globals().update(_SYNCERS=_Syncers()))


def write_all(fd: int, data: bytes, path: Path | str) -> None:
    """Write all of data to fd, or raise OSError: os.write may write less than asked (a
    signal, a file-size limit, a full disk), and a write that makes no progress is a full
    disk that does not say so."""
    view = memoryview(data)
    while view:
        written = os_write(fd, view)
        if written <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        view = view[written:]


def keep_old(target: Path, kept: Path) -> None:
    """Give target's current file a second name, kept (a hard link: no data blocks, so it
    works on a full disk), to rename back over target if the write has to be undone.
    FileNotFoundError if target does not exist."""
    try:
        os_link(target, kept)
    except OSError as problem:
        if problem.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK, errno.EXDEV):
            raise
        write_durably(kept, target.read_bytes())  # a filesystem without hard links


def create_exclusively(tmp: Path, target: Path) -> None:
    """Put tmp in place as target, failing (FileExistsError) if target exists by now: a
    file someone made meanwhile is never replaced. tmp may stay behind as a second name."""
    try:
        os_link(tmp, target)
    except OSError as problem:
        if problem.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV):
            raise
        if target.exists():  # no hard links here: checked, then renamed (a narrow window)
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(target)) from None
        os_replace(tmp, target)


def replace(source: Path, target: Path) -> None:
    """Rename source over target (atomic on one filesystem)."""
    os_replace(source, target)


def remove(path: Path) -> None:
    """Remove a file if it is there."""
    with contextlib.suppress(FileNotFoundError):
        os_unlink(path)


def replace_text(path: Path, text: str, *, private: bool = False) -> None:
    """Replace a small machine-local file (a record, a heartbeat) so no reader sees half of it;
    private: readable and writable by its owner alone (0600), as the logs and the ledger are.

    Not fsynced: these files are caches and notes the next start rebuilds, not memories.
    Their folder is machine state a person may remove at any moment (`git clean -xfd`):
    it is made again, and the write tried again, when it vanished mid-way.
    """
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")

    def write() -> None:
        if private:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.fchmod(fd, 0o600)  # (a temp file a killed write left keeps its mode otherwise)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
        else:
            tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)

    in_remade_folder(path.parent, write)


def fsync_folder(folder: Path) -> None:
    """fsync a folder, so the renames and removals in it are on disk."""
    fsync_folders([folder])


def fsync_folders(folders: list[Path]) -> None:
    """fsync these folders (each once) at once: see fsync_all."""
    fds: list[int] = []
    try:
        for folder in dict.fromkeys(folders):
            fds.append(os_open(folder, os.O_RDONLY))
        fsync_all(fds)
    finally:
        for fd in fds:
            os.close(fd)


def remove_empty_folders(folder: Path, root: Path) -> None:
    """Remove folder and its parents up to root while they are empty (undoing a mkdir)."""
    while folder != root and root in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def in_remade_folder(folder: Path, create: Callable[[], T]) -> T:
    """create() (which makes a file in folder), the folder made first, and made again if it
    is removed in between: machine state (.vault/run, the ledger) that a person's
    `git clean -xfd` may remove at any moment."""
    for attempt in range(REMADE_ATTEMPTS):
        folder.mkdir(parents=True, exist_ok=True)
        try:
            return create()
        except FileNotFoundError:
            if attempt == REMADE_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def write_new(path: Path, text: str) -> None:
    """Write a text file (and its folders) unless it exists: a person's own file stays."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        path.write_text(text, encoding="utf-8", newline="\n")


def describe_os_error(problem: OSError, what: str) -> tuple[str, str]:
    """(message, hint) for an OSError that stopped a write of `what`, in plain words."""
    code = problem.errno
    if code in (errno.ENOSPC, errno.EDQUOT):
        return f"the disk is full: {what} could not be written", "free some disk space and retry"
    if code == errno.EFBIG:
        return (
            f"a file-size limit (ulimit -f) stopped the write of {what}",
            "raise the limit for this process and retry",
        )
    if code == errno.EIO:
        return (
            f"the disk reported an I/O error while {what} was written",
            "check the disk (dmesg, SMART) and retry",
        )
    if code == errno.EROFS:
        return f"the vault is on a read-only filesystem: {what} could not be written", (
            "remount it read-write, or open the vault where it can be written"
        )
    # (which file, where the error names one: it may not be the memory's)
    named = f" ({problem.filename})" if problem.filename and problem.strerror else ""
    return f"{problem.strerror or problem}{named} while {what} was written", (
        "fix the cause and retry"
    )
