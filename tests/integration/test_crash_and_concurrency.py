"""Crashes mid-write, crash repair, several writers at once, and git's own index lock.

Writers run as real subprocesses and are killed with SIGKILL; repair is what the next
Vault.open does. Nothing is mocked.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from functools import partial
from pathlib import Path

import pytest

from tests.harness import consistency
from tests.helpers import create_args, eventually, git, snapshot
from vault_tool.core.memory import memory_from_delta, parse, render
from vault_tool.engine.vault import Vault
from vault_tool.errors import UnparseableFile, VaultBusy
from vault_tool.search.index import Index
from vault_tool.storage.git import blob_sha, commit_message
from vault_tool.storage.store import Store

WRITER = r"""
import sys
from vault_tool.engine.vault import Vault

path, tag = sys.argv[1], sys.argv[2]


def call(title, body):
    return {
        "content_md": f"# {title}\n\n{body}\n",
        "semantic_delta": {
            "memory_type": "decision",
            "title": title,
            "entities": [
                {"n": "Ana", "kind": "person", "is": "backend engineer"},
                {"n": "billing", "kind": "service", "is": "issues invoices"},
            ],
            "facts": [{"subject": "Ana", "predicate": "owns", "object": "billing"}],
        },
    }


vault = Vault.open(path, client="crash-test")
print("ready", flush=True)
last = None
n = 0
while True:
    n += 1
    if n % 4 == 0:
        batch = [call(f"{tag} batch {n} item {k}", f"Item {k}.") for k in range(3)]
        done = vault.remember({"mode": "create", "items": batch})
        for r in done["results"]:
            print(r["memory_id"], r["version_id"], flush=True)
        continue
    if n % 4 == 2 and last is not None:
        result = vault.remember(
            {
                "mode": "update",
                "memory_id": last["memory_id"],
                "expected_version_id": last["version_id"],
                **call(f"{tag} memory {n - 1}", f"Updated in step {n}."),
            }
        )
    else:
        result = vault.remember({"mode": "create", **call(f"{tag} memory {n}", f"Step {n}.")})
    last = result
    print(result["memory_id"], result["version_id"], flush=True)
"""

# Each process opens the vault, says "ready", and waits for the go file, so that both write
# at the same moment.
CREATOR = r"""
import os, sys
from tests.helpers import eventually
from vault_tool.engine.vault import Vault

path, tag, go = sys.argv[1], sys.argv[2], sys.argv[3]
with Vault.open(path, client=f"writer-{tag}") as vault:
    print("ready", flush=True)
    eventually(lambda: os.path.exists(go), timeout=60, interval=0.005)
    for i in range(10):
        title = f"Writer {tag} memory {i}"
        result = vault.remember(
            {
                "mode": "create",
                "content_md": f"# {title}\n\nWritten by {tag}.\n",
                "semantic_delta": {
                    "memory_type": "decision",
                    "title": title,
                    "entities": [{"n": "Ana", "kind": "person", "is": "backend engineer"}],
                    "facts": [{"subject": "Ana", "predicate": "wrote", "object": "Ana"}],
                },
            }
        )
        assert result["status"] == "created", result
        print(result["memory_id"], result["version_id"], flush=True)
