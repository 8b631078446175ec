"""Making an existing folder of notes a vault in place: what `init` finds there and keeps.

No note is rewritten. A folder that is already a git repository keeps its history: the
`Initialize vault` commit adds only the vault's own files. A folder without one gets a new
repository whose first commit holds the vault's files and the notes as they are, except an
empty note, one larger than a memory may be, and a note whose name or text holds a secret
(never written to git: the first open reports it).
Attachments (images, PDFs, canvases) and dot folders (.obsidian/, .trash/) are left as
they are: they are not memories, and whether they are versioned is the person's choice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vault_tool.core import changelog, ids, redact
from vault_tool.core.memory import MAX_FILE_BYTES
from vault_tool.storage.durable import write_new
from vault_tool.storage.folder import files_under

# The lines of the vault's .gitignore that must be there for its caches to stay out of git.
REQUIRED_IGNORES = (".vault/index/", ".vault/run/", ".vault/ledger/", ".*.vault-tmp-*")


@dataclass
class Found:
    """What an existing folder holds: notes to commit, notes held back, other files."""

    notes: list[str] = field(default_factory=list)
    held_back: dict[str, str] = field(default_factory=dict)  # path -> why
    other_files: int = 0


def existing_files(root: Path) -> Found:
    """The notes of a folder about to become a vault (its own files and dot folders aside)."""
    found = Found()
    for rel, _ in files_under(root):
        if not ids.is_memory_path(rel):
            found.other_files += 1
            continue
        why = ids.path_problem(rel) or _why_held_back(root / rel)
        if why:
            found.held_back[redact.redact_name(rel)] = why  # (a name may hold the secret)
        else:
            found.notes.append(rel)
    found.notes.sort()
    return found


def new_repository(root: Path) -> Any:
    """A new git repository at root, on branch main (GitPython's handle)."""
    import git

    return git.Repo.init(root, initial_branch="main")


def configure(repo: Any) -> None:
    """Durable commits, and a commit-graph that keeps `git log -- path` fast on big vaults."""
    writer = repo.config_writer()
    try:
        writer.set_value("core", "fsync", "committed")
        writer.set_value("core", "commitGraph", "true")
        writer.set_value("gc", "writeCommitGraph", "true")
    finally:
        writer.release()


def first_commit_message(found: Found) -> str:
    """The subject of a new repository's first commit, and what it holds."""
    noun = "note" if len(found.notes) == 1 else "notes"
    body = f"Adopts {len(found.notes)} existing {noun} as they are." if found.notes else ""
    if found.held_back:
        body += f" Holds back {len(found.held_back)} (see `vault-tool doctor`)."
    return changelog.subject("initialize") + (f"\n\n{body.strip()}" if body else "")


def write_gitignore(root: Path, ours: str) -> None:
    """Write the vault's .gitignore, or append the lines it needs to a person's own one."""
    path = root / ".gitignore"
    if not path.exists():
        write_new(path, ours)
        return
    text = path.read_text(encoding="utf-8", errors="replace")
    present = {line.strip() for line in text.splitlines()}
    missing = [line for line in REQUIRED_IGNORES if line not in present]
    if missing:
        lead = "" if text.endswith("\n") or not text else "\n"
        with path.open("a", encoding="utf-8", newline="\n") as out:
            out.write(lead + "# vault-tool's machine-local state\n" + "\n".join(missing) + "\n")


def _why_held_back(path: Path) -> str | None:
    """Why a note stays out of the first commit: empty (nothing to keep, and most often a
    save caught half-way), too large to be a memory, or holding a secret (never written to
    git); else None."""
    try:
        with path.open("rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)  # (never all of a far larger one)
    except OSError:
        return None  # the first open reads it again and says what is wrong with it
    if len(data) > MAX_FILE_BYTES:
        return "the file is larger than a memory may be (1 MB); it is not committed"
    if not data.strip():
        return "the file is empty; it is not committed"
    try:
        kinds = redact.find_secret_kinds(data.decode("utf-8"))
    except UnicodeDecodeError:
        return None
    return f"holds a secret ({', '.join(kinds)}); it is not committed" if kinds else None
