"""Making an existing folder of notes a vault in place: what `init` finds there and keeps.

No note is rewritten. A folder that is already a git repository keeps its history: the
`Initialize vault` commit adds only the vault's own files. A folder without one gets a new
repository whose first commit holds the vault's files and the notes as they are, except an
empty note, one larger than a memory may be, and a note whose name or text holds a secret
(never written to git: the first open reports it).
Attachments (images, PDFs, canvases), dot folders (.obsidian/, .trash/) and the notes the
person's rules leave out (left_out.py: Obsidian's templates, .vaultignore, .gitignore, the
folder's README) are left as they are: they are not memories, and whether they are
versioned is the person's choice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vault_tool.core import changelog, ids, redact
from vault_tool.core.memory import MAX_FILE_BYTES
from vault_tool.storage.durable import write_new
from vault_tool.storage.folder import files_under
from vault_tool.storage.left_out import README_REASON

# The lines of the vault's .gitignore that must be there for its caches to stay out of git.
REQUIRED_IGNORES = (".vault/index/", ".vault/run/", ".vault/ledger/", ".*.vault-tmp-*")


@dataclass
class Found:
    """What an existing folder holds: notes to commit, notes held back, other files."""

    notes: list[str] = field(default_factory=list)
    held_back: dict[str, str] = field(default_factory=dict)  # path -> why
    other_files: int = 0
    left_out: dict[str, str] = field(default_factory=dict)  # path -> which rule
    readme: str | None = None  # the folder's README.md, left out as no memory


def existing_files(root: Path) -> Found:
    """The Markdown files of a folder about to become a vault (its own files and dot
    folders aside), before sort_out: they are its notes unless a rule leaves them out."""
    found = Found()
    for rel, _ in files_under(root):
        if ids.may_hold_memory(rel):
            found.notes.append(rel)
        else:
            found.other_files += 1
    found.notes.sort()
    return found


def sort_out(found: Found, root: Path, left_out: dict[str, str], *, commit: bool) -> None:
    """Take out of found's notes those the person's rules leave out (left_out: path -> why)
    and, for a first commit, those it holds back (empty, too large, a secret)."""
    notes = []
    for rel in found.notes:
        if rel in left_out:
            if rel == ids.ROOT_README and left_out[rel] == README_REASON:
                found.readme = rel
            else:
                found.left_out[redact.redact_name(rel)] = left_out[rel]
        elif commit and (why := ids.path_problem(rel) or _why_held_back(root / rel)):
            found.held_back[redact.redact_name(rel)] = why  # (a name may hold the secret)
        else:
            notes.append(rel)
    found.notes = notes


def enclosing_repository(root: Path) -> Path | None:
    """The working folder of the git repository root is inside (root itself aside), or None.

    Looked for by hand, not by git: the vault's processes stop git's own search at the
    vault's folder (git.clear_git_environment), so it never commits into an outer one."""
    for folder in root.parents:
        if (folder / ".git").exists():
            return folder
    return None


def ignored_by(outer: Path, root: Path) -> bool:
    """Whether the repository at outer ignores the folder root (its .gitignore lists it):
    then a vault there is no part of it, and may be a repository of its own."""
    import subprocess

    where = root.relative_to(outer).as_posix() + "/"
    done = subprocess.run(
        ["git", f"--git-dir={outer / '.git'}", f"--work-tree={outer}", "check-ignore", "-q", where],
        cwd=outer,
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


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
    if found.left_out:
        body += (
            f" Leaves out {len(found.left_out)} the folder's rules say are not memories"
            " (Obsidian's templates, .vaultignore, .gitignore)."
        )
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
