"""A vault's remote, as plain git works with it: fetch, merge what came, push; never force.

The merge keeps every commit's id: a version id an agent was given stays good after a
sync (a rebase would rewrite the unpublished ones). Memory files merge through the driver
(merge_setup.py, core/merge.py). What git cannot decide without a person is settled so
that nothing is lost and syncing never stops:

- both sides edited the same lines of a body: the driver left git's markers in the body
  only; the merge is committed with them and the memory is flagged (doctor, and a
  `problem` on its hits) until a person resolves it;
- a memory edited on one side and deleted on the other: the edited version is kept and
  the deletion named in the merge commit's message;
- two memories (two ids) added at one path on the two sides, most often two agents
  writing the same title in the same month: both are kept, the one whose id sorts first at
  the path and the other beside it, named as a new memory is named when its path is taken
  (`<slug>-<the id's last 6>.md`), whichever side merges; the message names both.

Anything else (markers in a front matter, a conflict in a file that is not a memory) is
left to a person: the merge is aborted, the vault is as it was, and the sync says which
files to merge by hand.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vault_tool.core import ids
from vault_tool.core.memory import parse
from vault_tool.core.redact import redact_tree
from vault_tool.errors import InvalidInput, UnparseableFile, VaultBusy
from vault_tool.storage import sync_merge
from vault_tool.storage.durable import write_durably
from vault_tool.storage.repo_state import conflict_line

# A name git accepts for a remote and a shell shows as it is.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")
# How long one network command may take before the remote counts as unreachable.
NETWORK_TIMEOUT_SECONDS = 120
_FRONT_MATTER_END = re.compile(rb"^---[ \t]*\r?$", re.MULTILINE)


class Unreachable(Exception):
    """The remote cannot be reached now (offline, down, refused): not an error of the vault;
    writes go on and the next sync tries again."""


class PushRefused(Exception):
    """The remote refused the push for a reason a retry does not change (a protected
    branch, a hook)."""


@dataclass
class Merged:
    """What a merge of the remote's branch did."""

    how: str  # "up to date", "fast-forward", "merge", or "ahead" (nothing came)
    commits_in: int = 0
    paths: list[str] = field(default_factory=list)  # files it changed in the folder
    kept_edited: list[str] = field(default_factory=list)  # edited here, deleted there (or back)
    flagged: list[str] = field(default_factory=list)  # bodies left holding conflict markers
    kept_both: list[tuple[str, str]] = field(default_factory=list)  # (path, the other's path)


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise InvalidInput(
            f"remote name {name!r} is not a plain name",
            hint="use letters, digits, '.', '_' or '-' (like origin, team, backup)",
            field="name",
        )
    return name


