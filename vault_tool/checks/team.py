"""doctor's checks of what a team vault's merges can leave behind.

A clone whose git does not know the merge driver (merge_setup.py) merges memory files as
plain text without a word (one without the diff driver, diff_setup.py, shows their raw front
matter in diffs); a body the driver could not settle is committed with conflict
markers (flagged: searchable, its hits say so); the values a merge set aside are kept in
the file's `merge_conflicts`; one memory added on two clones becomes two files with one id.
Each is something for a person to do, with the fix.
"""

from __future__ import annotations

import shlex

from vault_tool.checks.checkup import Check, Checkup, issue_rows
from vault_tool.checks.verify import Issue, VerifyReport
from vault_tool.core.printable import escape
from vault_tool.errors import VaultError
from vault_tool.storage import diff_setup, merge_setup
from vault_tool.storage.problems import MERGED_HINT


def check_merge_driver(checkup: Checkup) -> Check:
    """Whether git merges memory files with the driver: else a plain `git pull` falls back
    to a text merge without a word, and conflict markers can land in a front matter."""
    git_dir = checkup.store.repo.git_dir
    command = _config_value(checkup, "--get", f"merge.{merge_setup.DRIVER}.driver")
    found = merge_setup.problems(command, checkup.root, git_dir)
    by_hand = []
    if any("merge.vault-tool.driver" in f for f in found):
        by_hand.append(
            f"git config merge.{merge_setup.DRIVER}.driver "
            f"{shlex.quote(merge_setup.driver_command())}"
        )
    for line in merge_setup.unnamed(checkup.root, git_dir):
        by_hand.append(f"echo '{line}' >> .gitattributes")
    ok = "git merges memory files with `vault-tool merge-driver`"
    return _driver_check("merge_driver", ok, found, by_hand)


def check_diff_driver(checkup: Checkup) -> Check:
    """Whether git shows memory files' facts in diffs (git diff, log -p, show): else a
    reviewer reads raw front matter."""
    git_dir = checkup.store.repo.git_dir
    command = _config_value(checkup, "--get", f"diff.{diff_setup.DRIVER}.textconv")
    found = diff_setup.problems(command, checkup.root, git_dir)
    by_hand = diff_setup.fixes(checkup.root, git_dir, command) if found else []
    ok = "git diff, log -p and show print memories' facts as lines"
    return _driver_check("diff_driver", ok, found, by_hand)


def _driver_check(name: str, ok: str, found: list[str], by_hand: list[str]) -> Check:
    """A git driver's check (git finds both in .git/config, which a clone never copies)."""
    if not found:
        return Check(name, "ok", ok)
    return Check(
        name,
        "warn",
        "; ".join(found),
        [{"problem": f} for f in found],
        fix="run any vault-tool command but doctor and verify once in the clone (`vault-tool "
        "sync`, say): opening it registers the driver; or by hand: " + "; ".join(by_hand),
    )


def check_merged_bodies(by_kind: dict[str, list[Issue]]) -> Check:
    """Bodies a merge committed with conflict markers: searchable, flagged, for a person."""
    merged = [i for i in by_kind.get("conflict_markers", []) if i.merged]
    if not merged:
        return Check("merged_bodies", "ok", "no memory's body holds conflict markers")
    return Check(
        "merged_bodies",
        "warn",
        f"{_memories(len(merged))} conflict "
        "markers in the body, committed by a merge (searchable; their hits say so)",
        issue_rows(merged),
        fix=MERGED_HINT,
    )


def check_merge_notes(found: VerifyReport) -> Check:
    """Values a merge set aside (`merge_conflicts`): kept in the file until a person looks."""
    if not found.set_aside:
        return Check("merge_notes", "ok", "no merge set a value aside")
    rows = [
        {"path": path, "line": None, "reason": "a merge set aside " + _notes_text(notes)}
        for path, notes in sorted(found.set_aside.items())
    ]
    return Check(
        "merge_notes",
        "warn",
        f"{_memories(len(rows))} values a merge set aside (merge_conflicts), to review",
        rows,
        fix="for each value set aside, keep it in place of the kept one if it is the right one; "
        "then delete the `merge_conflicts` key from the front matter (the watcher or "
        "`vault-tool commit` commits the edit)",
    )


def _notes_text(notes: list) -> str:
    shown = []
    for note in notes:
        if isinstance(note, dict):
            field_, kept, aside = (note.get(k) for k in ("field", "kept", "set_aside"))
            shown.append(f"{field_}: {aside!r} (kept {kept!r})")
        else:
            shown.append(repr(note))
    return escape("; ".join(shown))


ID_KINDS = ("duplicate_id", "duplicate_key")


def check_ids(by_kind: dict[str, list[Issue]]) -> Check:
    """Ids (and keys) two files share: a read or an update reaches only one of them. After
    a merge, most often one memory added on two clones."""
    shared = [i for kind in ID_KINDS for i in by_kind.get(kind, [])]
    if not shared:
        return Check("ids", "ok", "every memory has an id and a key of its own")
    details = sorted({i.detail for i in shared})
    return Check(
        "ids",
        "fail",
        "; ".join(details),
        issue_rows(shared),
        fix="; ".join(sorted({i.fix for i in shared})),
    )


def _memories(n: int) -> str:
    """'1 memory holds', '2 memories hold'."""
    return "1 memory holds" if n == 1 else f"{n} memories hold"


def _config_value(checkup: Checkup, *args: str) -> str | None:
    try:
        return checkup.store.git("config", *args) or None
    except VaultError:  # (exit 1: the setting is unset)
        return None
