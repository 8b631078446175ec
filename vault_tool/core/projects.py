"""Projects: which project a memory belongs to, and the memories of one project. Pure.

A memory's project is its front matter `project`, else the project its top-level folder is
mapped to in `.vault/config.toml` (`[projects.folders]`), else the vault's default project
(`[projects] default`, written by init and committed; else the vault folder's name). The
index keeps only what a file says (its declared project and its top-level folder), so a
changed mapping needs no rebuild: a search for a project asks for both (`Scope`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vault_tool.errors import InvalidInput

PATTERN = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}\Z")
HINT = "use lowercase letters, digits, '.', '_' or '-' (at most 64), such as billing-api"
# What the index holds for a memory that declares no project, and for a file at the top.
UNDECLARED = "-"
TOP = "."


def check_project(value: str, field: str = "project") -> str:
    """A project name as sent, or InvalidInput naming the field and the form it takes."""
    if not PATTERN.match(value):
        raise InvalidInput(f"{field}: {value!r} is not valid", hint=HINT, field=field)
    return value


def project_name(text: str) -> str:
    """A folder's name as a project ("Billing API" -> billing-api; "default" if nothing is left)."""
    name = re.sub(r"[^a-z0-9_.]+", "-", text.lower()).strip("-._")[:64].strip("-._")
    return name or "default"


def top_folder(path: str) -> str:
    """A vault-relative path's top-level folder (TOP for a file at the vault's top)."""
    head, slash, _ = path.partition("/")
    return head if slash else TOP


@dataclass(frozen=True)
class Scope:
    """What the index must hold for a memory to be of one project."""

    name: str
    folders: tuple[str, ...]  # top-level folders mapped to it
    unmapped: bool  # it is the vault's default: undeclared memories of unmapped folders too
    mapped: tuple[str, ...]  # every mapped folder (those are some other project's, or this)


@dataclass(frozen=True)
class Projects:
    """A vault's projects: its default and the folders mapped to projects."""

    default: str
    folders: tuple[tuple[str, str], ...] = ()  # (top-level folder, project)

    def of(self, declared: str | None, path: str) -> str:
        """The project of a memory that declares this one (or None) and lives at path."""
        if declared and PATTERN.match(declared):
            return declared
        return dict(self.folders).get(top_folder(path), self.default)

    def scope(self, name: str) -> Scope:
        """The memories of project name, as index terms."""
        mine = tuple(folder for folder, project in self.folders if project == name)
        every = tuple(folder for folder, _ in self.folders)
        return Scope(name, mine, name == self.default, every)

    def working(self, chosen: str | None, root: Path) -> str:
        """The project a process works in: the one chosen (--project or the config), else
        the vault's default. A working folder never becomes a project unless asked: a
        server started in `/tmp/xyz` would stamp `xyz` into every memory it wrote, and
        two clones would write two projects for one team's memories."""
        del root  # (the vault's place no longer matters: kept for the callers' signature)
        return chosen or self.default


def place(drafts: list[Any], projects: Projects, working: str) -> None:
    """New memories (calls.Draft) that name no project are written into the working one,
    unless their folder would place them there anyway."""
    for draft in drafts:
        folder = f"{draft.delta['memory_type']}/"  # where Writer.path_for puts a new memory
        if "project" not in draft.delta and projects.of(None, folder) != working:
            draft.delta = {**draft.delta, "project": working}
