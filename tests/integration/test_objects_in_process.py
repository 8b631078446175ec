"""A write's git objects (blob, trees, commit) are written in-process, as git writes them,
and its branch moved in-process (test_branch_in_process.py): one git process per write
(update-index) instead of five. Where git would
store something else (attributes that convert files, signing, a shared repository, a
date from the environment) the command that does it runs, as before. Real repositories,
real git, every object checked by git itself."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import subprocess
import traceback
from pathlib import Path

import pytest

from tests.helpers import create_args, git
from vault_tool.engine.vault import Vault
from vault_tool.errors import VaultError
from vault_tool.storage import objects


@contextlib.contextmanager
def git_commands(vault: Vault):
    """The git commands the vault runs while inside (GitPython's cat-file helpers aside)."""
    repo = vault._store.repo
    ran: list[str] = []
    real = repo.run

    def counted(*args, **kwargs):
        ran.append(next(a for a in args if not a.startswith("-") and "=" not in a))
        return real(*args, **kwargs)

    repo.run = counted
    try:
        yield ran
    finally:
        del repo.run


def update_of(made: dict, body: str) -> dict:
    return {
        **create_args(body=body),
        "mode": "update",
        "memory_id": made["memory_id"],
        "expected_version_id": made["version_id"],
    }


def test_a_create_and_an_update_run_no_git_process_and_git_finds_every_object_sound(
    vault: Vault,
):
    vault.remember(create_args("Warm up"))  # (the first write reads git's settings once)
    with git_commands(vault) as created:
        made = vault.remember(create_args())
    with git_commands(vault) as updated:
        vault.remember(update_of(made, "The second version."))
    assert created == []
    # The version an update checks against is the commit this process made: no `git log`.
    assert updated == []
    root = vault.root
    assert git(root, "fsck", "--strict", "--full", "--no-progress", "--no-dangling") == ""
    assert git(root, "status", "--porcelain") == ""
    assert git(root, "show", f"HEAD:{made['path']}") == (root / made["path"]).read_text().strip()
    # Loose objects as git makes them: read-only, and no temp file left behind.
    head = git(root, "rev-parse", "HEAD")
    loose = root / ".git" / "objects" / head[:2] / head[2:]
    assert stat.S_IMODE(loose.stat().st_mode) == 0o444
    assert not list((root / ".git" / "objects").glob("**/tmp_obj_*"))


def test_the_commit_is_the_one_git_commit_tree_makes(vault: Vault):
    made = vault.remember(create_args())
    root = vault.root
    head = made["version_id"]
    fields = dict(
        line.split(" ", 1)
        for line in git(root, "cat-file", "commit", head).split("\n\n")[0].splitlines()
    )
    author, email, *date = fields["author"].rsplit(" ", 3)
    author_date = " ".join(date)
    env = {**os.environ, "GIT_AUTHOR_DATE": author_date, "GIT_COMMITTER_DATE": author_date}
    # The client's write is authored by the client (config.Config.author_for).
    env |= {"GIT_AUTHOR_NAME": author, "GIT_AUTHOR_EMAIL": email.strip("<>")}
    raw = subprocess.run(
        ["git", "cat-file", "commit", head], cwd=root, capture_output=True, check=True
    ).stdout
    message = raw.split(b"\n\n", 1)[1]
    again = subprocess.run(
        ["git", "commit-tree", fields["tree"], "-p", fields["parent"], "-F", "-"],
        cwd=root, input=message, env=env, capture_output=True, check=True,
    ).stdout.decode().strip()  # fmt: skip
    assert again == head
    assert git(root, "log", "-1", "--format=%an <%ae>", head) == "pytest <pytest@vault-tool>"
    assert (
        git(root, "log", "-1", "--format=%cn <%ce>", head)
        == git(root, "var", "GIT_COMMITTER_IDENT").rsplit(" ", 2)[0]
    )


def test_versions_known_from_this_processs_commits_are_the_ones_git_log_gives(vault: Vault):
    root = vault.root
    first = vault.remember(create_args("Ana owns the billing service"))
    second = vault.remember(create_args("Staging needs the VPN"))
    vault.remember(update_of(first, "Billing moved to Ana's team."))
    for made in (first, second):
        assert vault._store.last_commit(made["path"]) == git(
            root, "log", "-1", "--format=%H", "--", made["path"]
        )
    # A person's commit moves HEAD: from then on git is asked again, and says theirs.
    (root / second["path"]).write_text((root / second["path"]).read_text() + "\nBy hand.\n")
    git(root, "commit", "-qam", "My edit")
    assert vault._store.last_commit(second["path"]) == git(root, "rev-parse", "HEAD")


def _with_filter(root: Path) -> None:
    """A clean filter that upper-cases what goes into git (as LFS or git-crypt convert)."""
    git(root, "config", "filter.upper.clean", "tr a-z A-Z")
    git(root, "config", "filter.upper.smudge", "cat")
    (root / ".gitattributes").write_text(
        (root / ".gitattributes").read_text() + "*.md filter=upper\n"
    )
    git(root, "commit", "-qm", "Upper-case notes", "--", ".gitattributes")


@pytest.mark.parametrize(
    ("setting", "falls_back_to"),
    [
        ("filter", ["hash-object", "update-index"]),
        ("shared", ["hash-object", "mktree", "commit-tree", "update-index", "update-ref"]),
        ("date", ["commit-tree", "update-ref"]),
    ],
)
def test_where_git_would_store_something_else_its_own_command_writes_that_object(
    vault_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str, falls_back_to: list[str]
):
    if setting == "filter":
        _with_filter(vault_path)
    elif setting == "shared":
        git(vault_path, "config", "core.sharedRepository", "group")
    else:
        monkeypatch.setenv("GIT_COMMITTER_DATE", "2020-02-02T12:00:00+00:00")
    with Vault.open(vault_path, client="pytest") as vault:
        vault.remember(create_args("Warm up"))
        with git_commands(vault) as ran:
            made = vault.remember(create_args())
    assert [name for name in ran if name not in ("var", "config")] == falls_back_to
    shown = git(vault_path, "show", f"HEAD:{made['path']}")
    if setting == "filter":  # what `git add` stores: the filter's output
        assert shown == (vault_path / made["path"]).read_text().upper().strip()
    if setting == "date":
        assert git(vault_path, "log", "-1", "--format=%cI") == "2020-02-02T12:00:00+00:00"
    assert git(vault_path, "fsck", "--strict", "--no-progress", "--no-dangling") == ""


# --- faults in the object writes -------------------------------------------------------


class _Fail:
    """The nth call of one of objects.py's OS calls fails (ENOSPC) or ends the process."""

    def __init__(self, name: str, nth: int, crash: bool = False) -> None:
        self.name, self.nth, self.crash, self.calls = name, nth, crash, 0
        self.real = getattr(objects, name)

    def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.calls == self.nth:
            if self.crash:
                os._exit(86)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return self.real(*args, **kwargs)


def test_a_git_gc_that_empties_the_object_folders_mid_write_leaves_the_write_whole(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
):
    # `git gc --auto` runs in the background after a person's commit: it packs the loose
    # objects and removes the folders it empties, while a write has its objects staged
    # under temp names. (The torture run found the write failing so: "No such file or
    # directory while ... was written".)
    vault.remember(create_args("Warm up"))
    root, real = vault.root, objects.os_replace
    left: list[list[Path]] = []  # the object folders the gc left

    def gc_first(tmp, final):
        if not left:
            git(root, "repack", "-a", "-d", "-q")
            git(root, "prune-packed")
            left.append([p for p in (root / ".git" / "objects").glob("??") if p.is_dir()])
        return real(tmp, final)

    monkeypatch.setattr(objects, "os_replace", gc_first)
    made = vault.remember(create_args("During a gc", body="Written while git packed."))
    monkeypatch.setattr(objects, "os_replace", real)
    assert left == [[]]  # (every object folder was emptied and removed before the rename)
    assert git(root, "show", f"HEAD:{made['path']}") == (root / made["path"]).read_text().strip()
    _sound(root)


def _sound(root: Path) -> None:
    assert git(root, "fsck", "--strict", "--no-progress", "--no-dangling") == ""
    assert git(root, "status", "--porcelain") == ""
    assert not list((root / ".git" / "objects").glob("**/tmp_obj_*"))


@pytest.mark.parametrize("name", ["os_open", "os_write", "os_fsync", "os_replace"])
def test_a_failed_object_write_fails_the_write_and_changes_nothing(
    vault: Vault, monkeypatch: pytest.MonkeyPatch, name: str
):
    vault.remember(create_args("Warm up"))
    for nth in range(1, 20):
        before = git(vault.root, "rev-parse", "HEAD")
        fail = _Fail(name, nth)
        monkeypatch.setattr(objects, name, fail)
        try:
            vault.remember(create_args(f"Attempt {name} {nth}", body=f"Number {nth}."))
            failed = None
        except VaultError as problem:
            failed = problem
        monkeypatch.setattr(objects, name, fail.real)
        if failed is None:
            assert fail.calls < nth  # every call of this kind has been failed once
            _sound(vault.root)
            return
        assert failed.message.startswith("the disk is full"), failed.message
        assert "nothing was changed" in failed.message
        assert git(vault.root, "rev-parse", "HEAD") == before
        _sound(vault.root)
    raise AssertionError("the write never ran out of object calls")


def test_a_crash_at_any_object_step_leaves_the_write_whole_after_the_next_open(
    vault_path: Path,
):
    with Vault.open(vault_path, client="pytest") as vault:
        vault.remember(create_args("Warm up"))
    for name in ("os_open", "os_write", "os_fsync", "os_replace"):
        for nth in (1, 3):
            pid = os.fork()
            if pid == 0:
                code = 0
                try:
                    setattr(objects, name, _Fail(name, nth, crash=True))
                    with Vault.open(vault_path, client="pytest") as vault:
                        vault.remember(create_args(f"Crash {name} {nth}"))
                except BaseException:
                    traceback.print_exc()
                    code = 1
                os._exit(code)
            _, status = os.waitpid(pid, 0)
            assert os.waitstatus_to_exitcode(status) in (0, 86)
            with Vault.open(vault_path, client="pytest") as vault:  # (repairs)
                hits = vault.search({"query": f"Crash {name} {nth}"})["selected_hits"]
                assert [h["title"] for h in hits][:1] == [f"Crash {name} {nth}"]
            _sound(vault_path)
