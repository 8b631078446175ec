"""The vault's git repository: running git, and what git knows (HEAD, blobs, versions, log).

Git is driven through GitPython's command path (`repo.git`), never its in-process index:
the git CLI honours the user's hooks, signing and settings like their own git does. A
tool write is committed through git's plumbing (trees.py builds the new trees) unless the
repository has commit hooks, which only `git commit` runs.
Store (store.py) adds the folder and the atomic write on top of this.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vault_tool.errors import VaultBusy, VaultError, VaultUnavailable
from vault_tool.storage.trees import Entries, NotATree, edit_tree, mktree_input, tree_sha

log = logging.getLogger(__name__)

# git's message when a lock file it needs exists: "Unable to create '<path>.lock': File exists."
_LOCK_HELD = re.compile(r"Unable to create '([^']+\.lock)': File exists")
# How long a git lock may stay before we check whether its owner still lives.
STALE_LOCK_SECONDS = 2.0
FALLBACK_NAME = "vault-tool"
FALLBACK_EMAIL = "vault-tool@localhost"
_GIT_ENV_TO_CLEAR = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_COMMON_DIR",
    "GIT_PREFIX",
)
# Hooks that `git commit` runs and the plumbing does not: with any of them, writes use it.
COMMIT_HOOKS = ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit")
# How often a write rebuilds its commit when a person's commit moves HEAD meanwhile.
HEAD_RACE_ATTEMPTS = 5
# `git commit` runs `git gc --auto` after every commit; plumbing commits do it this often.
AUTO_GC_EVERY = 50


@dataclass(frozen=True)
class Commit:
    """One commit in a file's history."""

    sha: str
    date: str
    author: str
    subject: str
    client: str | None
    path: str


