"""The write path under faults: short writes, a full disk, I/O errors, a file-size limit,
a crash between any two steps, a failed undo, and a person's save in the middle of a write.

Faults are injected through tests/faults.py at every step a write makes (each OS call of
the write path, counted), or are real (RLIMIT_FSIZE in a child; a small tmpfs when the
tests run as root). After each: the files on disk and HEAD are both the old version or
both the new one, never a fragment; a failure says so in plain words; and the next open
leaves the vault clean (`git status`, no leftovers, verify).
"""

from __future__ import annotations

import contextlib
import os
import resource
import subprocess
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.faults import CRASH_EXIT, Fault, Faults
from tests.harness import consistency
from tests.helpers import create_args, git
from vault_tool.core.memory import parse
from vault_tool.engine.vault import Planned, Vault
from vault_tool.errors import InvalidInput, VaultError, VersionConflict
from vault_tool.storage.store import Store

# --- the state of the vault ----------------------------------------------------------------


def _memory_files(root: Path) -> dict[str, bytes]:
    store = Store.open(root, repair=False)
    try:
        return {path: (root / path).read_bytes() for path, _ in store.iter_memory_paths()}
    finally:
        store.close()


def _head_files(root: Path) -> dict[str, bytes]:
    paths = git(root, "ls-tree", "-r", "--name-only", "HEAD").splitlines()
    store = Store.open(root, repair=False)
    try:
        return {p: store.show_file("HEAD", p) or b"" for p in paths if p.endswith(".md")}
    finally:
        store.close()


def _assert_whole(
    root: Path, before: dict[str, bytes], head_before: str, mark: str, files: int = 1
) -> bool:
    """Reopen (repair), then: disk == HEAD, and HEAD is the old state or exactly one commit
    changing all `files` files, each now carrying mark (or gone). True if the write landed."""
    Vault.open(root, client="pytest").close()
    assert consistency.check_leftovers(root) == []
    fsck, status = consistency.check_git(root)
    assert fsck == [] and status == []
    assert consistency.check_verify(root) == []
    disk, head = _memory_files(root), _head_files(root)
    assert disk == head
    if git(root, "rev-parse", "HEAD") == head_before:
        assert disk == before
        return False
    assert git(root, "rev-parse", "HEAD^") == head_before
    changed = {p for p in set(disk) | set(before) if disk.get(p) != before.get(p)}
    assert len(changed) == files, changed
    for path in changed:
        assert path not in disk or mark.encode() in disk[path], (path, disk.get(path))
    return True


# --- the operations: prepare (clean writes), then the write under test --------------------

# What a prepared operation calls: a Vault method's name, and its arguments.
Call = tuple[str, tuple[Any, ...], dict[str, Any]]


def _update(vault: Vault, k: int) -> Call:
    current = vault.read(vault.search({"query": "billing"})["selected_hits"][0]["memory_id"])
    call = {
        "mode": "update",
        "memory_id": current["memory_id"],
        "expected_version_id": current["version_id"],
        "content_md": f"# {current['title']}\n\nRevision mark-{k}.\n",
        "semantic_delta": create_args()["semantic_delta"],
    }
    return "remember", (call,), {}


def _create(vault: Vault, k: int) -> Call:
    return "remember", (create_args(f"Created {k}", body=f"Revision mark-{k}."),), {}


def _delete(vault: Vault, k: int) -> Call:
    made = vault.remember(create_args(f"Doomed {k}", body="To be deleted."))
    call = {
        "mode": "delete",
        "memory_id": made["memory_id"],
        "expected_version_id": made["version_id"],
    }
    return "remember", (call,), {}


def _plan(vault: Vault, k: int) -> Call:
    """A rewrite, a delete and a create in one commit (what import and ontology do)."""
    first = vault.remember(create_args(f"Planned A {k}", body="Before."))
    second = vault.remember(create_args(f"Planned B {k}", body="Before."))
    memory = parse((vault.root / first["path"]).read_text(), first["path"])
    fresh = memory.with_changes(
        id=f"01JDXK3M6Q8W1J4T0P{k:08d}",
        title=f"Planned C {k}",
        body=f"# Planned C {k}\n\nmark-{k}\n",
    )
    plan = [
        Planned(first["path"], memory.with_changes(body=f"# Planned A {k}\n\nmark-{k}\n")),
        Planned(second["path"], None, second["memory_id"]),
        Planned(vault.path_for(fresh), fresh),
    ]
    return "apply_plan", (plan, f"Rewrite {k}"), {"client": "pytest"}


