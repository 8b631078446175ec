"""What git's log says about files coming and going: each commit's trailers and file changes.

One `git log --raw` answers a question for every commit it walks, so a question about the
whole history (which memories were deleted) is one process, never one per commit. Paths
are read NUL-separated (-z), so no file name is ever mangled by git's quoting.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vault_tool.storage.git import Commit, Git

# One commit's header: sha, parents, author date, author, subject, Client and Memory-Id
# trailers.
_FIELDS = (
    "%x01%H%x00%P%x00%aI%x00%an%x00%s%x00"
    "%(trailers:key=Client,valueonly,separator=%x2C)%x00"
    "%(trailers:key=Memory-Id,valueonly,separator=%x2C)"
)
_HEADER_FIELDS = 7
_NO_BLOB = "0" * 40


@dataclass(frozen=True)
class FileChange:
    """One file a commit changed: status A (added), D (deleted), M, T, or R (renamed)."""

    status: str
    path: str
    old_blob: str | None
    new_blob: str | None
    source: str | None = None  # a rename's old path


@dataclass(frozen=True)
class Logged:
    """One commit of a log walk, with its trailers and the file changes it made."""

    sha: str
    parents: tuple[str, ...]
    date: str
    author: str
    subject: str
    client: str | None
    memory_ids: tuple[str, ...]
    changes: tuple[FileChange, ...]

    def change_of(self, path: str) -> FileChange | None:
        """What this commit did to path (None if it did not touch it)."""
        return next((c for c in self.changes if c.path == path), None)

    def commit(self, path: str) -> Commit:
        """This commit as one version of the file at path."""
        return Commit(self.sha, self.date, self.author, self.subject, self.client, path)


def read_log(git: Git, *args: str, renames: bool = False) -> list[Logged]:
    """`git log --raw` with these arguments, newest first, each commit with its changes
    (with -c, a merge's too: the files it made of its own, against its first parent).

    Paths after `--` are literal (a `[` or `*` in a name is no pattern).
    """
    detect = "-M90%" if renames else "--no-renames"
    out = git.run(
        "log", "-z", "--raw", "--no-abbrev", detect, f"--format={_FIELDS}", *args,
        env={"GIT_LITERAL_PATHSPECS": "1"},
    )  # fmt: skip
    return parse_log(out)


def naming(memory_id: str) -> tuple[str, str]:
    """The arguments of read_log that keep the commits with this `Memory-Id:` trailer."""
    literal = re.sub(r"([.^$*+?{}()\[\]|\\])", r"\\\1", memory_id)
    return "--extended-regexp", f"--grep=^Memory-Id: {literal}$"


def changes_of(git: Git, sha: str) -> Logged:
    """One commit with every file it changed, renames (90% alike) paired."""
    found = read_log(git, "-1", "--full-diff", sha, renames=True)
    if not found:  # a commit with no file changes (git prints no raw lines, still a header)
        return Logged(sha, (), "", "", "", None, (), ())
    return found[0]


def parse_log(out: str) -> list[Logged]:
    """Parse the output of read_log: headers start with \\x01, raw lines with ':'."""
    tokens = out.split("\0")
    headers: list[list[str]] = []
    changes: list[list[FileChange]] = []
    i = 0
    while i < len(tokens):
        token = tokens[i].lstrip("\n")
        if token.startswith("\x01"):
            headers.append([token[1:], *tokens[i + 1 : i + _HEADER_FIELDS]])
            changes.append([])
            i += _HEADER_FIELDS
        elif token.startswith("::") and headers:
            changes[-1].append(_combined(token, tokens[i + 1]))
            i += 2
        elif token.startswith(":") and headers:
            meta = token[1:].split()
            status = meta[4][:1]
            old_blob = None if meta[2] == _NO_BLOB else meta[2]
            new_blob = None if meta[3] == _NO_BLOB else meta[3]
            if status in ("R", "C"):
                changes[-1].append(
                    FileChange(status, tokens[i + 2], old_blob, new_blob, tokens[i + 1])
                )
                i += 3
            else:
                changes[-1].append(FileChange(status, tokens[i + 1], old_blob, new_blob))
                i += 2
        else:
            i += 1  # the empty record that ends a header
    return [
        Logged(
            sha, tuple(parents.split()), date, author, subject, client.strip() or None,
            tuple(m.strip() for m in memory_ids.split(",") if m.strip()), tuple(files),
        )
        for (sha, parents, date, author, subject, client, memory_ids), files in zip(
            headers, changes, strict=True
        )
    ]  # fmt: skip


def _combined(token: str, path: str) -> FileChange:
    """A merge's file (read_log with -c: a file that differs from every parent), as a change
    against its first parent: `::<modes> <one blob a parent> <result blob> <statuses>`."""
    parents = len(token) - len(token.lstrip(":"))
    meta = token[parents:].split()
    old_blob, new_blob = meta[parents + 1], meta[2 * parents + 1]
    old = None if old_blob == _NO_BLOB else old_blob
    new = None if new_blob == _NO_BLOB else new_blob
    return FileChange("D" if new is None else "A" if old is None else "M", path, old, new)


def blob(git: Git, sha: str) -> bytes:
    """A blob's bytes by its hex id (read through the open repository: no process)."""
    return git.read_object(bytes.fromhex(sha))
