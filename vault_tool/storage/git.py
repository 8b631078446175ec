"""Running git in the vault, and what git knows: HEAD, blobs, a file's history, the log.

Git runs through GitPython's command path (`repo.git`), never its in-process index; trees
are read through objects.py's cache, and this process's own commits are remembered
(own_commits.py). Every git command goes through Git.run(), which waits out a person's git
locks with Backoff and reads git's stderr in one place. Commits are commits.py's business.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vault_tool.core import changelog
from vault_tool.errors import VaultBusy, VaultError, VaultUnavailable
from vault_tool.storage.objects import TreeCache
from vault_tool.storage.own_commits import OwnCommits
from vault_tool.storage.processes import git_processes
from vault_tool.storage.repo_state import git_failure

log = logging.getLogger(__name__)

# git's message when a lock file it needs exists: "Unable to create '<path>.lock': File exists."
_LOCK_HELD = re.compile(r"Unable to create '([^']+\.lock)': File exists")
# How long a git lock may stay before we check whether its owner still lives.
STALE_LOCK_SECONDS = 2.0
FALLBACK_NAME = "vault-tool"
FALLBACK_EMAIL = "vault-tool@localhost"
_GIT_ENV_TO_CLEAR = (
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_COMMON_DIR", "GIT_PREFIX",
)  # fmt: skip


@dataclass(frozen=True)
class Commit:
    """One commit in a file's history."""

    sha: str
    date: str
    author: str
    subject: str
    client: str | None
    path: str
    memory_ids: tuple[str, ...] = ()  # its Memory-Id trailers (a batch names several)


def blob_sha(data: bytes) -> str:
    """git's blob id of these bytes (what `git hash-object` prints)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def commit_message(subject: str, memory_ids: list[str], client: str) -> str:
    """Subject, blank line, trailers (core/changelog.py): `git log --grep` finds them."""
    return changelog.message(subject, memory_ids, client)


class Backoff:
    """Waiting for a lock (every lock loop in storage waits this way): sleeps doubling from
    10 ms to 0.5 s until a deadline; every stale_after, a look at whether the holder died."""

    def __init__(self, timeout: float, stale_after: float = STALE_LOCK_SECONDS) -> None:
        now = time.monotonic()
        self._deadline = now + timeout
        self._stale_after = stale_after
        self._stale_at = now + stale_after
        self._delay = 0.01

    @property
    def expired(self) -> bool:
        """Whether the wait has lasted its whole timeout."""
        return time.monotonic() >= self._deadline

    def holder_due(self) -> bool:
        """Whether it is time to look at the lock's holder (then again after stale_after)."""
        if time.monotonic() < self._stale_at:
            return False
        self._stale_at = time.monotonic() + self._stale_after
        return True

    def pause(self) -> None:
        """Sleep before the next try, twice as long as the last time (at most 0.5 s)."""
        time.sleep(self._delay)
        self._delay = min(self._delay * 2, 0.5)


def held_too_long(lock: str) -> VaultBusy:
    """The error of a git lock that never came free."""
    return VaultBusy(
        f"git's lock {lock} was held for too long",
        hint=f"wait for your own git command to finish; if none is running, remove {lock}",
    )


