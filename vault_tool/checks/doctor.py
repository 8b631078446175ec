"""`vault-tool doctor`: everything that can make a vault unhealthy, each with its fix.

It runs verify (verify.py) and looks at what verify does not: settings, git's branch and
identity, whether git merges memory files with vault-tool's merge driver, values a merge
set aside for review, and (activity.py) lock files and who holds them, interrupted writes,
and the watcher's leader. Each check is ok, warn (something for a person to do: the vault needs
attention, and is still healthy) or fail (a fault: the vault is unhealthy). Hand edits that
nobody has taken in yet only need attention: with no watcher running that is how a vault
edited by hand looks until `vault-tool commit`. Like verify it only looks: it repairs
nothing and waits for nobody for long.
"""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass
from typing import Any

from vault_tool.checks import activity, team
from vault_tool.checks.checkup import Check, Checkup, count, issue_rows
from vault_tool.checks.verify import Issue, Progress, VerifyReport, verify
from vault_tool.core.printable import escape
from vault_tool.errors import VaultError, VaultUnavailable
from vault_tool.search import links
from vault_tool.search.documents import INDEX_SCHEMA_VERSION
from vault_tool.storage import config as config_module
from vault_tool.storage import repo_state, sync_merge
from vault_tool.storage.git import FALLBACK_EMAIL, FALLBACK_NAME
from vault_tool.storage.processes import live_leader
from vault_tool.storage.store import Store


@dataclass
class DoctorReport:
    """Every check doctor ran."""

    checks: list[Check]

    @property
    def healthy(self) -> bool:
        return all(c.status != "fail" for c in self.checks)

    @property
    def verdict(self) -> str:
        """unhealthy (a check failed), needs attention (one warns), else healthy."""
        if not self.healthy:
            return "unhealthy"
        return "needs attention" if any(c.status == "warn" for c in self.checks) else "healthy"

    def to_dict(self) -> dict[str, Any]:
        """The report as --json prints it."""
        checks = [asdict(c) for c in self.checks]
        return {"healthy": self.healthy, "verdict": self.verdict, "checks": checks}


def doctor(checkup: Checkup, progress: Progress | None = None) -> DoctorReport:
    """Everything that can make a vault unhealthy, each with what to do about it."""
    found = verify(checkup, progress)
    by_kind: dict[str, list[Issue]] = {}
    for issue in found.issues:
        by_kind.setdefault(issue.kind, []).append(issue)
    holder = activity.write_lock_holder(checkup.store.write_lock_path)
    checks = [
        _check_config(checkup),
        _check_git(checkup, holder),
        _check_git_index(checkup, holder),
        team.check_merge_driver(checkup),
        team.check_diff_driver(checkup),
        _check_index(checkup, found),
        _check_files(by_kind),
        team.check_merged_bodies(by_kind),
        team.check_merge_notes(found),
        team.check_ids(by_kind),
        _check_uncommitted(checkup, by_kind),
        _check_drift(by_kind, _pending_paths(by_kind)),
        _check_links(checkup),
        activity.check_git_locks(checkup),
        activity.check_write_lock(holder),
        activity.check_journal(checkup, holder),
        activity.check_watcher(checkup),
    ]
    return DoctorReport(checks)


# Every setting a vault's config.toml may hold (storage/config.py reads them; a test keeps
# this equal to the settings a new vault's file names).
KNOWN_SETTINGS = {
    "vault": {"schema_version"},
    "watch": {"auto_commit", "debounce_ms"},
    "write": {"lock_timeout_seconds"},
    "sync": {"every"},
    "search": {"semantic"},
    "server": {"tools", "project"},
    "projects": {"default", "folders"},
    "authors": set(),  # any client's name
}


