"""Minting and validating memory ids, and the path-derived ids of hand-made files."""

from __future__ import annotations

import re
import threading
import unicodedata

from vault_tool.core import printable, redact
from vault_tool.errors import InvalidInput

ULID_RE = re.compile(r"^[0-7][0-9A-HJKMNP-TV-Z]{25}\Z")
# A path-derived id is a relative path without .md: no absolute paths, no dot segments
# (.., .git, hidden files), no empty segments, no control or shell-special characters.
PATH_ID_RE = re.compile(r"^(?!/)(?!.*(?:^|/)\.)(?!.*//)[^\x00-\x1f\\:*?\"<>|]+(?<!/)\Z")
VERSION_RE = re.compile(r"^[0-9a-f]{40}\Z")
MAX_ID_LENGTH = 300
SLUG_LENGTH = 60


def new_id() -> str:
    """A fresh ULID: unique, and sortable by creation time, each one after the last this
    process made (within one millisecond too): the items of a batch sort in their order."""
    from ulid import ULID

    global _last_id
    with _minting:
        _last_id = max(int(ULID()), _last_id + 1)
        return str(ULID.from_int(_last_id))


_minting = threading.Lock()
_last_id = 0


def is_ulid(value: str) -> bool:
    """True for a tool-minted id."""
    return bool(ULID_RE.match(value))


def check_memory_id(value: object, field: str = "memory_id") -> str:
    """Return value if it is a well-formed id; refuse anything else before it is used."""
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"{field}: must be a non-empty string", hint=_ID_HINT, field=field)
    if len(value) > MAX_ID_LENGTH or not (ULID_RE.match(value) or PATH_ID_RE.match(value)):
        shown = value if len(value) <= 60 else value[:57] + "..."
        raise InvalidInput(
            f"{field}: {shown!r} is not a valid memory id", hint=_ID_HINT, field=field
        )
    return value


def check_version_id(value: object, field: str = "expected_version_id") -> str:
    """Return value if it is a full 40-hex commit sha."""
    if not isinstance(value, str) or not VERSION_RE.match(value):
        raise InvalidInput(
            f"{field}: must be the full 40-character version_id",
            hint="send the version_id from your last search or remember of this memory",
            field=field,
        )
    return value


def path_id(relpath: str) -> str:
    """The id of a hand-made file without an id: its vault-relative path without .md."""
    return relpath[:-3] if relpath.endswith(".md") else relpath


def slugify(title: str) -> str:
    """A readable ASCII file name stem from a title, at most SLUG_LENGTH characters."""
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_title.lower()).strip("-")
    if len(slug) > SLUG_LENGTH:
        cut = slug[: SLUG_LENGTH + 1]
        slug = cut[: cut.rfind("-")] if "-" in cut else slug[:SLUG_LENGTH]
    return slug or "memory"


_ID_HINT = (
    "use an id returned by search or remember: a 26-character ULID, or for a hand-made "
    "file its path without .md (for example notes/wombat)"
)


def path_problem(relpath: str) -> str | None:
    """Why a file at this path may not be taken in, whatever its front matter says, or None.

    Its name reaches ids, results, refusals, commit messages and logs: a control, line
    separator, text-direction or invisible character could speak in the tool's voice or
    disguise the name, and a secret would be committed with the name. The reason names
    the characters escaped and the secret by its kind, never the name itself.
    """
    unsafe = printable.unsafe_characters(relpath)
    if unsafe:
        return (
            f"its name holds control, text-direction or invisible characters "
            f"({', '.join(unsafe)}); it is not taken in"
        )
    secrets = redact.find_secret_kinds(relpath)
    if secrets:
        return f"its name holds a secret ({', '.join(secrets)}); it is not taken in"
    return None


PATH_HINT = "rename the file"
STATE_FOLDER = "state"  # work state's lists: state/<project>/<name>.yaml


def is_state_path(relpath: str) -> bool:
    """Whether a vault-relative path is one of work state's lists."""
    parts = relpath.split("/")
    return len(parts) == 3 and parts[0] == STATE_FOLDER and parts[2].endswith(".yaml")


ROOT_README = "README.md"


def may_hold_memory(relpath: str) -> bool:
    """is_memory_path, or the root README.md: a memory only where the vault's folder keeps
    it one (storage/left_out.py reads that rule, and the rules a person keeps)."""
    return relpath == ROOT_README or is_memory_path(relpath)


def is_memory_path(relpath: str) -> bool:
    """Whether a vault-relative path can hold a memory (not .git, .vault, dotfiles, backups,
    the root README.md: see may_hold_memory)."""
    parts = relpath.split("/")
    name = parts[-1]
    if not name.endswith(".md") or relpath == ROOT_README:
        return False
    if any(p.startswith(".") or not p for p in parts):
        return False
    # Editor artefacts: emacs autosave (#x.md#), backups (x.md~), vim/jetbrains temp names.
    return not (name.startswith("#") or name.startswith("~") or name.endswith("~"))
