"""Undo a session: every memory a range of commits changed put back as it was before it.

The range is a git range (`A..B`, or one commit) or one client's commits (`--client`,
`--since`, `--until`). Each file the range's commits touched is reverted commit by
commit, newest first, as `git revert` would: a file still as a commit left it goes back
to the version before that commit (a create is deleted, a delete restored, a move is
its delete and its create); a file changed since (by a person, another client, or
between the session's own commits) is merged three ways by the memory merge rules
(core/merge.py: base the commit's version, ours the file now, theirs the version before
the commit) and reverted only when both changes are kept without a conflict: no value
set aside, no body conflict. Any other file is kept as it is and listed. Everything is
one commit through Vault.apply_plan (the write lock, the refusal of a file with an
uncommitted hand edit, one commit message: changelog's `revert`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vault_tool.core import changelog
from vault_tool.core.ids import is_memory_path
from vault_tool.core.memory import parse
from vault_tool.core.times import parse_time
from vault_tool.engine import review
from vault_tool.engine.writer import Planned, PlanResult
from vault_tool.errors import InvalidInput, NotFound, VaultError


@dataclass
class FileRevert:
    """One file of the revert: what it becomes (None: deleted) and how it was decided."""

    path: str
    before: bytes | None  # the file now
    after: bytes | None  # the file once reverted
    outcome: str  # reverted | merged | kept (changed since, the revert would conflict)
    reason: str = ""
    title: str = ""


@dataclass
class RevertPlan:
    commits: list[str]  # the shas undone, oldest first
    files: list[FileRevert] = field(default_factory=list)
    result: PlanResult | None = None
    review: dict[str, Any] | None = None  # a dry run's: the review of what it would do

    def to_dict(self) -> dict[str, Any]:
        return {
            "commits": self.commits,
            "version_id": self.result.version_id if self.result else None,
            **({"review": self.review} if self.review is not None else {}),
            "files": [
                {
                    "path": f.path,
                    "title": f.title,
                    "outcome": f.outcome,
                    "change": _change(f.before, f.after),
                    "reason": f.reason,
                }
                for f in self.files
            ],
        }


def revert(
    vault: Any,
    store: Any,
    span: str | None = None,
    *,
    client: str | None = None,
    since: str | None = None,
    until: str | None = None,
    dry_run: bool = False,
) -> RevertPlan:
    """Plan the revert of the range and, unless dry_run, commit it (see the module); vault
    writes, store reads the history (Vault.revert hands both)."""
    shas = _commits(store, span, client, since, until)
    plan = RevertPlan(shas)
    steps: dict[str, list[tuple[bytes | None, bytes | None]]] = {}
    for sha in reversed(shas):  # newest first
        for path in _paths(store, sha):
            before = store.show_file(f"{sha}^", path) if _has_parent(store, sha) else None
            steps.setdefault(path, []).append((store.show_file(sha, path), before))
    for path in sorted(steps):
        now = store.read_bytes(path)
        plan.files.append(_file(path, now, steps[path]))
    changed = [f for f in plan.files if f.outcome != "kept" and f.after != f.before]
    entries = [changelog.entry_of_file(f.before or f.after, f.path) for f in changed]
    for f, entry in zip(changed, entries, strict=True):
        f.title = entry.title
    for f in plan.files:
        if not f.title:
            f.title = changelog.entry_of_file(f.before, f.path).title if f.before else f.path
    if not changed:
        return plan
    items = [
        Planned(f.path, parse(f.after.decode("utf-8"), f.path), data=f.after)
        if f.after is not None
        else Planned(f.path, None, memory_id=e.memory_id)
        for f, e in zip(changed, entries, strict=True)
    ]
    subject = changelog.subject(
        "revert", memories=changelog.memories(len(changed)), what=_what(span, client, shas)
    )
    plan.result = vault.apply_plan(
        items,
        subject,
        dry_run=dry_run,
        read={f.path: f.before for f in changed if f.before is not None},
    )
    return plan


def _file(
    path: str, now: bytes | None, steps: list[tuple[bytes | None, bytes | None]]
) -> FileRevert:
    """Revert one file through its commits' (version, version before) pairs, newest first."""
    state = now
    merged = False
    for version, before in steps:
        if state == version:
            state = before
            continue
        if state is None or version is None or before is None:
            return FileRevert(path, now, now, "kept", _why_kept(state, version))
        result = _merge(version, state, before, path)
        if isinstance(result, str):
            return FileRevert(path, now, now, "kept", f"changed since the range: {result}")
        state, merged = result, True
    if merged:
        return FileRevert(path, now, state, "merged", "changed since the range; both kept")
    return FileRevert(path, now, state, "reverted")


