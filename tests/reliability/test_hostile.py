"""Hostile files and paths: each gets a clear diagnostic, and nothing outside the vault is
read or written.

Every file here goes in by hand, as a person (or an attacker with write access to the
folder) would put it there, and is taken in the ways the tool takes files in: catch-up at
open, the watcher's sync, a real watchdog observer, and `verify`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import unicodedata
from pathlib import Path

import pytest

from tests.helpers import create_args, eventually, git, snapshot
from vault_tool.checks import verify as health
from vault_tool.engine.vault import Vault
from vault_tool.errors import InvalidInput, NotFound, VaultError
from vault_tool.storage import steady
from vault_tool.watcher import Watcher

SENTINEL_WORD = "zqxsentinelword"


def _take_in(vault_path: Path, *relpaths: str) -> Vault:
    """Open (catch-up), then what the watcher does with the changed paths."""
    vault = Vault.open(vault_path)
    vault.take_in_offline_changes()
    if relpaths:
        vault.sync_paths(list(relpaths))
    return vault


def _committed(vault_path: Path, relpath: str) -> bool:
    return git(vault_path, "log", "--all", "--format=%H", "--", relpath) != ""


# --- files that cannot be memories ---------------------------------------------------------

BILLION_LAUGHS = "\n".join(
    ["---", 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [
        f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]"
        for i in range(8)
    ]
    + ["title: Laughs", "---", "# Laughs", ""]
)
DEEP_BLOCK = (
    "---\n" + "".join("  " * i + f"k{i}:\n" for i in range(40)) + "  " * 40 + "v: 1\n---\n# Deep\n"
)
HOSTILE = {
    "binary": (bytes(range(256)) * 8 + b"\x00", "not UTF-8"),
    "invalid-utf8": (b"# Title\n\nbad \xc3\x28 bytes \xff\n", "not UTF-8"),
    "huge": (b"# Huge\n\n" + b"word " * 300_000, "too large"),
    "billion-laughs": (BILLION_LAUGHS.encode(), "anchors and aliases"),
    "deep-flow": (b"---\nx: " + b"[" * 100_000 + b"]" * 100_000 + b"\n---\n# Deep\n", "nesting"),
    "deep-block": (DEEP_BLOCK.encode(), "nested too deeply"),
    "huge-scalar": (b"---\nkey: " + b"t" * 900_000 + b"\n---\n# Scalar\n", "too long"),
    "python-tag": (
        b"---\ntitle: !!python/object/apply:os.system ['touch PWNED']\n---\n# Tag\n",
        "not valid YAML",
    ),
    "unclosed": (b"---\ntitle: Never closed\n# Body\n", "not closed"),
    "not-a-mapping": (b"---\n- a\n- list\n---\n# List\n", "not a mapping"),
    "empty": (b"", "empty"),
    "blank": (b"\n  \n\t\n", "empty"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_file_that_cannot_be_a_memory_is_reported_and_never_indexed_or_committed(
    vault_path: Path, name: str
):
    data, reason = HOSTILE[name]
    relpath = f"notes/{name}.md"
    (vault_path / "notes").mkdir()
    (vault_path / relpath).write_bytes(data)

    with _take_in(vault_path, relpath) as vault:
        problem = vault.problems()[relpath]
        assert reason in problem["reason"], problem
        assert problem["hint"]
        assert vault.at_path(relpath) is None
    assert not _committed(vault_path, relpath)
    assert not (vault_path / "PWNED").exists() and not Path("PWNED").exists()
    with health.Checkup(vault_path) as checkup:
        issues = [i for i in health.verify(checkup).issues if i.path == relpath]
    assert {i.kind for i in issues} >= {"unparseable"}, issues
    # The file itself is left exactly as the person wrote it.
    assert (vault_path / relpath).read_bytes() == data


# --- symlinks and what lies outside the vault ---------------------------------------------


def _outside(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A sentinel file and a folder outside the vault; a control file proves atime works."""
    outside = tmp_path / "outside"
    (outside / "folder").mkdir(parents=True)
    sentinel = outside / "secret.md"
    sentinel.write_text(f"# Sentinel\n\n{SENTINEL_WORD} must never be read.\n")
    (outside / "folder" / "inner.md").write_text(f"# Inner\n\n{SENTINEL_WORD} inner.\n")
    control = outside / "control.md"
    control.write_text("# Control\n")
    old = time.time() - 3 * 86400
    for path in (sentinel, outside / "folder" / "inner.md", control):
        os.utime(path, (old, old))
    return sentinel, outside / "folder" / "inner.md", control