"""


# --- helpers -------------------------------------------------------------------------------


def _wait_for_git_to_finish(root: Path, orphans: list[int] | None = None) -> None:
    assert consistency.wait_for_git(root.resolve(), 10.0, orphans=orphans or ()), (
        "a git process (or a child of the killed writer) kept running in the vault"
    )


def _open_after_crash(root: Path) -> Vault:
    return consistency.open_when_free(root, client="pytest", timeout=15)


def _assert_vault_is_whole(root: Path, acknowledged: dict[str, str]) -> None:
    """Every acknowledged write is there, every file parses, git is clean and sound."""
    vault = _open_after_crash(root)
    try:
        for memory_id, version in acknowledged.items():
            assert git(root, "cat-file", "-t", version) == "commit"
            read = vault.read(memory_id)
            assert git(root, "cat-file", "-t", read["version_id"]) == "commit"
            assert read["version_id"] == git(root, "log", "-1", "--format=%H", "--", read["path"])
            assert git(root, "merge-base", "--is-ancestor", version, "HEAD") == ""
        for relpath, _ in vault._store.iter_memory_paths():
            try:
                parse((root / relpath).read_text(encoding="utf-8"), relpath)
            except UnparseableFile as problem:
                raise AssertionError(f"{relpath} does not parse: {problem}") from None
    finally:
        vault.close()
    leftovers = [p for p in root.rglob(".*.vault-tmp-*") if ".git" not in p.relative_to(root).parts]
    assert leftovers == []
    assert list((root / ".vault" / "run" / "journal").glob("*.json")) == []
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    fsck = subprocess.run(["git", "fsck", "--no-progress"], cwd=root, capture_output=True)
    assert fsck.returncode == 0, fsck.stderr


def _read_acks(stream, into: dict[str, str], ready: threading.Event) -> None:
    for line in stream:
        if line == "ready\n":
            ready.set()
            continue
        parts = line.split()
        if line.endswith("\n") and len(parts) == 2 and len(parts[1]) == 40:
            into[parts[0]] = parts[1]


# --- crash mid-write -----------------------------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_writer_killed_at_random_moments_loses_no_acknowledged_write(vault_path: Path, seed: int):
    rng = random.Random(seed)
    acknowledged: dict[str, str] = {}
    for cycle in range(5):
        acks: dict[str, str] = {}
        ready = threading.Event()
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(vault_path), f"s{seed}c{cycle}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=os.environ.copy(),
        )
        reader = threading.Thread(target=_read_acks, args=(writer.stdout, acks, ready))
        reader.start()
        try:
            assert ready.wait(20), "the writer did not start"
            if cycle == 0:  # make sure the run checks at least one acknowledged write
                eventually(partial(len, acks), timeout=20, what="the writer's first ack")
            time.sleep(rng.uniform(0.05, 0.6))
        finally:
            orphans = consistency.descendants(writer.pid)  # (a child forked, not yet git)
            os.kill(writer.pid, signal.SIGKILL)
            writer.wait()
            reader.join(10)
        _wait_for_git_to_finish(vault_path, orphans)
        acknowledged.update(acks)
        _assert_vault_is_whole(vault_path, acknowledged)
    assert acknowledged, "the writer acknowledged nothing in five runs"


# --- repair from a journal, deterministic --------------------------------------------------


def _journal(root: Path, message: str, entries: list[dict]) -> Path:
    folder = root / ".vault" / "run" / "journal"
    folder.mkdir(parents=True, exist_ok=True)
    journal = folder / f"{time.time_ns()}-99999.json"
    journal.write_text(json.dumps({"message": message, "entries": entries}))
    return journal


def _memory_bytes(title: str, body: str = "Written before the crash.") -> tuple[str, bytes]:
    args = create_args(title=title, body=body)
    memory = memory_from_delta(
        args["semantic_delta"],
        args["content_md"],
        id="01JDXK3M6Q8W1J4T0P9R7V2B5C",
        source="crashed",
        created="2026-11-29T19:46:45Z",
        updated="2026-11-29T19:46:45Z",
    )
    return memory.id or "", render(memory).encode()


def test_open_commits_a_write_that_was_renamed_but_not_committed(vault_path: Path):
    memory_id, data = _memory_bytes("Interrupted decision")
    relpath = "decision/2026-11/interrupted-decision.md"
    (vault_path / "decision" / "2026-11").mkdir(parents=True)
    (vault_path / relpath).write_bytes(data)
    message = commit_message("Create decision: Interrupted decision", [memory_id], "crashed")
    journal = _journal(
        vault_path,
        message,
        [
            {
                "path": relpath,
                "tmp": "decision/2026-11/.interrupted-decision.md.vault-tmp-0a1b2c3d",
                "blob": blob_sha(data),
                "title": "Interrupted decision",
            }
        ],
    )
    before = int(git(vault_path, "rev-list", "--count", "HEAD"))

    Store.open(vault_path).close()

    assert int(git(vault_path, "rev-list", "--count", "HEAD")) == before + 1
    assert git(vault_path, "log", "-1", "--format=%s") == (
        "Repair: commit interrupted write of Interrupted decision"
    )
    lines = git(vault_path, "log", "-1", "--format=%B").splitlines()
    assert f"Memory-Id: {memory_id}" in lines
    assert "Client: crashed" in lines
    assert git(vault_path, "show", "--name-only", "--format=", "HEAD") == relpath
    assert (vault_path / relpath).read_bytes() == data
    assert git(vault_path, "status", "--porcelain") == ""
    assert not journal.exists()
    with Vault.open(vault_path) as vault:
        assert vault.read(memory_id)["version_id"] == git(vault_path, "rev-parse", "HEAD")


def test_open_brings_gits_index_up_to_a_write_killed_after_its_commit(vault_path: Path):
    # The commit landed (HEAD has the file) but the writer was killed inside
    # `git update-index`: git's index is behind and its lock is left.
    memory_id, data = _memory_bytes("Committed before the crash")
    relpath = "decision/2026-11/committed-before-the-crash.md"
    (vault_path / "decision" / "2026-11").mkdir(parents=True)
    (vault_path / relpath).write_bytes(data)
    blob = git(vault_path, "hash-object", "-w", relpath)
    git(vault_path, "update-index", "--add", "--cacheinfo", f"100644,{blob},{relpath}")
    tree = git(vault_path, "write-tree")
    git(vault_path, "rm", "-q", "--cached", relpath)
    message = commit_message("Create decision: Committed before the crash", [memory_id], "x")
    commit = git(vault_path, "commit-tree", tree, "-p", "HEAD", "-m", message)
    git(vault_path, "update-ref", "HEAD", commit)
    pending = vault_path / ".vault" / "run" / "index-pending"
    pending.mkdir(parents=True)
    (pending / "1-99999.json").write_text(json.dumps([relpath]))
    (vault_path / ".git" / "index.lock").write_bytes(b"")
    assert git(vault_path, "status", "--porcelain") != ""

    Store.open(vault_path).close()

    assert git(vault_path, "rev-parse", "HEAD") == commit
    assert git(vault_path, "status", "--porcelain") == ""
    assert not (vault_path / ".git" / "index.lock").exists()
    assert list(pending.iterdir()) == []


def test_open_commits_an_interrupted_delete(vault_path: Path):
    with Vault.open(vault_path, client="pytest") as vault:
        created = vault.remember(create_args())
    (vault_path / created["path"]).unlink()
    _journal(
        vault_path,
        commit_message("Delete decision: Ana owns the billing service", ["x"], "crashed"),
        [
            {
                "path": created["path"],
                "tmp": created["path"] + ".unused",
                "blob": None,
                "title": "Ana owns the billing service",
            }
        ],
    )
    Store.open(vault_path).close()
    assert git(vault_path, "log", "-1", "--format=%s") == (
        "Repair: commit interrupted write of Ana owns the billing service"
    )
    assert git(vault_path, "status", "--porcelain") == ""
    assert created["path"] not in git(vault_path, "ls-tree", "-r", "--name-only", "HEAD")


def test_open_removes_a_temp_file_that_was_never_renamed_and_commits_nothing(vault_path: Path):
    _, data = _memory_bytes("Never renamed")
    folder = vault_path / "decision" / "2026-11"
    folder.mkdir(parents=True)
    tmp = folder / ".never-renamed.md.vault-tmp-0a1b2c3d"
    tmp.write_bytes(data)
    journal = _journal(
        vault_path,
        commit_message("Create decision: Never renamed", ["x"], "crashed"),
        [
            {
                "path": "decision/2026-11/never-renamed.md",
                "tmp": "decision/2026-11/.never-renamed.md.vault-tmp-0a1b2c3d",
                "blob": blob_sha(data),
                "title": "Never renamed",
            }
        ],
    )
    before = snapshot(vault_path)
    head = git(vault_path, "rev-parse", "HEAD")

    Store.open(vault_path).close()

    assert git(vault_path, "rev-parse", "HEAD") == head
    assert not tmp.exists()
    assert not (folder / "never-renamed.md").exists()
    assert not journal.exists()
    after = snapshot(vault_path)
    assert after[0] == before[0]
    assert after[2] == {
        k: v for k, v in before[2].items() if k != tmp.relative_to(vault_path).as_posix()
    }
    assert git(vault_path, "status", "--porcelain") == ""


def test_open_leaves_alone_a_file_a_person_edited_after_the_crash(vault_path: Path):
    _, data = _memory_bytes("Edited after crash")
    relpath = "decision/2026-11/edited-after-crash.md"
    (vault_path / "decision" / "2026-11").mkdir(parents=True)
    edited = data + b"\nA line the person added.\n"
    (vault_path / relpath).write_bytes(edited)
    journal = _journal(
        vault_path,
        commit_message("Create decision: Edited after crash", ["x"], "crashed"),
        [
            {
                "path": relpath,
                "tmp": "decision/2026-11/.edited-after-crash.md.vault-tmp-0a1b2c3d",
                "blob": blob_sha(data),
                "title": "Edited after crash",
            }
        ],
    )
    head = git(vault_path, "rev-parse", "HEAD")

    Store.open(vault_path).close()

    assert git(vault_path, "rev-parse", "HEAD") == head
    assert (vault_path / relpath).read_bytes() == edited
    assert not journal.exists()
    assert git(vault_path, "status", "--porcelain", "--untracked-files=all") == f"?? {relpath}"


def test_open_discards_a_torn_journal(vault_path: Path):
    folder = vault_path / ".vault" / "run" / "journal"
    folder.mkdir(parents=True)
    torn = folder / "1-1.json"
    torn.write_text('{"message": "Create decision: x", "entr')
    before = snapshot(vault_path)
    Store.open(vault_path).close()
    assert not torn.exists()
    assert snapshot(vault_path) == before


# --- several writers -----------------------------------------------------------------------


def _start_together(script: str, vault_path: Path, tags: list[str], go: Path) -> list:
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(vault_path), tag, str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=os.environ.copy(),
        )
        for tag in tags
    ]
    for process in processes:
        line = process.stdout.readline()
        assert line == "ready\n", process.communicate(timeout=30)[1]
    go.write_text("go")
    return [(p, *p.communicate(timeout=60)) for p in processes]


def test_two_processes_writing_at_once_both_land_one_commit_each(tmp_path: Path, vault_path: Path):
    Vault.open(vault_path).close()  # the index exists, as after `vault-tool init`
    before = int(git(vault_path, "rev-list", "--count", "HEAD"))

    finished = _start_together(CREATOR, vault_path, ["A", "B"], tmp_path / "go")

    for process, _, stderr in finished:
        assert process.returncode == 0, stderr
        assert stderr == ""
    acks = dict(line.split() for _, out, _ in finished for line in out.splitlines())
    assert len(acks) == 20
    assert int(git(vault_path, "rev-list", "--count", "HEAD")) == before + 20
    for sha in git(vault_path, "rev-list", "HEAD~20..HEAD").splitlines():
        assert len(git(vault_path, "show", "--name-only", "--format=", sha).splitlines()) == 1
        assert git(vault_path, "log", "-1", "--format=%s", sha).startswith(
            "Create decision: Writer "
        )
    assert git(vault_path, "status", "--porcelain") == ""
    with Vault.open(vault_path) as vault:
        for memory_id, version in acks.items():
            read = vault.read(memory_id)
            assert read["version_id"] == version
            assert version == git(vault_path, "log", "-1", "--format=%H", "--", read["path"])


def test_indexes_opened_at_once_on_a_vault_without_one_all_work(vault_path: Path):
    """The index is a cache a person may delete; several servers may then start together.

    Each Index object stands for one process (they share no lock in memory); threads
    released by a barrier make the openings overlap.
    """
    with Vault.open(vault_path, client="pytest") as vault:
        vault.remember(create_args())
    failures: list[str] = []
    for _ in range(10):
        shutil.rmtree(vault_path / ".vault" / "index")
        barrier = threading.Barrier(4)

        def open_index(barrier: threading.Barrier) -> None:
            barrier.wait()
            try:
                index = Index(vault_path).open()
                try:
                    assert index.count() == 0
                finally:
                    index.close()
            except Exception as problem:  # collected and reported below
                failures.append(repr(problem))

        openers = [threading.Thread(target=open_index, args=(barrier,)) for _ in range(4)]
        for opener in openers:
            opener.start()
        for opener in openers:
            opener.join(30)
    assert failures == []
    with Vault.open(vault_path) as vault:
        assert vault.count() == 1


# Stands for a server that keeps indexing: it rewrites one memory's (correct) document as
# fast as it can; each commit writes a new index generation and removes the old one.
INDEX_COMMITTER = r"""
import sys, time
from pathlib import Path
from vault_tool.search.documents import document_for
from vault_tool.search.index import Index
from vault_tool.core.memory import parse
from vault_tool.storage.git import blob_sha