def blob_sha(data: bytes) -> str:
    """git's blob id of these bytes (what `git hash-object` prints)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def commit_message(subject: str, memory_ids: list[str], client: str) -> str:
    """Subject, blank line, trailers: `git log --grep 'Client: x'` and `Memory-Id:` find it."""
    trailers = [f"Memory-Id: {m}" for m in memory_ids] + [f"Client: {client}"]
    return subject + "\n\n" + "\n".join(trailers) + "\n"


class Repository:
    """One vault's git repository; one per process (its git helper processes close with it)."""

    def __init__(self, root: Path, repo: Any, lock_timeout: float, pending_dir: Path) -> None:
        self.root = root
        self.repo = repo
        self.lock_timeout = lock_timeout
        # Paths committed whose entries in git's index are not updated yet (see commit_trees).
        self.pending_dir = pending_dir
        # GitPython's persistent `git cat-file` helper is not thread-safe: threads take turns.
        self._repo_mutex = threading.RLock()
        self._settings: dict[str, str] | None = None
        self._commits_since_gc = 0

    def close(self) -> None:
        """Stop git helper processes (GitPython keeps `git cat-file` children alive)."""
        self.repo.close()
        with contextlib.suppress(Exception):
            self.repo.git.clear_cache()

    def head_sha(self) -> str:
        """The sha of HEAD (read from .git directly: no process)."""
        sha = self._head_or_none()
        if sha is None:
            raise VaultUnavailable(
                "the vault's repository has no commits", hint="run `vault-tool doctor`"
            )
        return sha

    def head_blobs(self) -> dict[str, str]:
        """path -> blob sha of every file in HEAD (one `git ls-tree`)."""
        out = self.git("-c", "core.quotepath=off", "ls-tree", "-r", "-z", "HEAD")
        blobs: dict[str, str] = {}
        for record in out.split("\0"):
            if record:
                meta, path = record.split("\t", 1)
                blobs[path] = meta.split()[2]
        return blobs

    def head_blob(self, relpath: str) -> str | None:
        """The blob sha of relpath in HEAD, or None if HEAD does not have it."""
        try:
            with self._repo_mutex:
                return (self.repo.head.commit.tree / relpath).hexsha
        except (KeyError, ValueError):
            return None

    def last_commit(self, relpath: str) -> str | None:
        """The sha of the last commit that changed relpath (its version_id)."""
        out = self.git("log", "-1", "--format=%H", "--", relpath)
        return out or None

    def last_commits(self, paths: set[str], rev: str = "HEAD") -> dict[str, str]:
        """path -> last commit (at or before rev) that changed it, in one walk of the history."""
        wanted = set(paths)
        found: dict[str, str] = {}
        if not wanted:
            return found
        proc = self.repo.git.log(
            "--format=%x01%H", "--name-only", "-z", "--no-renames", rev, as_process=True
        )
        sha = ""
        try:
            for record in _records(proc.stdout):
                # A record is "\x01<sha>\n<first path>" or a further path of that commit.
                if record.startswith("\x01"):
                    sha, _, record = record[1:].partition("\n")
                record = record.strip("\n")
                if record in wanted:
                    found[record] = sha
                    wanted.discard(record)
                    if not wanted:
                        break
        finally:
            with contextlib.suppress(Exception):
                proc.proc.kill()
                proc.proc.wait()
        return found

    def history(self, relpath: str) -> list[Commit]:
        """Every commit that changed this file, newest first, following hand moves."""
        # -M90%: follow renames of (nearly) the same file, never a similar-looking new one.
        return self._log("--follow", "-M90%", "--", relpath, default_path=relpath)

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
            verbs = "Create|Update|Delete|Restore|Dismiss|Undismiss"
            args.append(f"--grep=^({verbs}) {re.escape(memory_type)}: ")
        if since:
            args.append(f"--since={since}")
        return self._log(*args, default_path="")

    def _log(self, *args: str, default_path: str) -> list[Commit]:
        fields = "%x01%H%x00%aI%x00%an%x00%s%x00%(trailers:key=Client,valueonly,separator=%x2C)"
        out = self.git(
            "-c", "core.quotepath=off", "log", "--name-only", f"--format={fields}", *args
        )
        commits = []
        for block in out.split("\x01")[1:]:
            header, _, names = block.partition("\n")
            sha, date, author, subject, client = header.split("\0")
            path = next((n for n in names.splitlines() if n.strip()), default_path)
            commits.append(Commit(sha, date, author, subject, client.strip() or None, path))
        return commits

    def show_file(self, sha: str, relpath: str) -> bytes | None:
        """A file's bytes as of a commit, or None if it did not exist there."""
        try:
            with self._repo_mutex:
                return (self.repo.commit(sha).tree / relpath).data_stream.read()
        except (KeyError, ValueError):
            return None

    def diff(self, sha: str, relpath: str) -> str:
        """The patch a commit made to a file."""
        return self.git("show", "--format=", "--patch", sha, "--", relpath)

    def commit_exists(self, sha: str) -> bool:
        """Whether sha names a commit of this repository."""
        try:
            self.git("cat-file", "-e", f"{sha}^{{commit}}")
            return True
        except VaultError:
            return False

    def git(
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

        deadline = time.monotonic() + self.lock_timeout
        stale_check = time.monotonic() + STALE_LOCK_SECONDS
        delay = 0.01
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
                if (held or moved or "index.lock" in stderr) and time.monotonic() < deadline:
                    if held and time.monotonic() >= stale_check:
                        self._remove_stale_lock(Path(lock))
                        stale_check = time.monotonic() + STALE_LOCK_SECONDS
                    time.sleep(delay)
                    delay = min(delay * 2, 0.5)
                    continue
                if held or "index.lock" in stderr:
                    raise _held_too_long(lock) from None
                raise VaultError(
                    f"git {args[0]} failed: {stderr.strip() or problem}",
                    hint="run `vault-tool doctor`; nothing was changed",
                ) from None

    def commit_written(self, paths: list[str], message: str, author_date: str | None) -> str | None:
        """Commit exactly these paths as they are on disk (a missing one as removed).

        Nothing else is committed: neither what a person staged nor their other edits.
        Returns the commit's sha, None if nothing changed.
        """
        if self.plumbing_allowed():
            try:
                return self.commit_trees(paths, message, author_date)
            except NotATree:
                pass  # a path runs through a file in HEAD: `git commit` sorts that out
        # `git commit -- <paths>` stages what it commits, but only for paths git already
        # tracks. Only an intent to add: a person's plain `git commit` running meanwhile
        # must not sweep the new file into their commit (ours would find nothing to commit).
        new = [p for p in paths if self.head_blob(p) is None]
        if new:
            self.git("add", "--intent-to-add", "--", *new)
        before = self._head_or_none()
        self._commit(message, paths, author_date)
        after = self._head_or_none()
        return after if after != before else None

    def commit_trees(
        self,
        paths: list[str],
        message: str,
        author_date: str | None,
        snapshot: dict[str, bytes | None] | None = None,
    ) -> str | None:
        """The commit `git commit -- <paths>` would make, without reading the whole index.

        git writes every object (so core.fsync and its object checks apply); the new trees
        come from trees.py. Like `git commit`, it holds git's index lock from before HEAD
        moves until the index has these paths: a person's `git commit` meanwhile would
        otherwise be built from an index that still has the old files, and revert them.
        HEAD moves by compare-and-swap, so a ref update from elsewhere is never overwritten;
        the commit is rebuilt on top of it. With a snapshot (path -> bytes, None for gone),
        those bytes are committed whatever the files hold by now. Raises NotATree when
        plumbing cannot make this commit.
        """
        if snapshot is None:
            present = [p for p in paths if (self.root / p).is_file()]
            blobs = self.git("hash-object", "-w", "--", *present).split("\n") if present else []
        else:
            present = [p for p in paths if snapshot.get(p) is not None]
            blobs = [
                self.git("hash-object", "-w", "--stdin", f"--path={p}", stdin=snapshot[p])
                for p in present
            ]
        changes: dict[str, str | None] = dict.fromkeys(paths)
        changes.update(zip(present, blobs, strict=True))
        moved = index_current = False
        note = None
        try:
            with self._index_locked() as staged_index:
                # Until git's index has the paths, a note names them: if this process dies
                # after HEAD moved, whoever next takes the index lock (the next write, or
                # the next open) resets them to HEAD first (_index_locked).
                note = self._note_pending(paths)
                sha = self._move_head(changes, message, author_date)
                if sha is None:
                    return None
                moved = True
                staged = self._stage(staged_index, paths, changes, snapshot, sha)
            index_current = staged  # (only now: the staged copy has replaced the index)
        finally:
            if note is not None and (not moved or index_current):
                note.unlink(missing_ok=True)
        self._commits_since_gc += 1
        if self._commits_since_gc >= AUTO_GC_EVERY:
            self._commits_since_gc = 0
            with contextlib.suppress(VaultError):  # packing is housekeeping, never a failure
                self.git("gc", "--auto", "--quiet")
        return sha

    def _stage(
        self,
        staged_index: Path,
        paths: list[str],
        changes: dict[str, str | None],
        snapshot: dict[str, bytes | None] | None,
        sha: str,
    ) -> bool:
        """Put the committed paths into the locked copy of git's index; False if git failed
        (the commit has landed, only the index, what `git status` compares, lags)."""
        env = {"GIT_INDEX_FILE": str(staged_index)}
        try:
            if snapshot is None:
                self.git("update-index", "--add", "--remove", "--", *paths, env=env)
            else:  # the snapshot's blobs, not what the files hold by now
                info = _index_info(changes)
                self.git("update-index", "-z", "--index-info", stdin=info, env=env)
        except VaultError as problem:
            log.warning("committed %s; git's index is behind until reopened: %s", sha[:10], problem)
            return False
        return True

    def _move_head(
        self, changes: dict[str, str | None], message: str, author_date: str | None
    ) -> str | None:
        """Make the commit of changes on HEAD and move HEAD to it; None if nothing changed."""
        subject, _, rest = message.partition("\n\n")
        for attempt in range(HEAD_RACE_ATTEMPTS):
            parent = self.head_sha()
            with self._repo_mutex:
                old_root = self.repo.commit(parent).tree.binsha
                root, trees = edit_tree(self._read_object, old_root, changes)
            if root == old_root:
                return None
            self._write_trees(trees)
            args = ["commit-tree", (root or tree_sha({})).hex(), "-p", parent, "-m", subject]
            if rest.strip():
                args += ["-m", rest.strip()]
            if self._setting("commit.gpgsign") == "true":
                args.insert(1, "-S")
            with self._dated(author_date):
                sha = self.git(*args)
            try:
                self.git(
                    "update-ref", "-m", f"commit: {subject}", "HEAD", sha, parent,
                    retry_moved_head=False,
                )  # fmt: skip
                return sha
            except VaultError:
                if self._head_or_none() == parent or attempt == HEAD_RACE_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")

    @contextlib.contextmanager
    def _index_locked(self, stale_after: float = STALE_LOCK_SECONDS) -> Iterator[Path]:
        """git's index lock, taken and released the way git itself does.

        `.git/index.lock` is created exclusively (waiting out a person's git) and filled
        with a copy of the index; commands given it as GIT_INDEX_FILE update that copy,
        which then replaces the index (git's lockfile protocol). On an error the lock is
        removed and the index stays as it was. A lock still there after stale_after with
        no git process in the vault was left by a killed process: it is taken over, not
        deleted, so no other git reads the index before the entries a killed writer of
        ours committed but never put in it (its note) are reset to HEAD.
        """
        git_dir = Path(self.repo.git_dir)
        lock, index = git_dir / "index.lock", git_dir / "index"
        deadline = time.monotonic() + self.lock_timeout
        stale_check = time.monotonic() + stale_after
        delay = 0.01
        while True:
            try:
                fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                break
            except FileExistsError:
                if time.monotonic() >= stale_check and not _git_running_in(self.root):
                    with contextlib.suppress(FileNotFoundError):
                        fd = os.open(lock, os.O_WRONLY | os.O_TRUNC)
                        log.warning("took over a stale .git/index.lock left by a killed process")
                        break
                if time.monotonic() >= deadline:
                    raise _held_too_long(str(lock)) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.5)
        notes = sorted(self.pending_dir.glob("*.json")) if self.pending_dir.is_dir() else []
        try:
            with os.fdopen(fd, "wb") as copy:
                if index.exists():
                    copy.write(index.read_bytes())
            behind: set[str] = set()
            for note in notes:
                with contextlib.suppress(OSError, ValueError):
                    behind.update(json.loads(note.read_text(encoding="utf-8")))
            if behind:
                env = {"GIT_INDEX_FILE": str(lock)}
                self.git("reset", "--quiet", "--", *sorted(behind), env=env)
            yield lock
        except BaseException:
            lock.unlink(missing_ok=True)
            raise
        os.replace(lock, index)
        for note in notes:
            note.unlink(missing_ok=True)

    def _note_pending(self, paths: list[str]) -> Path:
        self.pending_dir.mkdir(parents=True, exist_ok=True)
        note = self.pending_dir / f"{time.time_ns()}-{os.getpid()}.json"
        note.write_text(json.dumps(paths))
        return note

    def index_behind(self) -> bool:
        """Whether a commit's process died before updating git's index (bring_index_up)."""
        notes = self.pending_dir.is_dir() and any(self.pending_dir.iterdir())
        return notes or (Path(self.repo.git_dir) / "index.lock").exists()

    def bring_index_up(self) -> None:
        """Reset git's index entries a killed writer committed but never put in the index
        to HEAD, taking over a stale index.lock such a death left (see _index_locked)."""
        with self._index_locked(stale_after=0):
            pass

    def _read_object(self, binsha: bytes) -> bytes:
        return self.repo.odb.stream(binsha).read()

    def _write_trees(self, trees: list[Entries]) -> None:
        if not trees:
            return
        written = self.git("mktree", "-z", "--batch", stdin=mktree_input(trees))
        if written.split("\n") != [tree_sha(entries).hex() for entries in trees]:
            raise VaultError(
                "git stored the new folder listings under unexpected ids",
                hint="run `vault-tool doctor`; nothing was committed",
            )

    def plumbing_allowed(self) -> bool:
        """Whether a write may skip `git commit`: only when git would run no commit hook."""
        hooks = Path(os.path.expanduser(self._setting("core.hookspath", ".git/hooks")))
        folder = hooks if hooks.is_absolute() else self.root / hooks
        return not any(os.access(folder / name, os.X_OK) for name in COMMIT_HOOKS)

    def _setting(self, key: str, default: str = "") -> str:
        """A git setting that decides how writes commit (read once per open vault)."""
        if self._settings is None:
            try:
                out = self.git(
                    "config", "-z", "--get-regexp",
                    r"^(commit\.gpgsign|core\.hookspath)$",
                )  # fmt: skip
            except VaultError:
                out = ""  # none of them is set
            settings = {}
            for record in filter(None, out.split("\0")):
                name, _, value = record.partition("\n")
                settings[name.lower()] = value
            if settings.get("commit.gpgsign", "false").lower() in ("", "yes", "on", "1", "true"):
                settings["commit.gpgsign"] = "true"
            self._settings = settings
        return self._settings.get(key, default) or default

    @contextlib.contextmanager
    def _dated(self, author_date: str | None) -> Iterator[None]:
        """git's author and committer date set to author_date for the commands inside."""
        if not author_date:
            yield
            return
        self.repo.git.update_environment(
            GIT_AUTHOR_DATE=author_date, GIT_COMMITTER_DATE=author_date
        )
        try:
            yield
        finally:
            self.repo.git.update_environment(GIT_AUTHOR_DATE=None, GIT_COMMITTER_DATE=None)

    def _commit(
        self,
        message: str,
        paths: list[str],
        author_date: str | None,
        options: tuple[str, ...] | list[str] = (),
    ) -> None:
        subject, _, rest = message.partition("\n\n")
        args = [*options, "commit", "--quiet", "-m", subject]
        if rest.strip():
            args += ["-m", rest.strip()]
        with self._dated(author_date):
            self.git(*args, "--", *paths)

    def _head_or_none(self) -> str | None:
        try:
            with self._repo_mutex:
                return self.repo.head.commit.hexsha
        except ValueError:
            return None

    def _use_identity_fallback_if_needed(self) -> None:
        if not self._has_identity():
            self.repo.git.update_environment(
                GIT_AUTHOR_NAME=FALLBACK_NAME,
                GIT_AUTHOR_EMAIL=FALLBACK_EMAIL,
                GIT_COMMITTER_NAME=FALLBACK_NAME,
                GIT_COMMITTER_EMAIL=FALLBACK_EMAIL,
            )

    def _has_identity(self) -> bool:
        """Whether git knows who commits (asked through git itself, which reads every
        config source: repo, $GIT_CONFIG_GLOBAL or ~/.gitconfig, system)."""
        try:
            return bool(self.git("config", "user.name")) and bool(self.git("config", "user.email"))
        except VaultError:
            return False

    def _remove_stale_lock(self, lock: Path) -> None:
        """Remove a git lock file of this repository if no git process could own it.

        The index lock is taken over and released instead (bring_index_up), so git's
        index is whole before any other git can read it.
        """
        git_dir = (self.root / ".git").resolve()
        lock = lock if lock.is_absolute() else self.root / lock
        if not lock.name.endswith(".lock") or not lock.resolve().is_relative_to(git_dir):
            return
        if lock.resolve() == git_dir / "index.lock":
            if lock.exists() and not _git_running_in(self.root):
                self.bring_index_up()
            return
        if lock.exists() and not _git_running_in(self.root):
            lock.unlink(missing_ok=True)
            shown = lock.resolve().relative_to(git_dir.parent).as_posix()
            log.warning("removed a stale %s left by a git that was killed", shown)


