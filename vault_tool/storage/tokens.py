"""The HTTP server's bearer tokens (`vault-tool token create|list|revoke`).

Kept in .git/vault-tool/tokens.json: inside git's own folder, so machine-local, never
committed, and never removed by a `git clean -xfd` (which would leave a restarted loopback
server open to every caller, as one with no tokens is). Readable by its owner only, and
holding each token's SHA-256, never the secret: the secret is shown once, when it is made.
Each token has a name, a scope (access.py), optionally a list of projects, and a rate limit.
`serve --http` reads the file when it starts.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from vault_tool.core.access import SCOPES, Access
from vault_tool.core.printable import command
from vault_tool.core.projects import PATTERN, check_project
from vault_tool.core.times import utc_now
from vault_tool.errors import InvalidInput, NotFound, VaultUnavailable
from vault_tool.storage import durable

FILE = Path(".git") / "vault-tool" / "tokens.json"  # (as messages name it)
DEFAULT_RATE = 60  # requests a minute
PREFIX = "vt_"  # a secret says what it is (and secret scanners can tell)
_SHA256 = re.compile(r"[0-9a-f]{64}\Z")
_NAME_HINT = "use lowercase letters, digits, '.', '_' or '-', such as ci-reader"


@dataclass(frozen=True)
class Token:
    """One token as stored: never its secret."""

    name: str
    sha256: str
    scope: str
    projects: tuple[str, ...]
    rate_per_minute: int
    created: str

    def access(self) -> Access:
        """What the token may do, labelled by its name for the audit log."""
        return Access(f"token:{self.name}", self.scope, self.projects)

    def shown(self) -> dict[str, Any]:
        """The token as `token list` shows it."""
        listed = asdict(self)
        del listed["sha256"]
        return {**listed, "projects": list(self.projects)}


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def stored_at(root: Path) -> Path:
    """The tokens file of the vault at root, in its git folder (which a worktree's or a
    submodule's `.git` file names)."""
    git_dir = root / ".git"
    if git_dir.is_file():
        named = Path(git_dir.read_text(encoding="utf-8").strip().removeprefix("gitdir:").strip())
        git_dir = named if named.is_absolute() else root / named
    return git_dir / "vault-tool" / "tokens.json"


def load(root: Path) -> list[Token]:
    """The vault's tokens (none if the file is missing); VaultUnavailable, naming what is
    wrong, for a file a person or another program damaged."""
    try:
        raw = json.loads(stored_at(root).read_text(encoding="utf-8"))
        return [_checked(t) for t in raw["tokens"]]
    except FileNotFoundError:
        return []
    except (ValueError, KeyError, TypeError, AttributeError) as problem:
        raise VaultUnavailable(
            f"{FILE} cannot be read ({problem})",
            hint=f"remove {FILE} and make the tokens again with `vault-tool token create`",
        ) from None


def _checked(stored: dict[str, Any]) -> Token:
    name, sha, scope = stored["name"], stored["sha256"], stored["scope"]
    projects = stored.get("projects") or []
    rate = stored.get("rate_per_minute", DEFAULT_RATE)
    checks = {
        "name": _matches(PATTERN, name),
        "sha256": _matches(_SHA256, sha),
        "scope": scope in SCOPES,
        "projects": isinstance(projects, list) and all(_matches(PATTERN, p) for p in projects),
        "rate_per_minute": type(rate) is int and rate >= 1,
    }
    wrong = [field for field, good in checks.items() if not good]
    if wrong:
        raise ValueError(f"token {name!r}: its {', '.join(wrong)} is not valid")
    return Token(name, sha, scope, tuple(projects), rate, str(stored.get("created", "")))


def _matches(pattern: re.Pattern[str], value: Any) -> bool:
    return isinstance(value, str) and pattern.match(value) is not None


def create(
    root: Path,
    name: str,
    scope: str,
    projects: tuple[str, ...] = (),
    rate_per_minute: int = DEFAULT_RATE,
) -> tuple[Token, str]:
    """Make a token: (what is stored, the secret, shown only now)."""
    if not PATTERN.match(name):
        raise InvalidInput(f"NAME: {name!r} is not valid", hint=_NAME_HINT, field="name")
    if scope not in SCOPES:
        raise InvalidInput(f"--scope: {scope!r}", hint=f"one of {', '.join(SCOPES)}")
    for project in projects:
        check_project(project, "--project")
    if rate_per_minute < 1:
        raise InvalidInput("--rate-limit: at least 1 a minute", hint="for example 60")
    tokens = load(root)
    if any(t.name == name for t in tokens):
        raise InvalidInput(
            f"NAME: a token named {name} exists",
            hint=f"pick another name, or `{command('token revoke', name)}` first",
            field="name",
        )
    secret = PREFIX + secrets.token_urlsafe(32)
    token = Token(name, digest(secret), scope, tuple(projects), rate_per_minute, utc_now())
    _save(root, [*tokens, token])
    return token, secret


def revoke(root: Path, name: str) -> Token:
    """Remove a token; a server that is running refuses it once restarted."""
    tokens = load(root)
    kept = [t for t in tokens if t.name != name]
    if len(kept) == len(tokens):
        names = ", ".join(t.name for t in tokens) or "none"
        raise NotFound(f"no token is named {name!r}", hint=f"the tokens are: {names}")
    _save(root, kept)
    return next(t for t in tokens if t.name == name)


def _save(root: Path, tokens: list[Token]) -> None:
    path = stored_at(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"tokens": [{**asdict(t), "projects": list(t.projects)} for t in tokens]}
    tmp = durable.temp_path(path)
    # Made readable by its owner only from the first byte, then put in place at once.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        durable.write_all(fd, (json.dumps(data, indent=2) + "\n").encode(), tmp)
        os.fsync(fd)
    finally:
        os.close(fd)
    durable.replace(tmp, path)
