"""The git settings that decide how a write commits, read once and again when they change.

A commit is made with git's plumbing, its objects written in-process (objects.py), only
where that gives exactly what git would store: no commit hooks (they run only under
`git commit`), no signing or commit encoding (commit-tree does those), no shared
repository (git sets object permissions for the group), no date from the environment, and
for blobs no attribute that converts a file on its way into git (a filter, end-of-line
conversion, ident, a working-tree encoding); the branch is moved in-process where
refs.py says that is what `git update-ref` would do, and git's index is edited in-process
unless a setting has git write it another way (a split index, an fsmonitor, no trailing
hash) or a hook runs when git writes it (index_edit.py decides the rest from the file).
Otherwise the command that does it runs, as before. The settings are read with one `git
config`, and again only when a config file changed (a stat of each per commit); the
identity with `git var`, likewise.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from vault_tool.errors import VaultError
from vault_tool.storage import refs

KEYS = (
    r"^(commit\.gpgsign|core\.hookspath|i18n\.commitencoding|core\.sharedrepository"
    r"|core\.autocrlf|core\.attributesfile|extensions\.refstorage|core\.logallrefupdates"
    r"|core\.splitindex|core\.fsmonitor|index\.skiphash|feature\.manyfiles)$"
)
# Attributes that change nothing of what `git add` stores; any other is a conversion (or
# unknown) and leaves the blob to git. `binary` is -diff -merge -text.
_SAFE_ATTRIBUTES = {"-text", "binary", "-diff", "diff", "-merge", "merge", "-crlf", "-delta"}
_SAFE_PREFIXES = ("diff=", "merge=", "linguist-", "-linguist-", "export-", "whitespace")
_DATE_VARIABLES = ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE")
_TRUE = ("", "yes", "on", "1", "true")
_FALSE = ("false", "no", "off", "0")


class GitSettings:
    """What decides how this vault's writes commit (one per Committer)."""

    def __init__(self, repo: Any) -> None:
        self.repo = repo  # storage.git.Git
        self.root: Path = repo.root
        self._stamp: tuple[Any, ...] | None = None
        self._values: dict[str, str] = {}
        self._ident: tuple[tuple[Any, ...], bytes, bytes] | None = None
        self._attributes: tuple[Any, bool] | None = None

    def get(self, key: str, default: str = "") -> str:
        """A setting (lowercase key), read again only after a config file changed."""
        stamp = _config_stamp(self.repo.git_dir)
        if stamp != self._stamp:
            self._values = self._read()
            self._stamp = stamp
        return self._values.get(key, default) or default

    def hooks(self) -> Path:
        """The folder of git's hooks (core.hooksPath, else .git/hooks)."""
        hooks = Path(os.path.expanduser(self.get("core.hookspath", ".git/hooks")))
        return hooks if hooks.is_absolute() else self.root / hooks

    def signs(self) -> bool:
        return self.get("commit.gpgsign", "false").lower() in _TRUE

    def objects_in_process(self) -> bool:
        """Whether objects may be written here: git gives a shared repository's objects the
        group's permissions."""
        return self.get("core.sharedrepository", "false").lower() in ("false", "umask", "0", "no")

    def refs_in_process(self) -> bool:
        """Whether the branch may be moved here rather than by `git update-ref` (refs.py)."""
        if not self.objects_in_process() or self._dated():  # (the reflog has the date)
            return False
        return refs.in_process(self.repo.git_dir, self.get, self.hooks())

    def index_in_process(self) -> bool:
        """Whether git's index may be edited here rather than by `git update-index`: not
        with a post-index-change hook, which git runs each time it writes the index."""
        if not self.objects_in_process():  # (git gives a shared repository's index the group's)
            return False
        if os.access(self.hooks() / "post-index-change", os.X_OK):
            return False
        settings = ("core.splitindex", "core.fsmonitor", "index.skiphash", "feature.manyfiles")
        return all(self.get(key, "false").lower() in _FALSE for key in settings)

    def commit_in_process(self, author_date: str | None) -> bool:
        """Whether the commit object may be written here rather than by `git commit-tree`."""
        if author_date or self.signs() or not self.objects_in_process():
            return False
        if self.get("i18n.commitencoding", "utf-8").lower().replace("-", "") != "utf8":
            return False
        return not self._dated()

    def _dated(self) -> bool:
        """Whether the environment gives git a date (GIT_AUTHOR_DATE, GIT_COMMITTER_DATE)."""
        environment = {**os.environ, **self.repo.repo.git.environment()}
        return any(environment.get(name) for name in _DATE_VARIABLES)

    def identity(self) -> tuple[bytes, bytes]:
        """(author, committer) as git names them: `Name <email>`, without the date."""
        environment = self.repo.repo.git.environment()
        key = (_config_stamp(self.repo.git_dir), tuple(sorted(environment.items())))
        if self._ident is None or self._ident[0] != key:
            author = self.repo.run("var", "GIT_AUTHOR_IDENT").rsplit(" ", 2)[0]
            committer = self.repo.run("var", "GIT_COMMITTER_IDENT").rsplit(" ", 2)[0]
            self._ident = (key, author.encode(), committer.encode())
        return self._ident[1], self._ident[2]

    def blobs_in_process(self, paths: list[str]) -> bool:
        """Whether these files go into git as their bytes are: no attribute converts them."""
        if not self.objects_in_process():
            return False
        folders = {parent for path in paths for parent in Path(path).parents}
        if any((self.root / f / ".gitattributes").exists() for f in folders if f != Path(".")):
            return False  # (a folder's own attributes: left to git)
        stamp = (_config_stamp(self.repo.git_dir), _file_stamp(self.root / ".gitattributes"))
        if self._attributes is None or self._attributes[0] != stamp:
            self._attributes = (stamp, self._attributes_are_plain())
        return self._attributes[1]

    def _attributes_are_plain(self) -> bool:
        home = Path(os.path.expanduser("~"))
        xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
        named = self.get("core.attributesfile")
        elsewhere = [
            self.repo.git_dir / "info" / "attributes",
            Path(os.path.expanduser(named)) if named else xdg / "git" / "attributes",
            Path("/etc/gitattributes"),
        ]
        if any(p.exists() for p in elsewhere):
            return False
        try:
            lines = (self.root / ".gitattributes").read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            lines = []
        except (OSError, UnicodeDecodeError):
            return False
        unset_for_all = False
        for line in lines:
            fields = line.split()
            if not fields or fields[0].startswith("#"):
                continue
            if fields[0].startswith(("[attr]", '"')):
                return False  # a macro, a quoted pattern: left to git
            attributes = fields[1:]
            if not all(a in _SAFE_ATTRIBUTES or a.startswith(_SAFE_PREFIXES) for a in attributes):
                return False
            unset_for_all = unset_for_all or (
                fields[0] == "*" and bool({"-text", "binary"} & set(attributes))
            )
        # Without `* -text`, core.autocrlf converts the line ends of what git takes for text.
        autocrlf = self.get("core.autocrlf", "false").lower()
        return unset_for_all or autocrlf in ("false", "no", "off", "0")

    def _read(self) -> dict[str, str]:
        try:
            out = self.repo.run("config", "-z", "--get-regexp", KEYS)
        except VaultError:
            out = ""  # none of them is set
        values = {}
        for record in filter(None, out.split("\0")):
            name, _, value = record.partition("\n")
            values[name.lower()] = value
        return values


def _config_stamp(git_dir: Path) -> tuple[Any, ...]:
    """What changes when any config file git reads for this repository changes."""
    home = Path(os.path.expanduser("~"))
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    files = [
        git_dir / "config",
        Path(os.environ["GIT_CONFIG_GLOBAL"])
        if os.environ.get("GIT_CONFIG_GLOBAL")
        else home / ".gitconfig",
        xdg / "git" / "config",
        Path(os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"),
    ]
    return tuple(_file_stamp(f) for f in files)


def _file_stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def git_time(now: float) -> bytes:
    """A time as git writes it in a commit: seconds, and the local offset from UTC (+HHMM)."""
    seconds = int(now)
    offset = time.localtime(seconds).tm_gmtoff // 60
    sign = "+" if offset >= 0 else "-"
    return f"{seconds} {sign}{abs(offset) // 60:02d}{abs(offset) % 60:02d}".encode()