OPERATIONS = {"update": _update, "create": _create, "delete": _delete, "plan": _plan}
FILES = {"update": 1, "create": 1, "delete": 1, "plan": 3}  # how many files each changes


@pytest.fixture
def seeded(vault_path: Path) -> Path:
    with Vault.open(vault_path, client="pytest") as vault:
        vault.remember(create_args(body="The acknowledged memory."))
    return vault_path


@dataclass
class Attempt:
    """One run of an operation's write with faults armed, and the state it started from."""

    armed: Faults
    before: dict[str, bytes]
    head: str
    failed: VaultError | None = None
    crashed: bool = False


def _attempt(root: Path, name: str, k: int, *faults: Fault, child: bool = False) -> Attempt:
    """Prepare operation name, then make its write with faults armed: here, or in a forked
    child (for faults that end the process), which opens the vault afresh as a new process
    would. Records the error the write raised."""
    with Vault.open(root, client="pytest") as vault:
        method, args, options = OPERATIONS[name](vault, k)
    attempt = Attempt(Faults(*faults), _memory_files(root), git(root, "rev-parse", "HEAD"))
    if child:
        status = _in_child(partial(_write, root, attempt, method, args, options))
        assert status in (0, CRASH_EXIT), status
        attempt.crashed = status == CRASH_EXIT
        consistency.wait_for_git(root)
    else:
        _write(root, attempt, method, args, options)
    return attempt


def _write(root: Path, attempt: Attempt, method: str, args: Any, options: Any) -> None:
    with Vault.open(root, client="pytest") as vault:
        try:
            with attempt.armed:
                getattr(vault, method)(*args, **options)
        except VaultError as problem:
            attempt.failed = problem


# --- every step, every fault ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "action"),
    [*((name, "enospc") for name in OPERATIONS), ("update", "eio"), ("plan", "eio")],
)
def test_a_failure_at_any_step_leaves_the_old_version_or_the_new_one(
    seeded: Path, name: str, action: str
):
    for k in range(1, 100):
        attempt = _attempt(seeded, name, k, Fault("any", k, action))
        if not attempt.armed.fired:
            assert attempt.failed is None and k > 5, attempt.armed.log
            return
        step = attempt.armed.log[k - 1]
        landed = _assert_whole(seeded, attempt.before, attempt.head, f"mark-{k}", FILES[name])
        if attempt.failed is not None:
            message = attempt.failed.message
            assert not landed, f"step {k} {step}: reported failed but committed"
            assert "nothing was changed" in message, message
            if action == "enospc":
                assert message.startswith("the disk is full"), message
    raise AssertionError("the write never ran out of steps")


@pytest.mark.parametrize("name", OPERATIONS)
def test_a_crash_between_any_two_steps_leaves_the_old_version_or_the_new_one(
    seeded: Path, name: str
):
    for k in range(1, 100):
        attempt = _attempt(seeded, name, k, Fault("any", k, "crash"), child=True)
        _assert_whole(seeded, attempt.before, attempt.head, f"mark-{k}", FILES[name])
        if not attempt.crashed:
            assert k > 5
            return
    raise AssertionError("the write never ran out of steps")


