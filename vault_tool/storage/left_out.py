"""Which Markdown files of a vault's folder are not memories, by the person's own rules.

A person's folder holds Markdown that is no note of theirs: Obsidian's templates (a
`{{title}}` heading, a `created: {{date}}` no parser takes), drafts kept out of git, an
archive, the folder's own README. Each rule here is one the person already keeps, so
nothing has to be said twice:

- the template folders Obsidian's settings name: the core Templates plugin's
  `.obsidian/templates.json` ("folder"), the Templater plugin's
  `.obsidian/plugins/templater-obsidian/data.json` ("templates_folder"), and the daily
  notes' template file (`.obsidian/daily-notes.json`, "template");
- `.vaultignore` at the vault's root, in gitignore syntax (pathspec's GitIgnoreSpec);
- the root README.md, read as if `.vaultignore` began with `/README.md`: a line
  `!/README.md` there keeps it a note;
- what git ignores (`git check-ignore`: .gitignore files, .git/info/exclude, git's global
  excludes). A file git tracks is never one git ignores.

A file left out is no memory anywhere: not indexed, not committed by the tool, not read by
verify or doctor, not adopted by init. It stays the person's file, as an attachment does.
The rules are read again whenever one of their files changes (a stat of each per look).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vault_tool.core.ids import ROOT_README

IGNORE_FILE = ".vaultignore"
README = ROOT_README
_TEMPLATES = ".obsidian/templates.json"
_TEMPLATER = ".obsidian/plugins/templater-obsidian/data.json"
_DAILY_NOTES = ".obsidian/daily-notes.json"
# The files whose change changes what is left out (git's own are asked of git each time).
RULE_FILES = (IGNORE_FILE, _TEMPLATES, _TEMPLATER, _DAILY_NOTES)

README_REASON = (
    f"the folder's readme, not a memory (a line `!/{README}` in {IGNORE_FILE} makes it one)"
)
VAULTIGNORE_REASON = f"matched by {IGNORE_FILE}"
GIT_REASON = "ignored by git (.gitignore)"
_SETTINGS_REASON = {
    _TEMPLATES: f"in the Obsidian templates folder ({_TEMPLATES})",
    _TEMPLATER: f"in the Templater templates folder ({_TEMPLATER})",
    _DAILY_NOTES: f"the daily notes' template ({_DAILY_NOTES})",
}


@dataclass(frozen=True)
class _Rules:
    """The rules read from the rule files as they were at `signature`."""

    signature: tuple[Any, ...]
    folders: tuple[tuple[str, str], ...]  # (folder with a trailing /, reason)
    files: dict[str, str]  # path -> reason
    spec: Any  # pathspec.GitIgnoreSpec of `/README.md` and .vaultignore's lines


class LeftOut:
    """The left-out rules of one vault folder; ignored_by_git asks git (None: never)."""

    def __init__(self, root: Path, ignored_by_git: Callable[[list[str]], set[str]] | None) -> None:
        self.root = root
        self._ignored_by_git = ignored_by_git
        self._rules: _Rules | None = None
        self._mutex = threading.Lock()  # (the watcher's thread and the caller's may both ask)

    def why(self, paths: Iterable[str], *, ask_git: bool = True) -> dict[str, str]:
        """Of these vault-relative paths, those left out, each with why (one git call for
        all of them). ask_git=False: the vault's own rules only (for paths git listed
        already, which leaves out what it ignores)."""
        rules = self._current()
        found: dict[str, str] = {}
        rest: list[str] = []
        for path in paths:
            reason = _reason(rules, path)
            if reason is None:
                rest.append(path)
            else:
                found[path] = reason
        if ask_git and rest and self._ignored_by_git is not None:
            for path in self._ignored_by_git(rest):
                found[path] = GIT_REASON
        return found

    def holds(self, path: str) -> bool:
        """Whether this one path is left out."""
        return bool(self.why([path]))

    def _current(self) -> _Rules:
        signature = tuple(_stat(self.root / name) for name in RULE_FILES)
        with self._mutex:
            if self._rules is None or self._rules.signature != signature:
                self._rules = _read_rules(self.root, signature)
            return self._rules


def _reason(rules: _Rules, path: str) -> str | None:
    if path in rules.files:
        return rules.files[path]
    for folder, reason in rules.folders:
        if path.startswith(folder):
            return reason
    if rules.spec.match_file(path):
        return README_REASON if path == README else VAULTIGNORE_REASON
    return None


def _read_rules(root: Path, signature: tuple[Any, ...]) -> _Rules:
    import pathspec

    folders: list[tuple[str, str]] = []
    files: dict[str, str] = {}
    for settings, key in ((_TEMPLATES, "folder"), (_TEMPLATER, "templates_folder")):
        folder = _setting(root / settings, key)
        if folder:  # (an empty one is the vault's root: Obsidian then has none set)
            folders.append((folder + "/", _SETTINGS_REASON[settings]))
    if template := _setting(root / _DAILY_NOTES, "template"):
        named = template if template.endswith(".md") else template + ".md"
        files[named] = _SETTINGS_REASON[_DAILY_NOTES]
    lines = [f"/{README}"]
    try:
        text = (root / IGNORE_FILE).read_text(encoding="utf-8", errors="replace")
        lines += text.splitlines()
    except OSError:
        pass  # (none: only the README's rule)
    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    return _Rules(signature, tuple(folders), files, spec)


def _setting(path: Path, key: str) -> str | None:
    """A folder or file path an Obsidian settings file names, vault-relative, or None."""
    try:
        value = json.loads(path.read_text(encoding="utf-8")).get(key)
    except (OSError, ValueError, AttributeError):
        return None  # absent, or not the JSON Obsidian writes: no rule from it
    if not isinstance(value, str):
        return None
    value = value.strip().strip("/")
    return value if value and ".." not in value.split("/") else None


def _stat(path: Path) -> tuple[int, int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return (stat.st_mtime_ns, stat.st_size, stat.st_ino)