def _index_info(changes: dict[str, str | None]) -> bytes:
    """`git update-index -z --index-info` lines: each path at its blob, or removed (mode 0)."""
    return b"".join(
        (f"100644 {blob}" if blob else "0 " + "0" * 40).encode() + b"\t" + path.encode() + b"\0"
        for path, blob in changes.items()
    )


def _held_too_long(lock: str) -> VaultBusy:
    return VaultBusy(
        f"git's lock {lock} was held for too long",
        hint=f"wait for your own git command to finish; if none is running, remove {lock}",
    )


def open_repo(root: Path) -> Any:
    clear_git_environment(root)
    import git

    try:
        repo = git.Repo(root)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError) as problem:
        raise VaultUnavailable(
            f"{root} is not a git repository ({problem})",
            hint="run `vault-tool init` there, or fix .git",
        ) from None
    require_sha1(repo)
    return repo


def require_sha1(repo: Any) -> None:
    """Refuse a SHA-256 repository: GitPython, which reads the vault's history, cannot."""
    with repo.config_reader("repository") as config:
        object_format = config.get_value("extensions", "objectformat", "sha1")
    if str(object_format).lower() != "sha1":
        repo.close()
        raise VaultUnavailable(
            f"{repo.working_dir} is a {object_format} git repository; vaults use SHA-1 object ids",
            hint="make the vault in a new folder (`vault-tool init PATH`), or in a repository "
            "made with `git init --object-format=sha1`",
        )