def _check_config(checkup: Checkup) -> Check:
    path = config_module.CONFIG_PATH
    if checkup.config_problem is not None:
        return Check(
            "config",
            "fail",
            checkup.config_problem.message,
            fix=checkup.config_problem.hint + "; until then every command refuses the vault",
        )
    try:
        data = tomllib.loads((checkup.root / path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Check("config", "ok", f"no {path}: the defaults apply")
    unknown = []
    for table, values in data.items():
        if table not in KNOWN_SETTINGS:
            unknown.append(f"[{table}]")
        elif isinstance(values, dict):
            known = KNOWN_SETTINGS[table]
            unknown += [f"[{table}] {key}" for key in values if known and key not in known]
    vault_table = data.get("vault") if isinstance(data.get("vault"), dict) else {}
    version = vault_table.get("schema_version", config_module.SCHEMA_VERSION)
    if version != config_module.SCHEMA_VERSION:
        return Check(
            "config",
            "fail",
            f"{path} says schema_version {version}; this vault-tool reads "
            f"{config_module.SCHEMA_VERSION}",
            fix="use the vault-tool version that wrote this vault, or upgrade this one",
        )
    settings = checkup.store.config
    summary = (
        f"{path}: auto_commit {str(settings.auto_commit).lower()}, debounce "
        f"{settings.debounce_ms} ms, lock timeout {settings.lock_timeout_seconds:g} s"
    )
    if not settings.default_project:
        # A vault made before init wrote it: each clone names its default project after
        # its own folder, so one team's memories were two projects in two clones.
        named = settings.projects(checkup.root).default
        return Check(
            "config",
            "warn",
            f"{summary}; [projects] default is not set: this clone calls the default "
            f"project {named!r} after its folder, and a clone in another folder would call "
            "it otherwise",
            fix=f'set `default = "{named}"` under [projects] in {path} (the name this clone '
            "used; any name will do) and commit it, so that every clone shares it",
        )
    if settings.server_tools != "core":
        summary += f", servers offer the {settings.server_tools} tools"
    if settings.semantic:
        from vault_tool.search import dense

        summary += ", semantic on"
        if dense.available() and checkup.index is not None:
            have = len(dense.DenseIndex.open(checkup.index.dir))
            summary += f" ({have} of {checkup.index.count()} memories embedded; a server embeds"
            summary += " the rest in the background, searching by words until then)"
        if not dense.available():
            return Check(
                "config",
                "warn",
                f"{summary}, but the semantic extra is not installed: search ranks by words",
                fix="pip install 'vault-tool[semantic]', or set [search] semantic = false",
            )
    if unknown:
        return Check(
            "config",
            "warn",
            f"{summary}; unknown settings are ignored: {', '.join(unknown)}",
            details=[{"setting": u} for u in unknown],
            fix=f"check the spelling against the comments in a new vault's {path}",
        )
    return Check("config", "ok", summary)


def _check_git(checkup: Checkup, holder: int | None) -> Check:
    store = checkup.store
    try:
        head = store.head_sha()
    except VaultError as problem:
        return Check(
            "git", "fail", problem.message, fix="make a first commit, or re-create the vault"
        )
    state = repo_state.read_state(store.repo.git_dir)
    branch = state.branch
    name = _git_or_none(store, "config", "user.name")
    email = _git_or_none(store, "config", "user.email")
    where = f"on {branch}" if branch else "on a detached HEAD"
    details = [{"head": head, "branch": branch, "user.name": name, "user.email": email}]
    if state.operation == repo_state.SYNC_MERGING:
        details[0]["in_progress"] = state.operation
        return _sync_merging(checkup, f"{where} at {head[:10]}", holder, details)
    if state.busy:
        # The same refusal every write and hand edit meets until it is over.
        busy = state.refusal(store.repo.git_dir)
        details[0]["in_progress"] = state.operation
        return Check("git", "fail", f"{where} at {head[:10]}; {busy.message}", details, busy.hint)
    if not (name and email):
        return Check(
            "git",
            "warn",
            f"{where} at {head[:10]}; git knows no identity, so commits are made by "
            f"{FALLBACK_NAME} <{FALLBACK_EMAIL}>",
            details,
            fix="git config --global user.name 'Your Name'; git config --global user.email you@x",
        )
    return Check("git", "ok", f"{where} at {head[:10]}; commits by {name} <{email}>", details)


def _sync_merging(
    checkup: Checkup, where: str, holder: int | None, details: list[dict[str, Any]]
) -> Check:
    """A sync's merge: one under way (its sync holds the write lock), or one a sync left
    when it was stopped, which is the tool's to undo, not a person's to finish."""
    record = sync_merge.read(checkup.store.repo.git_dir) or {}
    theirs = str(record.get("theirs") or "")[:10]
    if holder is not None:
        return Check("git", "ok", f"{where}; `vault-tool sync` is merging {theirs} now", details)
    return Check(
        "git",
        "warn",
        f"{where}; a `vault-tool sync` was stopped half-way through its merge of {theirs}: "
        "not a merge of yours, and nothing is lost. Until it is undone the vault commits "
        "nothing; the next write, hand edit taken in or sync undoes it, and the next sync "
        "merges again",
        details,
        fix="run `vault-tool sync` (or leave it to a running server)",
    )


def _check_git_index(checkup: Checkup, holder: int | None) -> Check:
    """git's index as git itself sees it: a damaged one fails every write after the first."""
    store = checkup.store
    damage = repo_state.index_damage(store.repo.git_dir)
    if damage is not None:
        return Check(
            "git_index",
            "fail",
            f"git's index (.git/index) is damaged: {damage}; every write fails",
            fix=repo_state.INDEX_HINT,
        )
    try:
        # GIT_OPTIONAL_LOCKS=0: looking must not rewrite the index (doctor repairs nothing).
        store.git("status", "--porcelain", "-uno", env={"GIT_OPTIONAL_LOCKS": "0"})
        unmerged = repo_state.unmerged_paths(store.git)
    except VaultError as problem:
        fix = problem.hint if isinstance(problem, VaultUnavailable) else "see git's message"
        return Check("git_index", "fail", f"git cannot read its index: {problem.message}", fix=fix)
    syncing = repo_state.read_state(store.repo.git_dir).operation == repo_state.SYNC_MERGING
    if unmerged and syncing:  # (the git check says whose merge it is)
        stopped = holder is None
        return Check(
            "git_index",
            "warn" if stopped else "ok",
            f"git's index holds the conflicts of a `vault-tool sync`'s merge: {len(unmerged)} "
            + ("paths, undone with it" if stopped else "paths, as the sync settles them"),
            [{"path": p} for p in unmerged],
            fix="run `vault-tool sync`" if stopped else "",
        )
    if unmerged:
        busy = repo_state.unmerged_busy(unmerged)
        return Check(
            "git_index", "fail", busy.message, [{"path": p} for p in unmerged], fix=busy.hint
        )
    return Check("git_index", "ok", "git reads its index (`git status` works)")


def _check_index(checkup: Checkup, found: VerifyReport) -> Check:
    if checkup.index is None and checkup.index_state == "missing":
        # A fresh clone has none (the index is never committed): nothing is wrong with it.
        return Check(
            "index",
            "warn",
            "no search index yet (a fresh clone, or one deleted): it is built from the files "
            "when a command first opens the vault (search, sync, serve, watch)",
            fix="nothing to do; `vault-tool reindex` builds it now",
        )
    if checkup.index is None or found.index == "damaged":
        issue = found.issues[0]
        return Check("index", "fail", issue.detail, fix=issue.fix)
    segments = checkup.index.segment_count()
    summary = (
        f"{found.indexed} memories indexed, schema version {checkup.index_version} "
        f"(this vault-tool: {INDEX_SCHEMA_VERSION}), {count(segments, 'segment')}"
    )
    return Check("index", "ok", summary, [{"segments": segments, "documents": found.indexed}])


def _check_files(by_kind: dict[str, list[Issue]]) -> Check:
    # Markers in a front matter, or not committed (git's work in progress), are never taken in.
    marked = [i for i in by_kind.get("conflict_markers", []) if not i.merged]
    kinds = ("unparseable", "refused", "refused_name", "committed_secret")
    bad = [i for kind in kinds for i in by_kind.get(kind, [])] + marked
    if not bad:
        return Check("files", "ok", "every memory file parses")
    details = issue_rows(bad)
    for row, issue in zip(details, bad, strict=True):
        # The fix comes from the file's own error, which knows what is wrong with it.
        if issue.kind == "unparseable" and issue.hint:
            row["fix"] = issue.hint
    return Check(
        "files",
        "fail",
        f"{count(len(bad), 'file')} cannot be taken in (the last good versions stay searchable)",
        details,
        fix="fix each file as shown; the watcher or `vault-tool commit` then takes it in",
    )


PENDING_KINDS = ("uncommitted", "moved_uncommitted", "deleted_uncommitted")


def _pending_paths(by_kind: dict[str, list[Issue]]) -> set[str]:
    """The paths of hand edits not yet committed (both ends of a move)."""
    issues = [i for kind in PENDING_KINDS for i in by_kind.get(kind, [])]
    return {i.path for i in issues} | {i.moved_from for i in issues if i.moved_from}


def _check_uncommitted(checkup: Checkup, by_kind: dict[str, list[Issue]]) -> Check:
    pending = [i for kind in PENDING_KINDS for i in by_kind.get(kind, [])]
    if not pending:
        return Check("uncommitted", "ok", "every memory file is committed")
    pending.sort(key=lambda i: i.path)
    leader = live_leader(checkup.run_dir)
    what = f"{count(len(pending), 'hand edit')} not committed yet"
    fix = (
        "`vault-tool commit` commits them, one commit per memory (a running watcher does it "
        "within a second); `git checkout -- PATH` undoes one"
    )
    if not checkup.store.config.auto_commit:
        status, summary = "warn", f"{what} (auto_commit is off: they wait for you to commit them)"
    elif leader is None:
        status = "warn"
        summary = f"{what}: nobody watches this vault, so they wait for `vault-tool commit` "
        summary += "or the next server or `vault-tool watch` to start"
    else:
        status = "fail"
        summary = f"{what}, though pid {leader['pid']} watches and commits hand edits"
        fix = "if they were saved a moment ago, run doctor again; if they stay, " + fix
    rows = issue_rows(pending)
    for row, issue in zip(rows, pending, strict=True):
        row["fix"] = fix  # one fix for every kind of hand edit, shown once
        if issue.moved_from:
            row["moved_from"] = issue.moved_from
            row["reason"] = f"moved (uncommitted) from {escape(issue.moved_from)}"
    return Check("uncommitted", status, summary, rows, fix=fix)


DRIFT_KINDS = (
    "not_indexed",
    "indexed_but_missing",
    "stale_index",
    "indexed_twice",
    "wrong_version",
)


# The index lagging a file in these ways is a hand edit nobody has taken in yet, when that
# file's edit is pending: the uncommitted check reports it, and it is no fault of the index.
LAGGING_KINDS = ("not_indexed", "indexed_but_missing", "stale_index")


def _check_drift(by_kind: dict[str, list[Issue]], pending: set[str]) -> Check:
    drift = [
        i
        for kind in DRIFT_KINDS
        for i in by_kind.get(kind, [])
        if not (kind in LAGGING_KINDS and i.path in pending)
    ]
    by_kind = {k: [i for i in drift if i.kind == k] for k in DRIFT_KINDS}
    if not drift:
        return Check("index_drift", "ok", "the index agrees with the files and with git")
    counts = ", ".join(f"{len(by_kind[k])} {k}" for k in DRIFT_KINDS if by_kind.get(k))
    fixes = sorted({i.fix for i in drift})
    return Check("index_drift", "fail", counts, issue_rows(drift), fix="; ".join(fixes))


def _check_links(checkup: Checkup) -> Check:
    """Links that name no note: worth knowing (a typo, a renamed note), still healthy."""
    if checkup.index is None:
        return Check("links", "warn", "not checked: the index cannot be read (see index)")
    broken = checkup.index.read(lambda searcher: list(links.unresolved(searcher)))
    if not broken:
        return Check("links", "ok", "every link between notes names a note")
    return Check(
        "links",
        "warn",
        f"{count(len(broken), 'link')} between notes "
        f"{'names' if len(broken) == 1 else 'name'} no note (by file name, path, title or alias)",
        [
            {"path": path, "line": None, "reason": f"unresolved link {escape(text)}", "link": text}
            for path, text in broken
        ],
        fix="correct the link, or write the note it names",
    )


def _git_or_none(store: Store, *args: str) -> str | None:
    try:
        return store.git(*args) or None
    except VaultError:
        return None
