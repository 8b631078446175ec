"""The memory merge driver, registered with git so that every merge of a memory file uses it.

git finds a merge driver in two places: an attribute naming it for the path
(`*.md merge=vault-tool`, in the committed `.gitattributes`, or in `.git/info/attributes`
where a person's own `.gitattributes` does not name it) and the command in `.git/config`.
Both are written by `init` and checked on every open, so a person's plain `git pull`,
`git merge`, `git rebase` and `git cherry-pick` in a clone use the driver once vault-tool
has opened it. A clone nobody has opened yet falls back to git's text merge without a word:
doctor reports that (problems()).
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

DRIVER = "vault-tool"
ATTRIBUTE_LINE = f"*.md merge={DRIVER}"
STATE_ATTRIBUTE_LINE = f"state/**/*.yaml merge={DRIVER}"  # work state's lists
ATTRIBUTE_LINES = (ATTRIBUTE_LINE, STATE_ATTRIBUTE_LINE)
ATTRIBUTES = f"""\
# Merge memories fact by fact, work state's lists item by item: `vault-tool merge-driver`
# (registered in .git/config).
{ATTRIBUTE_LINE}
{STATE_ATTRIBUTE_LINE}
"""
_NAME = "vault-tool: merge memory files by their front matter's keys, facts and entities"


def driver_command(interpreter: str | None = None) -> str:
    """The command git runs (%O base, %A ours and the result, %B theirs, %L marker size,
    %P the path, which git quotes). It runs the interpreter that registered it (the
    `vault-tool` script may not be on git's PATH) while that is there, else the
    `vault-tool` on PATH: a virtual environment made anew elsewhere leaves the recorded
    path behind, and a person's plain `git pull` must still merge by fact (the next open
    records the new interpreter). With neither, it says how to fix it and stops the merge
    as a conflict. `--` ends the options: a path such as `-how-we-deploy.md` is a path,
    not `-h`."""
    python = shlex.quote(interpreter or sys.executable)
    arguments = "merge-driver -- %O %A %B %L %P"
    return (
        f'{_RECORDED}{python}; if [ -x "$p" ]; then exec "$p" -m vault_tool {arguments}; '
        f"elif {_FALLBACK}; then exec vault-tool {arguments}; "
        f'else echo "{_NOT_FOUND}" >&2; exit 1; fi'
    )


# The parts of the command that tell ours (and which interpreter it records) from an older
# form, which named only the interpreter and is written again on open.
_RECORDED = "p="
_FALLBACK = "command -v vault-tool >/dev/null 2>&1"
_NOT_FOUND = (
    "vault-tool merge-driver: no vault-tool to run (the Python that registered the driver "
    "is gone and no vault-tool is on PATH): open the vault with vault-tool (any command "
    "but doctor and verify) to register it again, then git merge --abort and pull again"
)


def register(repo_run, git_dir: Path, root: Path) -> bool:
    """Name the driver for memory files and give git its command; True if anything was
    written. Cheap when both are there (two file reads, no git process). A command that
    still runs is kept: the same vault opened by two environments does not flip it."""
    wrote = False
    if not _runs(configured_driver(git_dir)):
        repo_run("config", f"merge.{DRIVER}.name", _NAME)
        repo_run("config", f"merge.{DRIVER}.driver", driver_command())
        wrote = True
    if missing := unnamed(root, git_dir):
        add_attributes(git_dir, missing)
        wrote = True
    return wrote


def configured_driver(git_dir: Path) -> str | None:
    """The driver's command in .git/config, or None."""
    return config_value(git_dir, f'merge "{DRIVER}"', "driver")


def config_value(git_dir: Path, section: str, key: str) -> str | None:
    """A value of .git/config read from the file (git writes a section such as
    `[merge "vault-tool"]` with one `driver = ...` line), or None: no git process."""
    inside = False
    for line in _read(git_dir / "config").splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            inside = stripped == f"[{section}]"
        elif inside and stripped.startswith(key):
            name, _, value = stripped.partition("=")
            if name.strip() == key:
                return _unescaped(value.strip())
    return None


def _runs(command: str | None) -> bool:
    """Whether a configured command is ours in its current form (ends its options before
    the paths, falls back to the `vault-tool` on PATH) and its interpreter is still there."""
    if not command or "merge-driver -- " not in command or _FALLBACK not in command:
        return False
    try:
        first = shlex.split(command.partition(";")[0])[0]
    except (ValueError, IndexError):
        return False
    if not first.startswith(_RECORDED):
        return False
    program = first.removeprefix(_RECORDED)
    return Path(program).is_file() and os.access(program, os.X_OK)


def names_driver(root: Path, git_dir: Path) -> bool:
    """Whether the vault's attributes files name the driver for memory files and lists."""
    return not unnamed(root, git_dir)


def unnamed(root: Path, git_dir: Path) -> list[str]:
    """The attribute lines naming the driver that no attributes file of the vault holds
    (a vault made before work state merged by the driver lacks the second)."""
    held = attribute_lines(root, git_dir)
    return [line for line in ATTRIBUTE_LINES if line not in held]


def attribute_lines(root: Path, git_dir: Path) -> set[str]:
    """The lines of the vault's attributes files (the committed one and the clone's own)."""
    return {
        line.strip()
        for path in (root / ".gitattributes", git_dir / "info" / "attributes")
        for line in _read(path).splitlines()
    }


def add_attributes(git_dir: Path, lines: list[str]) -> None:
    """Append lines to the clone's own attributes file (.git/info/attributes): a person's
    committed .gitattributes is theirs to change."""
    info = git_dir / "info" / "attributes"
    info.parent.mkdir(parents=True, exist_ok=True)
    before = _read(info)
    with info.open("a", encoding="utf-8") as out:
        text = "".join(f"{line}\n" for line in lines)
        out.write(("\n" if before and not before.endswith("\n") else "") + text)


def problems(config_driver: str | None, root: Path, git_dir: Path) -> list[str]:
    """What keeps git from merging memory files with the driver (config_driver: the value of
    merge.vault-tool.driver, None when unset); empty when it will."""
    found = []
    if not config_driver:
        found.append(
            f"git has no command for the merge driver (merge.{DRIVER}.driver is unset): "
            "merges of memory files fall back to git's text merge"
        )
    elif not _runs(config_driver):
        found.append(
            f"merge.{DRIVER}.driver ({config_driver}) is not a `vault-tool merge-driver --` "
            "that can run here: open the vault with vault-tool to write it again"
        )
    if missing := unnamed(root, git_dir):
        found.append(f"no attributes file names the merge driver ({'; '.join(missing)})")
    return found


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (FileNotFoundError, UnicodeDecodeError):
        return ""


def _unescaped(value: str) -> str:
    # git quotes a value that holds `;` or `#`, escaping `"` and `\` inside.
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1]
    return value.replace('\\"', '"').replace("\\\\", "\\")