def _atime_is_tracked(control: Path) -> bool:
    before = control.stat().st_atime
    control.read_bytes()
    return control.stat().st_atime != before


def test_symlinks_out_of_the_vault_and_in_loops_are_reported_and_never_followed(
    tmp_path: Path, vault_path: Path
):
    sentinel, inner, control = _outside(tmp_path)
    stats = {p: p.stat() for p in (sentinel, inner)}
    listing = sorted(p.name for p in sentinel.parent.rglob("*"))
    with Vault.open(vault_path) as vault:
        created = vault.remember(create_args("A memory that a link replaces"))
    notes = vault_path / "notes"
    notes.mkdir()
    links = {
        "notes/to-secret.md": sentinel,
        "notes/loop-a.md": notes / "loop-b.md",
        "notes/loop-b.md": notes / "loop-a.md",
        "notes/dangling.md": tmp_path / "nowhere.md",
    }
    with Vault.open(vault_path) as vault:
        watcher = Watcher(vault).start()
        try:
            assert watcher.ready.wait(15)
            for relpath, target in links.items():
                os.symlink(target, vault_path / relpath)
            os.symlink(sentinel.parent / "folder", notes / "folder-out")
            os.symlink(notes, notes / "self-loop")
            # A committed memory replaced by a link to the sentinel.
            (vault_path / created["path"]).unlink()
            os.symlink(sentinel, vault_path / created["path"])
            # The watcher takes the links in: each is reported, none is followed.
            eventually(lambda: {*links, created["path"]} <= set(vault.problems()), timeout=15)
        finally:
            watcher.stop()
        vault.take_in_offline_changes()
        vault.sync_paths([*links, created["path"], "notes/folder-out/inner.md"])
        problems = vault.problems()
        for relpath in [*links, created["path"]]:
            assert "symlink" in problems[relpath]["reason"], (relpath, problems)
        assert "leads out of the vault" in problems["notes/folder-out/inner.md"]["reason"]
        # Nothing from outside was indexed or returned.
        assert vault.search({"query": SENTINEL_WORD})["selected_hits"] == []
        with vault._index.searcher() as searcher:
            stored = [str(f) for f in searcher.all_stored_fields()]
        assert not any(SENTINEL_WORD in s for s in stored)
        # Writing through the link is refused (the memory is no longer a regular file, so
        # it is out of the index too): the file outside is never written.
        for mode in ("update", "delete"):
            with pytest.raises((InvalidInput, NotFound)):
                vault.remember(
                    {
                        "mode": mode,
                        "memory_id": created["memory_id"],
                        "expected_version_id": created["version_id"],
                        **(create_args("Overwrite the link target") if mode == "update" else {}),
                    }
                )
        vault.reindex()
        assert vault.search({"query": SENTINEL_WORD})["selected_hits"] == []
    doctor = subprocess.run(
        [sys.executable, "-m", "vault_tool", "doctor", "--json", "--vault", str(vault_path)],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
    )
    assert doctor.returncode in (0, 8), doctor.stderr
    assert SENTINEL_WORD not in doctor.stdout
    assert SENTINEL_WORD not in git(vault_path, "log", "-p", "--all")
    assert sorted(p.name for p in sentinel.parent.rglob("*")) == listing
    for path, before in stats.items():
        after = path.stat()
        assert (after.st_mtime_ns, after.st_size) == (before.st_mtime_ns, before.st_size)
        if _atime_is_tracked(control):
            assert after.st_atime_ns == before.st_atime_ns, f"{path} was read"


# --- odd names -----------------------------------------------------------------------------

ADDRESSABLE = [
    "notes/caf\u00e9 nfc.md",
    unicodedata.normalize("NFD", "notes/caf\u00e9 nfd.md"),
    "notes/with  two spaces.md",
    "notes/-leading-dash.md",
    "notes/\u4e2d\u6587 \U0001f600.md",
    "notes/" + "long" * 60 + ".md",
    "notes/sub folder/deeper one/x.md",
]
UNADDRESSABLE = ["notes/new\nline.md", "notes/tab\there.md", 'notes/quote".md', "notes/star*.md"]