def clear_git_environment(root: Path) -> None:
    # A vault nested in another repository must never commit into it, and a GIT_DIR set
    # by a hook or a shell must not redirect our writes.
    for name in _GIT_ENV_TO_CLEAR:
        os.environ.pop(name, None)
    os.environ["GIT_CEILING_DIRECTORIES"] = str(root.parent)


def _git_running_in(root: Path) -> bool:
    """Whether a git process that may hold a lock works in root.

    A git started elsewhere with --git-dir or --work-tree names the vault on its command
    line. GitPython's `git cat-file --batch` helpers (alive as long as a server runs)
    only read objects and never lock anything, so they do not count.
    """
    proc = Path("/proc")
    if not proc.is_dir():
        return True  # cannot tell: assume the owner lives
    for pid_dir in proc.iterdir():
        if not pid_dir.name.isdigit():
            continue
        try:
            if (pid_dir / "comm").read_text().strip().startswith("git"):
                argv = (pid_dir / "cmdline").read_bytes().split(b"\0")
                if b"cat-file" in argv:
                    continue
                if any(os.fsencode(root) in arg for arg in argv):
                    return True
                cwd = Path(os.readlink(pid_dir / "cwd"))
                if cwd == root or root in cwd.parents:
                    return True
        except OSError:
            continue
    return False


def _records(stream: Any) -> Iterator[str]:
    """NUL-separated records of a git -z output stream, decoded whole (never split)."""
    pending = b""
    for chunk in iter(lambda: stream.read(65536), b""):
        *complete, pending = (pending + chunk).split(b"\0")
        for record in complete:
            yield record.decode("utf-8", "replace")
    if pending:
        yield pending.decode("utf-8", "replace")