def _why_kept(state: bytes | None, version: bytes | None) -> str:
    if state is None:
        return "deleted since the range (a delete and an edit cannot both be kept)"
    if version is None:
        return "made again at its path since the range"
    return "changed since the range; the revert would delete it (its edits would be lost)"


def _merge(base: bytes, ours: bytes, theirs: bytes, path: str) -> bytes | str:
    """ours with the change from base to theirs, or why the memory merge would not keep
    both without a conflict."""
    from vault_tool.core import merge
    from vault_tool.storage.merge_driver import merge_bodies

    outcome = merge.plan(base, ours, theirs, path)
    if isinstance(outcome, merge.Fallback):
        return outcome.reason
    if merge.NOTES_KEY.encode() in outcome.head.encode() and merge.NOTES_KEY.encode() not in ours:
        return "a value changed on both sides (the merge would set one aside)"
    body = outcome.body
    if body is None:
        body = merge_bodies(*outcome.bodies, path)
        if body is None:
            return "the body changed on both sides in the same lines"
    return outcome.text(body).encode("utf-8")


def _commits(
    store: Any, span: str | None, client: str | None, since: str | None, until: str | None
) -> list[str]:
    """The commits to undo, oldest first (merges left out: their sides are commits too)."""
    if span is None and client is None:
        raise InvalidInput(
            "name what to revert: a RANGE, or --client NAME (with --since/--until)",
            hint="vault-tool revert HEAD~3..HEAD, or vault-tool revert --client my-agent "
            "--since today",
        )
    args = ["log", "--reverse", "--no-merges", "--format=%H%x00%B%x1e"]
    for option, value in (("--since", since), ("--until", until)):
        if value:  # (seconds since the epoch: git reads a bare day as that day, now)
            args.append(f"{option}=@{int(parse_time(value).timestamp())}")
    if span is None:
        args.append("HEAD")
    elif ".." in span:
        args.append(span)
    else:
        args += ["-1", span]
    try:
        listed = store.git(*args, "--")
    except VaultError:
        raise InvalidInput(
            f"{span} is not a range of this vault's history",
            hint="name commits from `vault-tool log` (A..B, or one sha)",
        ) from None
    shas = []
    for record in filter(str.strip, listed.split("\x1e")):
        sha, _, message = record.strip("\n").partition("\x00")
        if client is None or changelog.client_of(message.strip()) == client:
            shas.append(sha)
    if not shas:
        raise NotFound(
            "no commit to revert in that range",
            hint="see `vault-tool log --client NAME` for what a client wrote",
        )
    return shas


def _paths(store: Any, sha: str) -> list[str]:
    listed = store.git(
        "-c", "core.quotepath=off", "diff-tree", "-r", "--no-renames", "--root",
        "--no-commit-id", "--name-only", "-z", sha,
    )  # fmt: skip
    return [p for p in listed.split("\0") if p and is_memory_path(p)]


def _has_parent(store: Any, sha: str) -> bool:
    return bool(store.git("rev-list", "--parents", "-n", "1", sha).split()[1:])


def _change(before: bytes | None, after: bytes | None) -> str:
    if before == after:
        return "unchanged"
    if before is None:
        return "restored"
    return "deleted" if after is None else "rewritten"


def _what(span: str | None, client: str | None, shas: list[str]) -> str:
    """The range as the subject names it: the commits undone, by their short shas."""
    count = f"{len(shas)} commit{'s' if len(shas) != 1 else ''}"
    named = f"{client}'s {count}" if span is None else f"{span} ({count})"
    return f"{named}, {shas[0][:10]}" + (f"..{shas[-1][:10]}" if len(shas) > 1 else "")


def reviewed(plan: RevertPlan, index: Any) -> dict[str, Any]:
    """What the revert would do, as `vault-tool review` shows a range (engine/review.py):
    each memory it changes, from the file now to the file reverted."""
    found = []
    for f in plan.files:
        if f.outcome == "kept" or f.before == f.after:
            continue
        entry = changelog.entry_of_file(f.before or f.after, f.path)
        found.append(review.Touched(entry.memory_id, f.path, f.before, f.path, f.after))
    return review.assemble(index, found, "what the revert would change", len(plan.commits))