class Remote:
    """One named remote of the vault's repository (git runs in the vault folder)."""

    def __init__(self, root: Path, name: str, environment: dict[str, str] | None = None) -> None:
        self.root = root
        self.name = check_name(name)
        # What the vault's own git commands run with (who commits when git knows nobody).
        self._environment = environment or {}

    # --- the remote's settings ----------------------------------------------------------

    @staticmethod
    def listed(root: Path) -> dict[str, str]:
        """name -> fetch URL of every remote, credentials in it redacted."""
        done = _git(root, "remote", "-v")
        found: dict[str, str] = {}
        for line in done.stdout.splitlines():
            name, _, rest = line.partition("\t")
            if rest.endswith("(fetch)"):  # (a token in a URL is not shown)
                found[name] = redact_tree(rest.removesuffix("(fetch)").strip())
        return found

    def add(self, url: str) -> None:
        if not url.strip() or url.startswith("-"):
            raise InvalidInput(
                f"remote URL {url!r} is empty or looks like an option",
                hint="give the URL or path of a git repository",
                field="url",
            )
        if self.name in self.listed(self.root):
            raise InvalidInput(
                f"the vault already has a remote named {self.name}",
                hint=f"pick another name, or change it with `git remote set-url {self.name} URL`",
                field="name",
            )
        self._git("remote", "add", "--", self.name, url, check=True)

    # --- fetch, merge, push ---------------------------------------------------------------

    def fetch(self, branch: str) -> str | None:
        """Fetch the branch; its commit, or None if the remote does not have it yet."""
        done = self._git(
            "fetch",
            "--quiet",
            "--no-tags",
            "--",
            self.name,
            f"+refs/heads/{branch}:refs/remotes/{self.name}/{branch}",
            network=True,
        )
        if done.returncode != 0:
            if "couldn't find remote ref" in done.stderr:
                return None  # an empty remote, or a branch nobody pushed yet
            raise Unreachable(_unreachable_reason(done.stderr))
        sha = self._git(
            "rev-parse",
            "--verify",
            "--quiet",
            f"refs/remotes/{self.name}/{branch}^{{commit}}",
        )
        return sha.stdout.strip() or None

    def merge(self, theirs: str, message: Callable[[Merged], str]) -> Merged:
        """Merge their commit into HEAD (the caller holds the vault's write lock)."""
        head = self._git("rev-parse", "HEAD", check=True).stdout.strip()
        if _is_ancestor(self.root, theirs, head):
            return Merged("up to date" if theirs == head else "ahead")
        commits_in = int(self._git("rev-list", "--count", f"{head}..{theirs}", check=True).stdout)
        # Recorded while git works: a sync killed half-way leaves a merge that whoever
        # notices next knows for the tool's own, and undoes (sync_merge.py).
        record = sync_merge.recorded(self._git_dir(), head, theirs, self._output)
        if _is_ancestor(self.root, head, theirs):
            with record:
                self._git("merge", "--ff-only", "--quiet", theirs, check=True)
            return Merged("fast-forward", commits_in, _changed(self.root, head, theirs))
        merged = Merged("merge", commits_in)
        with record:
            done = self._git("merge", "--no-ff", "--no-edit", "--no-commit", theirs)
            if done.returncode != 0 and not _merging(self.root):
                raise VaultBusy(
                    f"git merge of {self.name} did not start: {_last_line(done.stderr)}",
                    hint="run `git status` in the vault and retry the sync",
                )
            try:
                self._settle(merged)
            except BaseException:
                self._git("merge", "--abort")
                raise
            self._git(
                "commit", "--quiet", "--no-verify", "-F", "-", stdin=message(merged), check=True
            )
        merged.paths = _changed(self.root, head, "HEAD")
        return merged

    def _git_dir(self) -> Path:
        return Path(self._git("rev-parse", "--absolute-git-dir", check=True).stdout.strip())

    def push(self, sha: str, branch: str) -> bool:
        """Push sha as the remote's branch: True if it landed, False if the remote moved on
        (fetch and merge again). Never forced."""
        done = self._git(
            "push",
            "--porcelain",
            "--quiet",
            "--",
            self.name,
            f"{sha}:refs/heads/{branch}",
            network=True,
        )
        if done.returncode == 0:
            return True
        said = done.stdout + done.stderr
        if "[rejected]" in said or "fetch first" in said or "non-fast-forward" in said:
            return False
        if "[remote rejected]" in said:
            raise PushRefused(_last_line(said))
        raise Unreachable(_unreachable_reason(done.stderr or done.stdout))

    def _git(self, *args: str, **options: Any) -> subprocess.CompletedProcess[str]:
        return _git(self.root, *args, environment=self._environment, **options)

    def _output(self, *args: str) -> str:
        return self._git(*args, check=True).stdout

    # --- what a merge left for a person ------------------------------------------------

    def _settle(self, merged: Merged) -> None:
        """Settle each unmerged path as the module says, or raise (the caller aborts)."""
        blobs: dict[str, dict[int, str]] = {}
        listed = self._git("ls-files", "-u", "-z", check=True).stdout
        for entry in filter(None, listed.split("\0")):
            info, _, path = entry.partition("\t")
            _mode, blob, stage = info.split()
            blobs.setdefault(path, {})[int(stage)] = blob
        by_hand = []
        for path, staged in sorted(blobs.items()):
            held = set(staged)
            data = _read(self.root / path)
            if not ids.is_memory_path(path):
                by_hand.append(path)
            elif held == {2, 3} and (beside := self._keep_both(path, staged, set(blobs))):
                merged.kept_both.append((path, beside))
            elif held in ({1, 2}, {1, 3}) and data is not None:
                merged.kept_edited.append(path)  # edited on one side, deleted on the other
            elif 2 in held and 3 in held and data is not None and _markers_in_body(data):
                merged.flagged.append(path)
            else:
                by_hand.append(path)
        if by_hand:
            shown = ", ".join(by_hand[:5]) + (" ..." if len(by_hand) > 5 else "")
            raise MergeByHand(by_hand, f"the remote's changes to {shown} need a person")
        settled = [
            *merged.kept_edited,
            *merged.flagged,
            *(p for two in merged.kept_both for p in two),
        ]
        if settled:
            self._git("add", "--", *settled, check=True)

    def _keep_both(self, path: str, staged: dict[int, str], unmerged: set[str]) -> str | None:
        """Two memories added at one path: the one whose id sorts first written there, the
        other beside it; where the other went, or None when the two are not two of the
        tool's memories (a person's two notes of one name are theirs to merge)."""
        sides = []
        for stage in (2, 3):
            data = _blob(self.root, staged[stage])
            memory_id = _memory_id(data, path)
            if data is None or memory_id is None:
                return None
            sides.append((memory_id, data))
        (first_id, first), (second_id, second) = sorted(sides)
        if first_id == second_id:
            return None  # one memory added on both sides: the driver's to merge
        beside = f"{path.removesuffix('.md')}-{second_id[-6:].lower()}.md"
        if beside in unmerged or _read(self.root / beside) is not None:
            return None
        for where, data in ((path, first), (beside, second)):
            write_durably(self.root / where, data)
        return beside