class Git:
    """One vault's git repository; one per process (its git helper processes close with it)."""

    def __init__(self, root: Path, repo: Any, lock_timeout: float) -> None:
        self.root = root
        self.repo = repo
        self.git_dir = Path(repo.git_dir)
        self.lock_timeout = lock_timeout
        # A stale index.lock is taken over, never deleted (commits.py sets how).
        self.take_over_index: Callable[[], None] | None = None
        # GitPython's persistent `git cat-file` helper is not thread-safe: threads take turns.
        self._repo_mutex = threading.RLock()
        # Parsed trees (objects.py): what HEAD holds at a path, without GitPython's tree walk.
        self.trees = TreeCache(self.read_object)
        self.own = OwnCommits()  # this process's own last commits (commits.py records them)

    def close(self) -> None:
        """Stop git helper processes (GitPython keeps `git cat-file` children alive)."""
        self.repo.close()
        with contextlib.suppress(Exception):
            self.repo.git.clear_cache()

    # --- running git -----------------------------------------------------------------------

    def run(
        self,
        *args: str,
        stdin: bytes | None = None,
        env: dict[str, str] | None = None,
        retry_moved_head: bool = True,
    ) -> str:
        """Run git in the vault, waiting out the user's own git locks with backoff.

        A lock (index.lock, HEAD.lock, refs/heads/<branch>.lock) still there after
        STALE_LOCK_SECONDS while no git process works in the vault was left by a git that
        was killed: it is removed, or every later commit would fail. A `git commit` that
        lost a race for HEAD is run again; an `update-ref` naming the old HEAD
        (retry_moved_head=False) must instead be rebuilt on the new one by its caller.
        """
        import git

        wait = Backoff(self.lock_timeout)
        while True:
            try:
                if stdin is None:
                    return self.repo.git.execute(
                        ["git", *args], env=env, strip_newline_in_stdout=True
                    )
                with tempfile.TemporaryFile() as source:
                    source.write(stdin)
                    source.seek(0)
                    return self.repo.git.execute(
                        ["git", *args], istream=source, env=env, strip_newline_in_stdout=True
                    )
            except git.GitCommandError as problem:
                stderr = str(problem.stderr or "")
                held = _LOCK_HELD.search(stderr)
                lock = held.group(1) if held else ".git/index.lock"
                # Another git moved HEAD between our read of it and our update: nothing was
                # committed, so the commit is simply made again on the new HEAD.
                moved = (
                    retry_moved_head and "cannot lock ref" in stderr and "but expected" in stderr
                )
                if (held or moved or "index.lock" in stderr) and not wait.expired:
                    if held and wait.holder_due():
                        self._clear_stale_lock(Path(lock))
                    wait.pause()
                    continue
                if held or "index.lock" in stderr:
                    raise held_too_long(lock) from None
                raise git_failure(args[0], stderr.strip() or str(problem)) from None

    def _clear_stale_lock(self, lock: Path) -> None:
        """Clear a git lock file of this repository if no git process could own it."""
        git_dir = (self.root / ".git").resolve()
        lock = lock if lock.is_absolute() else self.root / lock
        if not lock.name.endswith(".lock") or not lock.resolve().is_relative_to(git_dir):
            return
        if not lock.exists() or git_processes(self.root):
            return  # gone meanwhile, or its owner may still be at work
        if lock.resolve() == git_dir / "index.lock":
            if self.take_over_index is not None:
                self.take_over_index()
            return
        lock.unlink(missing_ok=True)
        shown = lock.resolve().relative_to(git_dir.parent).as_posix()
        log.warning("removed a stale %s left by a git that was killed", shown)

    @contextlib.contextmanager
    def dated(self, author_date: str | None) -> Iterator[None]:
        """git's author and committer date set to author_date for the commands inside."""
        dates = dict.fromkeys(("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"), author_date)
        if author_date:
            self.repo.git.update_environment(**dates)
        try:
            yield
        finally:
            if author_date:
                self.repo.git.update_environment(**dict.fromkeys(dates))

    @contextlib.contextmanager
    def authored(self, author: tuple[str, str] | None) -> Iterator[None]:
        """git's author set to (name, email) for the commands inside, the committer left as
        it is (the person whose machine commits); None: the author is the committer."""
        if author is None:
            yield
            return
        name, email = author
        before = self.repo.git.update_environment(GIT_AUTHOR_NAME=name, GIT_AUTHOR_EMAIL=email)
        try:
            yield
        finally:
            self.repo.git.update_environment(**before)  # (the identity fallback's, if set)

    def has_identity(self) -> bool:
        """Whether git knows who commits (asked through git itself, which reads every
        config source: repo, $GIT_CONFIG_GLOBAL or ~/.gitconfig, system)."""
        try:
            return bool(self.run("config", "user.name")) and bool(self.run("config", "user.email"))
        except VaultError:
            return False

    def use_identity_fallback_if_needed(self) -> None:
        """Commit as vault-tool when git knows no identity (never written to any config)."""
        if not self.has_identity():
            self.repo.git.update_environment(
                GIT_AUTHOR_NAME=FALLBACK_NAME,
                GIT_AUTHOR_EMAIL=FALLBACK_EMAIL,
                GIT_COMMITTER_NAME=FALLBACK_NAME,
                GIT_COMMITTER_EMAIL=FALLBACK_EMAIL,
            )

    # --- what git knows --------------------------------------------------------------------

    def head_sha(self) -> str:
        """The sha of HEAD (read from .git directly: no process)."""
        sha = self.head_or_none()
        if sha is None:
            raise VaultUnavailable(
                "the vault's repository has no commits", hint="run `vault-tool doctor`"
            )
        return sha

    def head_or_none(self) -> str | None:
        """The sha of HEAD, or None before the first commit (read from the ref files)."""
        try:
            with self._repo_mutex:
                return self.repo.head.dereference_recursive(self.repo, "HEAD")
        except ValueError:
            return None

    def head_tree(self, sha: str) -> bytes:
        """The binary id of a commit's root tree."""
        return self.trees.root_of(sha)

    def read_object(self, binsha: bytes) -> bytes:
        """The raw body of an object by binary id."""
        with self._repo_mutex:
            return self.repo.odb.stream(binsha).read()

    def head_blobs(self) -> dict[str, str]:
        """path -> blob sha of every file in HEAD (one `git ls-tree`)."""
        out = self.run("-c", "core.quotepath=off", "ls-tree", "-r", "-z", "HEAD")
        blobs: dict[str, str] = {}
        for record in out.split("\0"):
            if record:
                meta, path = record.split("\t", 1)
                blobs[path] = meta.split()[2]
        return blobs

    def ignored(self, paths: list[str]) -> set[str]:
        """Of these paths, those git ignores (.gitignore, info/exclude, global excludes; a
        file HEAD holds never is): one `git check-ignore` for all of them.

        Asked without git's index (--no-index), which a listing must not need (a damaged
        one is doctor's to name); what is tracked is then HEAD's, a tree lookup of only
        the few paths a rule matches."""
        # git refuses the whole question for a path beyond a symbolic link ("beyond a
        # symbolic link"); such a file is never followed, so never asked about.
        paths = _not_beyond_links(self.root, paths)
        if not paths:
            return set()
        with tempfile.TemporaryFile() as source:
            source.write("\0".join(paths).encode() + b"\0")
            source.seek(0)
            # Exit 1 says "none ignored": not an error, so git's status is read, not raised.
            status, out, err = self.repo.git.execute(
                ["git", "-c", "core.quotepath=off", "check-ignore", "--no-index", "-z", "--stdin"],
                istream=source,
                with_extended_output=True,
                with_exceptions=False,
                strip_newline_in_stdout=False,
            )
        if status not in (0, 1):
            raise git_failure("check-ignore", str(err).strip())
        return {p for p in str(out).split("\0") if p and self.head_blob(p) is None}

    def head_blob(self, relpath: str) -> str | None:
        """The blob sha of relpath in HEAD, or None if HEAD does not have it."""
        head = self.head_or_none()
        return None if head is None else self.trees.blob_at(self.trees.root_of(head), relpath)

    def last_commit(self, relpath: str) -> str | None:
        """The sha of the last commit that changed relpath (its version_id)."""
        if ours := self.own.version_of(self.head_or_none(), relpath):
            return ours
        return self.run("log", "-1", "--format=%H", "--", relpath) or None

    def log(
        self,
        limit: int = 50,
        client: str | None = None,
        since: str | None = None,
        memory_type: str | None = None,
    ) -> list[Commit]:
        """The vault's commits, newest first; optionally of one client, since a date, or
        writing memories of one type (by the changelog subjects)."""
        args = [f"--max-count={limit}", "--extended-regexp", "--all-match"]
        if client:
            args.append(f"--grep=^Client: {re.escape(client)}$")
        if memory_type:
            verbs = "|".join(changelog.TYPED_VERBS)
            args.append(f"--grep=^({verbs}) {re.escape(memory_type)}: ")
        if since:
            args.append(f"--since={since}")
        fields = (
            "%x01%H%x00%aI%x00%an%x00%s%x00%(trailers:key=Client,valueonly,separator=%x2C)"
            "%x00%(trailers:key=Memory-Id,valueonly,separator=%x1F)"
        )
        out = self.run(
            "-c", "core.quotepath=off", "log", "--name-only", f"--format={fields}", *args
        )
        commits = []
        for block in out.split("\x01")[1:]:
            header, _, names = block.partition("\n")
            sha, date, author, subject, client, memory_ids = header.split("\0")
            path = next((n for n in names.splitlines() if n.strip()), "")
            named = tuple(m.strip() for m in memory_ids.split("\x1f") if m.strip())
            commits.append(Commit(sha, date, author, subject, client.strip() or None, path, named))
        return commits

    def show_file(self, sha: str, relpath: str) -> bytes | None:
        """A file's bytes as of a commit, or None if it did not exist there."""
        head = self.head_or_none()
        if sha in ("HEAD", head):  # (HEAD's trees are the ones kept parsed)
            blob = self.head_blob(relpath) if head else None
            return self.read_object(bytes.fromhex(blob)) if blob else None
        try:
            with self._repo_mutex:
                return (self.repo.commit(sha).tree / relpath).data_stream.read()
        except (KeyError, ValueError):
            return None

    def diff(self, sha: str, relpath: str) -> str:
        """The patch a commit made to a file, as the file holds it (not the diff driver's
        lines, diff_setup.py)."""
        return self.run("show", "--format=", "--patch", "--no-textconv", sha, "--", relpath)

    def commit_exists(self, sha: str) -> bool:
        """Whether sha names a commit of this repository."""
        try:
            self.run("cat-file", "-e", f"{sha}^{{commit}}")
            return True
        except VaultError:
            return False


