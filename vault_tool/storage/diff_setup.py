"""The memory diff driver, registered with git so that a diff of a memory file shows facts.

As the merge driver (merge_setup.py): an attribute names it for the path (`*.md
diff=vault-tool`, in the committed `.gitattributes` or the clone's `.git/info/attributes`)
and `.git/config` holds its command (`diff.vault-tool.textconv`), written by `init` and
checked on every open. git then runs `vault-tool textconv` on each side of a memory file
that `git diff`, `git log -p`, `git show` (and any git program honouring textconv) shows,
and compares what it prints (core/diff_lines.py). A clone nobody has opened yet has the
attribute (it is committed) but no command: git shows the file as it is, and doctor says
so. The tool's own reads of history ask git for the file as it is (`--no-textconv`).
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from vault_tool.storage import merge_setup

DRIVER = merge_setup.DRIVER
ATTRIBUTE_LINE = f"*.md diff={DRIVER}"
ATTRIBUTES = f"""\
# Show memories' facts and entities as lines in git diff, log -p and show:
# `vault-tool textconv` (registered in .git/config).
{ATTRIBUTE_LINE}
"""
_SECTION = f'diff "{DRIVER}"'
_KEY = f"diff.{DRIVER}.textconv"
_RECORDED = "p="
_FALLBACK = "command -v vault-tool >/dev/null 2>&1"
_CALL = "textconv -- "


def textconv_command(interpreter: str | None = None) -> str:
    """The command git runs, the file's path appended (git runs `COMMAND "$@"` in a shell,
    hence the function f that takes it as $1). It runs the interpreter that registered it
    while that is there, else the `vault-tool` on PATH, else prints the file as it is: a
    driver that fails stops git's whole diff, where a diff of the raw file still serves.
    `--` ends the options: a path such as `-h.md` is a path."""
    python = shlex.quote(interpreter or sys.executable)
    return (
        f'f() {{ {_RECORDED}{python}; if [ -x "$p" ]; then exec "$p" -m vault_tool '
        f'{_CALL}"$1"; elif {_FALLBACK}; then exec vault-tool {_CALL}"$1"; '
        f'else exec cat -- "$1"; fi; }}; f'
    )


def register(repo_run, git_dir: Path, root: Path) -> bool:
    """Name the driver for memory files and give git its command; True if anything was
    written. Cheap when both are there (file reads, no git process); a command that still
    runs is kept, so two environments opening one vault do not flip it."""
    wrote = False
    if not _runs(merge_setup.config_value(git_dir, _SECTION, "textconv")):
        repo_run("config", _KEY, textconv_command())
        wrote = True
    if not names_driver(root, git_dir):
        merge_setup.add_attributes(git_dir, [ATTRIBUTE_LINE])
        wrote = True
    return wrote


def names_driver(root: Path, git_dir: Path) -> bool:
    """Whether an attributes file of the vault names the driver for memory files."""
    return ATTRIBUTE_LINE in merge_setup.attribute_lines(root, git_dir)


def problems(command: str | None, root: Path, git_dir: Path) -> list[str]:
    """What keeps git from showing memory files' facts in diffs (command: the value of
    diff.vault-tool.textconv, None when unset); empty when it will."""
    found = []
    if not command:
        found.append(
            f"git has no command for the diff driver ({_KEY} is unset): git diff, log -p "
            "and show print memory files' raw front matter"
        )
    elif not _runs(command):
        found.append(
            f"{_KEY} ({command}) is not a `vault-tool textconv --` that can run here: open the "
            "vault with vault-tool to write it again"
        )
    if not names_driver(root, git_dir):
        found.append(f"no attributes file names the diff driver ({ATTRIBUTE_LINE})")
    return found


def fixes(root: Path, git_dir: Path, command: str | None) -> list[str]:
    """The commands that register the driver by hand."""
    by_hand = []
    if not _runs(command):
        by_hand.append(f"git config {_KEY} {shlex.quote(textconv_command())}")
    if not names_driver(root, git_dir):
        by_hand.append(f"echo '{ATTRIBUTE_LINE}' >> .gitattributes")
    return by_hand


def _runs(command: str | None) -> bool:
    """Whether a configured command is ours in its current form and its interpreter is
    still there."""
    if not command or _CALL not in command or _FALLBACK not in command:
        return False
    first = command.partition(";")[0].removeprefix("f() { ")
    try:
        program = shlex.split(first)[0]
    except (ValueError, IndexError):
        return False
    if not program.startswith(_RECORDED):
        return False
    program = program.removeprefix(_RECORDED)
    return Path(program).is_file() and os.access(program, os.X_OK)