class MergeByHand(VaultBusy):
    """A merge git and the driver could not finish: a person merges these files."""

    def __init__(self, paths: list[str], message: str) -> None:
        super().__init__(
            message,
            hint="merge by hand: `git pull` in the vault, resolve the files it names, "
            "commit; the next sync goes on from there",
        )
        self.paths = paths


def _merging(root: Path) -> bool:
    return _git(root, "rev-parse", "--quiet", "--verify", "MERGE_HEAD").returncode == 0


def _markers_in_body(data: bytes) -> bool:
    """Whether git's conflict markers lie only after the front matter (none before it)."""
    line = conflict_line(data)
    if line is None:
        return False
    if not data.startswith(b"---"):
        return False  # no front matter to keep whole: the whole file is in conflict
    ends = list(_FRONT_MATTER_END.finditer(data, 3))
    return bool(ends) and data.count(b"\n", 0, ends[0].start()) + 1 < line


def _is_ancestor(root: Path, older: str, newer: str) -> bool:
    return _git(root, "merge-base", "--is-ancestor", older, newer).returncode == 0


def _changed(root: Path, before: str, after: str) -> list[str]:
    listed = _git(root, "diff", "--name-only", "--no-renames", "-z", before, after, check=True)
    return sorted(filter(None, listed.stdout.split("\0")))


def _blob(root: Path, sha: str) -> bytes | None:
    """A blob's bytes as git holds them (not through text mode: line ends stay)."""
    done = subprocess.run(
        ["git", "cat-file", "blob", sha], cwd=root, capture_output=True, check=False
    )
    return done.stdout if done.returncode == 0 else None


def _memory_id(data: bytes | None, path: str) -> str | None:
    """The tool's id a memory file holds (a ULID), else None."""
    try:
        memory = parse((data or b"").decode("utf-8"), path)
    except (UnicodeDecodeError, UnparseableFile):
        return None
    return memory.id if memory.id and ids.is_ulid(memory.id) else None


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def _last_line(text: str) -> str:
    """git's reason, its last line, with any credentials in a URL it names redacted (the
    reason goes to the terminal and to server.log)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return redact_tree(lines[-1]) if lines else "git gave no reason"


# What git adds under every failure to reach a remote, whatever the cause: it explains
# nothing, and its last line ("and the repository exists.") would stand for the reason.
_BOILERPLATE = (
    "please make sure you have the correct access rights",
    "and the repository exists.",
    "fatal: could not read from remote repository.",
)


def _unreachable_reason(text: str) -> str:
    """Why git could not reach a remote: the lines that explain it (`'/x.git' does not
    appear to be a git repository`, `Could not resolve hostname`), not git's closing
    advice, joined on one line with any credentials redacted."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    telling = [line for line in lines if line.lower() not in _BOILERPLATE]
    kept = list(dict.fromkeys(telling or lines))[:4]
    return redact_tree("; ".join(kept))[:500] if kept else "git gave no reason"


def _git(
    root: Path,
    *args: str,
    check: bool = False,
    network: bool = False,
    stdin: str | None = None,
    environment: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """git in the vault, its messages in English (they are read) and never asking for a
    password on a terminal (a background sync would wait forever)."""
    env = {**os.environ, **(environment or {}), "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"}
    env["GIT_ASKPASS"] = "true"
    if network:
        env.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=root,
            env=env,
            input=stdin,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=NETWORK_TIMEOUT_SECONDS if network else None,
        )
    except subprocess.TimeoutExpired:
        raise Unreachable(f"git {args[0]} took over {NETWORK_TIMEOUT_SECONDS} s") from None
    if check and done.returncode != 0:
        raise VaultBusy(
            f"git {args[0]} failed: {_last_line(done.stderr)}",
            hint="run `git status` in the vault, then retry",
        )
    return done