def test_odd_file_names_are_taken_in_or_refused_with_a_reason(vault_path: Path):
    for n, relpath in enumerate(ADDRESSABLE + UNADDRESSABLE):
        target = vault_path / relpath
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"# Odd name {n}\n\nWord{n}x appears here.\n")

    with _take_in(vault_path) as vault:
        problems = vault.problems()
        for n, relpath in enumerate(ADDRESSABLE):
            memory_id = relpath[:-3]
            read = vault.read(memory_id)
            assert read["path"] == relpath and f"Word{n}x" in read["content_md"]
            assert read["version_id"] == git(vault_path, "log", "-1", "--format=%H", "--", relpath)
            hits = vault.search({"query": f"Word{n}x"})["selected_hits"]
            assert [h["memory_id"] for h in hits] == [memory_id]
        for relpath in UNADDRESSABLE:
            reason = (
                "its name holds control"
                if "\n" in relpath or "\t" in relpath
                else ("cannot serve as its id")
            )
            assert reason in problems[relpath]["reason"], problems
            assert vault.at_path(relpath) is None
            assert not _committed(vault_path, relpath)
    status = git(vault_path, "-c", "core.quotepath=off", "status", "--porcelain", "-z", "-uall")
    assert sorted(r[3:] for r in status.split("\0") if r) == sorted(UNADDRESSABLE)


# --- files that change while they are read ------------------------------------------------


def test_a_file_rewritten_while_it_is_taken_in_never_gets_a_broken_or_secret_commit(
    vault_path: Path,
):
    path = vault_path / "notes" / "churn.md"
    path.parent.mkdir()
    token = "ghp_" + "Z" * 18 + "9" * 18
    versions = [
        b"# Churn\n\nVersion A.\n",
        b"# Churn\n\nVersion B, a little longer than A.\n",
        b"",  # the editor truncated the file and has not written yet
        b"# Churn\n\nHalf writ",
        b"---\ntitle: [broken\n---\n# Churn\n",
        f"# Churn\n\nPasted {token} by mistake.\n".encode(),
    ]
    stop = threading.Event()

    def typist() -> None:
        # Bursts of saves a millisecond apart (reads overlap them), each ending on another
        # version and held for a moment (long enough to be taken in as it is).
        n = 0
        while not stop.is_set():
            with open(path, "wb") as out:  # in place, as many editors save
                out.write(versions[n % len(versions)])
            n += 1
            time.sleep(0.001 if n % 7 else 0.06)

    path.write_bytes(versions[0])
    thread = threading.Thread(target=typist)
    with Vault.open(vault_path) as vault:
        thread.start()
        try:
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline:
                vault.sync_paths(["notes/churn.md"])
                vault.catch_up()
        finally:
            stop.set()
            thread.join()
        final = b"# Churn\n\nThe final words.\n"
        path.write_bytes(final)
        vault.sync_paths(["notes/churn.md"])
        assert "final words" in vault.read("notes/churn")["content_md"]
    assert git(vault_path, "show", "HEAD:notes/churn.md") == final.decode().strip()
    history = git(vault_path, "log", "-p", "--all", "--", "notes/churn.md")
    assert token not in history
    # Every commit holds a version that was whole and checked (the half-written one parses:
    # it has its H1), never the empty, broken or secret ones.
    allowed = {versions[0], versions[1], versions[3], final}
    commits = git(vault_path, "log", "--format=%H", "--", "notes/churn.md").split()
    assert len(commits) >= 2
    for sha in commits:
        shown = subprocess.run(
            ["git", "show", f"{sha}:notes/churn.md"], cwd=vault_path, capture_output=True
        )
        assert shown.stdout in allowed, shown.stdout
    assert git(vault_path, "status", "--porcelain") == ""