def _in_child(work: Callable[[], object]) -> int:
    """Run work in a forked child (a crash there ends only the child); its exit status."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            work()
        except BaseException:
            traceback.print_exc()
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


@pytest.mark.parametrize("then", ["enospc", "efbig"])
def test_a_write_cut_short_by_a_full_disk_or_a_size_limit_fails_and_changes_nothing(
    seeded: Path, then: str
):
    for nth in (1, 2):  # the journal's write, then the memory file's
        attempt = _attempt(seeded, "update", nth, Fault("write", nth, f"short-{then}"))
        assert attempt.armed.fired and attempt.failed is not None
        assert "nothing was changed" in attempt.failed.message
        expected = "disk is full" if then == "enospc" else "file-size limit"
        assert expected in attempt.failed.message
        assert not _assert_whole(seeded, attempt.before, attempt.head, f"mark-{nth}")


def test_short_writes_are_continued_until_every_byte_is_written(seeded: Path):
    faults = [Fault("write", n, "short") for n in range(1, 12)]
    attempt = _attempt(seeded, "update", 1, *faults)
    assert attempt.failed is None and len(attempt.armed.fired) >= 2
    with Vault.open(seeded, client="pytest") as vault:
        hit = vault.search({"query": "billing"})["selected_hits"][0]
        assert "Revision mark-1." in vault.read(hit["memory_id"])["content_md"]
    assert git(seeded, "status", "--porcelain") == ""


# --- a failed undo -------------------------------------------------------------------------


def test_a_write_that_fails_after_its_rename_is_undone_without_writing_a_byte(seeded: Path):
    # The folder's fsync after the rename fails, and the disk is full from then on: the
    # undo must not need to write (it used to rewrite the old bytes, and failed silently).
    faults = [Fault("fsync", 3, "eio"), *(Fault("write", n, "enospc") for n in range(3, 9))]
    attempt = _attempt(seeded, "update", 1, *faults)
    assert attempt.armed.fired[0].call == "fsync" and attempt.failed is not None
    message = attempt.failed.message
    assert "I/O error" in message and "nothing was changed" in message
    assert _memory_files(seeded) == attempt.before  # before any reopen: the undo finished
    assert git(seeded, "status", "--porcelain") == ""
    assert not _assert_whole(seeded, attempt.before, attempt.head, "mark-1")


def test_an_undo_that_cannot_finish_keeps_its_journal_and_the_next_open_finishes_it(
    seeded: Path,
):
    # The folder fsync after the rename fails; so does the rename back.
    faults = [Fault("fsync", 3, "eio"), Fault("replace", 2, "eio")]
    attempt = _attempt(seeded, "update", 1, *faults)
    assert len(attempt.armed.fired) == 2 and attempt.failed is not None
    assert "undoing the write failed too" in attempt.failed.message
    assert "next write or open finishes" in attempt.failed.message
    journals = list((seeded / ".vault" / "run" / "journal").glob("*.undo.json"))
    assert len(journals) == 1
    assert git(seeded, "rev-parse", "HEAD") == attempt.head
    # Reopened: undone, not committed.
    assert not _assert_whole(seeded, attempt.before, attempt.head, "mark-1")


# --- real limits ---------------------------------------------------------------------------


def test_a_real_file_size_limit_fails_the_update_and_keeps_the_memory(seeded: Path):
    before, head = _memory_files(seeded), git(seeded, "rev-parse", "HEAD")
    big = max(len(b) for b in before.values()) + 4000

    def update_under_limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (big - 2000, big - 2000))
        with Vault.open(seeded, client="pytest") as vault:
            hit = vault.search({"query": "billing"})["selected_hits"][0]
            current = vault.read(hit["memory_id"])
            try:
                vault.remember(
                    {
                        "mode": "update",
                        "memory_id": current["memory_id"],
                        "expected_version_id": current["version_id"],
                        "content_md": f"# {current['title']}\n\n{'mark-1 ' * (big // 7)}\n",
                        "semantic_delta": create_args()["semantic_delta"],
                    }
                )
            except VaultError as problem:
                os._exit(3 if "file-size limit" in problem.message else 4)

    assert _in_child(update_under_limit) == 3
    assert not _assert_whole(seeded, before, head, "mark-1")


@contextlib.contextmanager
def _small_disk(where: Path, size: str) -> Iterator[Path]:
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True
    )
    if os.geteuid() != 0 or mounted.returncode != 0:
        pytest.skip("needs root to mount a small tmpfs")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)


def _fill(filler: Path, leaving: int) -> None:
    """Fill the disk up to `leaving` bytes free."""
    with filler.open("wb") as out:
        stat = os.statvfs(filler)
        with contextlib.suppress(OSError):
            out.write(b"x" * max(stat.f_bavail * stat.f_frsize - leaving, 0))


def test_an_update_on_a_full_disk_says_so_and_keeps_the_acknowledged_memory(tmp_path: Path):
    with _small_disk(tmp_path / "disk", "3m") as disk:
        root = disk / "vault"
        Store.init(root).close()
        with Vault.open(root, client="pytest") as vault:
            vault.remember(create_args(body="The acknowledged memory."))
        before, head = _memory_files(root), git(root, "rev-parse", "HEAD")
        refusals = []
        for slack in range(0, 80_000, 4096):  # from a full disk to room for the write
            filler = disk / "filler"
            with Vault.open(root, client="pytest") as vault:
                # (read before the disk fills: a search records itself in the ledger)
                hit = vault.search({"query": "billing"})["selected_hits"][0]
                current = vault.read(hit["memory_id"])
                _fill(filler, leaving=slack)
                try:
                    vault.remember(
                        {
                            "mode": "update",
                            "memory_id": current["memory_id"],
                            "expected_version_id": current["version_id"],
                            "content_md": f"# {current['title']}\n\n{'mark-1 ' * 3000}\n",
                            "semantic_delta": create_args()["semantic_delta"],
                        }
                    )
                except VaultError as problem:
                    assert git(root, "rev-parse", "HEAD") == head, "failed, yet committed"
                    refusals.append(problem.message)
            filler.unlink()
            Store.open(root).close()  # what the next process does first: repair
            assert _memory_files(root) == _head_files(root), slack
            if git(root, "rev-parse", "HEAD") != head:
                break
            assert _memory_files(root) == before, slack
        assert refusals, "the disk never ran out"
        for message in refusals:
            assert message.startswith("the disk is full") and "nothing was changed" in message
        # The files and git (the search index is rebuilt from them, by another part).
        assert consistency.check_leftovers(root) == []
        assert consistency.check_git(root) == ([], [])
        assert "mark-1" in next(iter(_head_files(root).values())).decode()


# --- a person's save in the middle of a write (finding: version check -> rename window) ----


def _save_by_rename(path: Path, data: bytes) -> Callable[[], None]:
    def save() -> None:
        tmp = path.with_name(path.name + ".editor~")
        tmp.write_bytes(data)
        os.rename(tmp, path)

    return save


SAVED = b"---\nid: 01JDXK3M6Q8W1J4T0P9R7V2B5C\n---\n# Ana owns the billing service\n\nMine.\n"


@pytest.mark.parametrize("how", ["rename", "in place"])
def test_a_persons_save_just_before_an_updates_rename_is_kept_and_the_update_refused(
    seeded: Path, how: str
):
    with Vault.open(seeded, client="pytest") as vault:
        hit = vault.search({"query": "billing"})["selected_hits"][0]
        current = vault.read(hit["memory_id"])
        target = seeded / current["path"]
        save = (
            _save_by_rename(target, SAVED) if how == "rename" else lambda: target.write_bytes(SAVED)
        )
        head = git(seeded, "rev-parse", "HEAD")
        # The person saves after the version check, once the new bytes are on disk (the
        # temp file's fsync: the last step before the rename).
        with (
            Faults(Fault("fsync", 2, "hook", save)) as armed,
            pytest.raises(VersionConflict) as caught,
        ):
            vault.remember(
                {
                    "mode": "update",
                    "memory_id": current["memory_id"],
                    "expected_version_id": current["version_id"],
                    "content_md": f"# {current['title']}\n\nThe tool's update.\n",
                    "semantic_delta": create_args()["semantic_delta"],
                }
            )
        assert armed.fired
    assert "saved by someone else" in caught.value.message
    assert "nothing was changed" in caught.value.message
    assert target.read_bytes() == SAVED
    assert git(seeded, "rev-parse", "HEAD") == head
    assert consistency.check_leftovers(seeded) == []


def test_a_persons_save_just_before_a_delete_is_kept_and_the_delete_refused(seeded: Path):
    with Vault.open(seeded, client="pytest") as vault:
        hit = vault.search({"query": "billing"})["selected_hits"][0]
        current = vault.read(hit["memory_id"])
        target = seeded / current["path"]
        # A delete writes only its journal: the person saves after that journal's fsync.
        armed = Faults(Fault("fsync", 1, "hook", _save_by_rename(target, SAVED)))
        with armed, pytest.raises(VersionConflict):
            vault.remember(
                {
                    "mode": "delete",
                    "memory_id": current["memory_id"],
                    "expected_version_id": current["version_id"],
                }
            )
        assert armed.fired
    assert target.read_bytes() == SAVED
    assert current["path"] in git(seeded, "ls-tree", "-r", "--name-only", "HEAD")


def test_a_file_made_at_a_new_memorys_path_meanwhile_is_never_replaced(vault_path: Path):
    theirs = b"# Their own note\n\nTyped at the same path.\n"
    made: list[Path] = []

    def make() -> None:  # the person saves a note at the path the tool's temp file is for
        (tmp,) = vault_path.rglob(".raced-create.md.vault-tmp-*")
        made.append(tmp.with_name("raced-create.md"))
        made[0].write_bytes(theirs)

    armed = Faults(Fault("fsync", 2, "hook", make))
    with (
        Vault.open(vault_path, client="pytest") as vault,
        armed,
        pytest.raises(VersionConflict) as caught,
    ):
        vault.remember(create_args("Raced create"))
    assert "made by someone else" in caught.value.message
    assert made[0].read_bytes() == theirs
    assert consistency.check_leftovers(vault_path) == []


def test_a_plan_whose_file_is_saved_meanwhile_is_refused_whole(seeded: Path):
    with Vault.open(seeded, client="pytest") as vault:
        hit = vault.search({"query": "billing"})["selected_hits"][0]
        target = seeded / hit["path"]
        head = git(seeded, "rev-parse", "HEAD")
        armed = Faults(Fault("fsync", 2, "hook", _save_by_rename(target, SAVED)))
        with armed, pytest.raises(VersionConflict):
            vault.set_status(hit["memory_id"], "dismissed")
    assert target.read_bytes() == SAVED
    assert git(seeded, "rev-parse", "HEAD") == head


def test_a_persons_save_just_before_a_restore_is_kept_and_the_restore_refused(seeded: Path):
    with Vault.open(seeded, client="pytest") as vault:
        first = vault.read(vault.search({"query": "billing"})["selected_hits"][0]["memory_id"])
        _, (update,), _ = _update(vault, 1)
        vault.remember(update)
        target = seeded / first["path"]
        armed = Faults(Fault("fsync", 2, "hook", _save_by_rename(target, SAVED)))
        with armed, pytest.raises(VersionConflict):
            vault.restore(first["memory_id"], first["version_id"])
        assert armed.fired
    assert target.read_bytes() == SAVED


# --- the last check: no secret in any field of the rendered file ---------------------------

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def test_a_rendered_file_holding_a_secret_in_any_field_is_never_written(seeded: Path):
    head = git(seeded, "rev-parse", "HEAD")
    with Vault.open(seeded, client="pytest") as vault:
        hit = vault.search({"query": "billing"})["selected_hits"][0]
        memory = parse((seeded / hit["path"]).read_text(), hit["path"])
        for field, changed in [
            ("tags", memory.with_changes(tags=("billing", SECRET))),
            ("key", memory.with_changes(key=SECRET)),
        ]:
            with pytest.raises(InvalidInput) as caught:
                vault.apply_plan([Planned(hit["path"], changed)], "Retag")
            assert caught.value.field == field, caught.value.message
            assert f"the {field!r} field holds a secret (" in caught.value.message
            assert "nothing was written" in caught.value.message
    assert git(seeded, "rev-parse", "HEAD") == head
    assert git(seeded, "status", "--porcelain", "--untracked-files=all") == ""
    assert SECRET not in git(seeded, "log", "-p", "--all")


def test_a_file_written_back_to_heads_bytes_before_the_commit_is_a_conflict(vault_path: Path):
    # `git stash` (a reset to HEAD) rewrites the file after the update renamed it into
    # place and before git read it: nothing is left to commit, and the agent must re-read.
    with Vault.open(vault_path) as vault:
        made = vault.remember(create_args())
        file = vault_path / made["path"]
        old = file.read_bytes()
        head = git(vault_path, "rev-parse", "HEAD")
        update = {
            "mode": "update",
            "memory_id": made["memory_id"],
            "expected_version_id": made["version_id"],
            "content_md": "# Ana owns the billing service\n\nSince March.\n",
            "semantic_delta": create_args()["semantic_delta"],
        }
        stash = Fault("fsync", 3, "hook", hook=lambda: file.write_bytes(old))  # the folder's
        with Faults(stash), pytest.raises(VersionConflict, match="changed on disk"):
            vault.remember(update)
        assert file.read_bytes() == old
        assert git(vault_path, "rev-parse", "HEAD") == head
        assert git(vault_path, "status", "--porcelain") == ""