def _not_beyond_links(root: Path, paths: list[str]) -> list[str]:
    """The paths none of whose folders is a symbolic link (each folder looked at once)."""
    links: dict[str, bool] = {}

    def linked(folder: str) -> bool:
        if folder not in links:
            links[folder] = os.path.islink(root / folder)
        return links[folder]

    kept = []
    for path in paths:
        parts = path.split("/")[:-1]
        if not any(linked("/".join(parts[: n + 1])) for n in range(len(parts))):
            kept.append(path)
    return kept


def open_repo(root: Path) -> Any:
    """GitPython's handle on the repository at root (SHA-1 only), GIT_* variables cleared."""
    clear_git_environment(root)
    import git

    try:
        repo = git.Repo(root)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError) as problem:
        raise VaultUnavailable(
            f"{root} is not a git repository ({problem})",
            hint="run `vault-tool init` there, or fix .git",
        ) from None
    # Refuse a SHA-256 repository: GitPython, which reads the vault's history, cannot.
    with repo.config_reader("repository") as config:
        object_format = config.get_value("extensions", "objectformat", "sha1")
    if str(object_format).lower() != "sha1":
        repo.close()
        raise VaultUnavailable(
            f"{repo.working_dir} is a {object_format} git repository; vaults use SHA-1 object ids",
            hint="make the vault in a new folder (`vault-tool init PATH`), or in a repository "
            "made with `git init --object-format=sha1`",
        )
    return repo


def clear_git_environment(root: Path) -> None:
    """Unset the GIT_* variables that redirect git, and stop git's search at the vault."""
    # A vault nested in another repository must never commit into it, and a GIT_DIR set
    # by a hook or a shell must not redirect our writes.
    for name in _GIT_ENV_TO_CLEAR:
        os.environ.pop(name, None)
    os.environ["GIT_CEILING_DIRECTORIES"] = str(root.parent)