def _every_read_within_a_tick_of(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Step the clock file times are compared with to path's last change, so every read
    looks as if it might overlap a save (steady.py), as while an editor saves again and
    again; monkeypatch.undo() lets time run on."""
    monkeypatch.setattr(steady, "clock", lambda: os.lstat(path).st_ctime_ns)


def test_a_file_that_never_holds_still_is_left_as_it_was_and_taken_in_once_it_does(
    vault_path: Path, monkeypatch: pytest.MonkeyPatch
):
    path = vault_path / "notes" / "busy.md"
    path.parent.mkdir()
    path.write_bytes(b"# Busy\n\nFirst words.\n")
    with Vault.open(vault_path) as vault:
        vault.sync_paths(["notes/busy.md"])
        first = git(vault_path, "rev-parse", "HEAD")
        path.write_bytes(b"# Busy\n\nNewer words.\n")
        _every_read_within_a_tick_of(path, monkeypatch)
        report = vault.sync_paths(["notes/busy.md"])
        assert report.changing == ["notes/busy.md"]
        assert report.commits == [] and report.indexed == []
        assert "kept changing" in vault.problems()["notes/busy.md"]["reason"]
        assert git(vault_path, "rev-parse", "HEAD") == first
        assert "First words" in vault.read("notes/busy")["content_md"]
        # A catch-up (any CLI read) leaves it for its next look too.
        assert vault.catch_up().changing == ["notes/busy.md"]
        assert "First words" in vault.read("notes/busy")["content_md"]
        monkeypatch.undo()
        report = vault.sync_paths(["notes/busy.md"])
        assert report.changing == [] and len(report.commits) == 1
        assert "notes/busy.md" not in vault.problems()
        assert "Newer words" in vault.read("notes/busy")["content_md"]
    assert git(vault_path, "show", "HEAD:notes/busy.md") == "# Busy\n\nNewer words."


def test_the_watcher_looks_again_at_a_file_that_was_still_being_written(
    vault_path: Path, monkeypatch: pytest.MonkeyPatch
):
    path = vault_path / "notes" / "busy.md"
    path.parent.mkdir()
    path.write_bytes(b"# Busy\n\nFirst words.\n")
    events: list[dict] = []
    with Vault.open(vault_path) as vault:
        vault.sync_paths(["notes/busy.md"])
        watcher = Watcher(vault, narrate=events.append).start()
        try:
            assert watcher.ready.wait(15)
            _every_read_within_a_tick_of(path, monkeypatch)
            path.write_bytes(b"# Busy\n\nNewer words.\n")
            eventually(
                lambda: any("kept changing" in e.get("reason", "") for e in events), timeout=15
            )
            monkeypatch.undo()
            # No save follows: only the watcher's second look takes the last one in.
            eventually(lambda: "Newer words" in git(vault_path, "show", "HEAD:notes/busy.md"))
        finally:
            watcher.stop()
    assert [e["event"] for e in events] == ["problem", "commit"]


@pytest.mark.timeout(60)
def test_a_fifo_named_like_a_memory_never_blocks_anything(vault_path: Path):
    (vault_path / "notes").mkdir()
    os.mkfifo(vault_path / "notes" / "pipe.md")
    (vault_path / "notes" / "fine.md").write_text("# Fine\n\nA note.\n")
    with _take_in(vault_path, "notes/pipe.md") as vault:
        assert vault.read("notes/fine")["title"] == "Fine"
        assert "not a regular file" in vault.problems()["notes/pipe.md"]["reason"]
        assert vault.remember(create_args())["status"] == "created"
    with health.Checkup(vault_path) as checkup:
        health.verify(checkup)


# --- ids crafted as paths --------------------------------------------------------------------

CRAFTED_IDS = [
    "../outside/secret",
    "../../etc/passwd",
    "/etc/passwd",
    ".git/config",
    ".vault/config",
    "notes/../../outside/secret",
    "notes/./x",
    "a\x00b",
    "notes\\..\\..\\x",
    "",
    "x" * 400,
]


def test_ids_crafted_as_paths_read_and_write_nothing(tmp_path: Path, vault_path: Path):
    sentinel, _, _ = _outside(tmp_path)
    with Vault.open(vault_path) as vault:
        vault.remember(create_args())
        before = snapshot(vault_path)
        stat = sentinel.stat()
        for memory_id in CRAFTED_IDS:
            for call in (
                lambda m=memory_id: vault.read(m),
                lambda m=memory_id: vault.search({"memory_id": m}),
                lambda m=memory_id: vault.remember(
                    {"mode": "delete", "memory_id": m, "expected_version_id": "0" * 40}
                ),
                lambda m=memory_id: vault.remember(
                    {
                        "mode": "update",
                        "memory_id": m,
                        "expected_version_id": "0" * 40,
                        **create_args("Crafted"),
                    }
                ),
                lambda m=memory_id: vault.history(m),
                lambda m=memory_id: vault.restore(m, "0" * 40),
            ):
                with pytest.raises((InvalidInput, NotFound)) as caught:
                    call()
                assert isinstance(caught.value, VaultError) and caught.value.hint
                assert SENTINEL_WORD not in str(caught.value)
        assert snapshot(vault_path) == before
    after = sentinel.stat()
    assert (after.st_atime_ns, after.st_mtime_ns) == (stat.st_atime_ns, stat.st_mtime_ns)