root, seconds, relpath, version = Path(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4]
data = (root / relpath).read_bytes()
memory = parse(data.decode("utf-8"), relpath)
stat = (root / relpath).stat()
doc = document_for(
    memory, relpath, version_id=version, blob=blob_sha(data),
    mtime_ns=stat.st_mtime_ns, size=stat.st_size,
)
index = Index(root).open()
print("ready", flush=True)
deadline = time.monotonic() + seconds
while time.monotonic() < deadline:
    with index.writer() as writer:
        writer.update_document(**doc)
index.close()
"""


def test_opening_the_index_while_another_process_commits_to_it_never_fails(vault_path: Path):
    """A CLI command opens the index while a server process keeps committing to it."""
    with Vault.open(vault_path, client="pytest") as vault:
        created = vault.remember(create_args())
    committer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            INDEX_COMMITTER,
            str(vault_path),
            "3.2",
            created["path"],
            created["version_id"],
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    try:
        assert committer.stdout is not None
        assert committer.stdout.readline() == "ready\n"
        failures: list[str] = []
        opened: list[int] = []
        deadline = time.monotonic() + 3

        def open_repeatedly() -> None:
            while time.monotonic() < deadline:
                try:
                    Index(vault_path).open().close()
                    opened.append(1)
                except Exception as problem:  # collected and reported below
                    failures.append(repr(problem))

        openers = [threading.Thread(target=open_repeatedly) for _ in range(3)]
        for opener in openers:
            opener.start()
        for opener in openers:
            opener.join(30)
    finally:
        _, stderr = committer.communicate(timeout=30)
    assert committer.returncode == 0, stderr
    assert len(opened) > 50
    assert failures == []


def test_catch_up_racing_another_writer_records_the_committed_version(
    vault_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Another process renames a file in, then commits it while this one is catching up."""
    _, data = _memory_bytes("Written by the other process")
    relpath = "decision/2026-11/written-by-the-other-process.md"
    reader = Vault.open(vault_path, client="reader")
    other = Store.open(vault_path)
    asked = threading.Event()
    write_lock = reader._store.write_lock

    def asking(*args, **options):  # type: ignore[no-untyped-def]
        asked.set()
        return write_lock(*args, **options)

    monkeypatch.setattr(reader._store, "write_lock", asking)
    try:
        with other.write_lock():
            (vault_path / "decision" / "2026-11").mkdir(parents=True)
            (vault_path / relpath).write_bytes(data)
            catching_up = threading.Thread(target=reader.catch_up)
            catching_up.start()
            # The reader has listed the file and now waits for the lock.
            eventually(asked.is_set, timeout=20, what="the reader to ask for the write lock")
            git(vault_path, "add", "--", relpath)
            git(vault_path, "commit", "--quiet", "-m", "Create decision: other", "--", relpath)
            committed = git(vault_path, "rev-parse", "HEAD")
        catching_up.join(20)
        assert not catching_up.is_alive()
        memory_id = parse(data.decode(), relpath).id or ""
        assert reader.read(memory_id)["version_id"] == committed
    finally:
        other.close()
        reader.close()


# --- git's own lock ------------------------------------------------------------------------


def test_write_waits_for_the_users_git_index_lock(vault: Vault, vault_path: Path):
    lock = vault_path / ".git" / "index.lock"
    lock.write_text("")
    before = int(git(vault_path, "rev-list", "--count", "HEAD"))
    outcome: dict[str, object] = {}

    def write() -> None:
        started = time.monotonic()
        try:
            outcome["result"] = vault.remember(create_args())
        except Exception as problem:  # reported by the assertions below
            outcome["error"] = problem
        outcome["seconds"] = time.monotonic() - started

    writer = threading.Thread(target=write)
    writer.start()
    writer.join(0.5)
    assert writer.is_alive(), "the write did not wait for git's lock"
    lock.unlink()
    writer.join(20)

    assert "error" not in outcome, outcome.get("error")
    result = outcome["result"]
    assert isinstance(result, dict) and result["status"] == "created"
    assert float(outcome["seconds"]) >= 0.4  # type: ignore[arg-type]
    assert int(git(vault_path, "rev-list", "--count", "HEAD")) == before + 1
    assert result["version_id"] == git(vault_path, "rev-parse", "HEAD")
    assert git(vault_path, "status", "--porcelain") == ""


def test_git_index_lock_held_past_the_timeout_fails_busy_and_changes_nothing(vault_path: Path):
    config = vault_path / ".vault" / "config.toml"
    text = config.read_text()
    assert "lock_timeout_seconds = 30" in text
    config.write_text(text.replace("lock_timeout_seconds = 30", "lock_timeout_seconds = 1"))
    git(vault_path, "commit", "--quiet", "-m", "Shorter lock timeout", "--", ".vault/config.toml")

    with Vault.open(vault_path, client="pytest") as vault:
        assert vault.settings.lock_timeout_seconds == 1
        before = snapshot(vault_path)
        lock = vault_path / ".git" / "index.lock"
        lock.write_text("")
        started = time.monotonic()
        with pytest.raises(VaultBusy) as caught:
            vault.remember(create_args())
        elapsed = time.monotonic() - started

        assert lock.exists(), "git's lock belongs to the user and must never be removed"
        assert "index.lock" in caught.value.message
        assert caught.value.hint
        assert elapsed >= 0.9  # it waited out the lock timeout before it gave up
        assert snapshot(vault_path) == before
        assert list((vault_path / ".vault" / "run" / "journal").glob("*.json")) == []
        lock.unlink()
        assert git(vault_path, "status", "--porcelain") == ""
        assert git(vault_path, "diff", "--cached", "--name-only") == ""
        assert vault.count() == 0
        assert vault.remember(create_args())["status"] == "created"
