"""The watcher with a real watchdog observer: hand edits, moves, atomic saves, broken files,
catch-up after changes made while stopped, and leadership across processes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import create_args, eventually, git, reason_of
from vault_tool.engine.upkeep import Upkeep
from vault_tool.engine.vault import Vault
from vault_tool.errors import NotFound, VaultBusy
from vault_tool.watcher import UPKEEP_SECONDS, Watcher

NOTE = "---\nmemory_type: note\ntitle: {title}\n---\n# {title}\n\n{body}\n"


def titles(vault: Vault, query: str) -> list[str]:
    return [h["title"] for h in vault.search({"query": query, "top_k": 10})["selected_hits"]]


def path_of(vault: Vault, memory_id: str) -> str | None:
    try:
        return vault.read(memory_id)["path"]
    except (NotFound, VaultBusy):  # (busy: a rescan of a new folder has not read it yet)
        return None


def subjects(path: Path, n: int = 5) -> list[str]:
    return git(path, "log", f"-{n}", "--format=%s").splitlines()


@pytest.fixture
def watched(vault: Vault) -> Iterator[Vault]:
    watcher = Watcher(vault).start()
    assert watcher.ready.wait(10)
    yield vault
    watcher.stop()


def test_new_file_and_hand_edit_become_searchable_and_committed(watched, vault_path):
    note = vault_path / "notes" / "wombat.md"
    note.parent.mkdir()
    note.write_text(NOTE.format(title="Wombats dig burrows", body="Cube-shaped droppings."))
    eventually(lambda: titles(watched, "cube droppings") == ["Wombats dig burrows"])
    eventually(lambda: subjects(vault_path, 1) == ["Hand edit: Wombats dig burrows"])
    note.write_text(NOTE.format(title="Wombats dig burrows", body="They sleep in the day."))
    eventually(lambda: titles(watched, "sleep day") == ["Wombats dig burrows"])
    assert titles(watched, "cube droppings") == []
    eventually(lambda: git(vault_path, "status", "--porcelain") == "")
    assert git(vault_path, "log", "-1", "--format=%B").endswith("Client: hand-edit")
    head = git(vault_path, "rev-parse", "HEAD")  # (committed, then indexed: a moment after)
    eventually(lambda: watched.search({"memory_id": "notes/wombat"})["version_id"] == head)


def test_delete_and_move_are_taken_in(watched, vault_path):
    made = watched.remember(create_args("Wombats dig burrows"))
    source = vault_path / made["path"]
    target = vault_path / "animals" / "wombats.md"
    target.parent.mkdir()
    os.rename(source, target)
    # Under load the observer may report a move as a delete and a create in two batches:
    # the id is then briefly unknown before it reappears at its new path.
    eventually(lambda: path_of(watched, made["memory_id"]) == "animals/wombats.md")
    eventually(lambda: git(vault_path, "status", "--porcelain") == "")
    assert subjects(vault_path, 1) == [
        f"Move decision: Wombats dig burrows ({made['path']} -> animals/wombats.md)"
    ]
    target.unlink()
    eventually(lambda: titles(watched, "wombats") == [])
    eventually(lambda: git(vault_path, "status", "--porcelain") == "")


def test_editor_style_atomic_save_is_one_clean_commit(watched, vault_path):
    made = watched.remember(create_args("Wombats dig burrows"))
    before = int(git(vault_path, "rev-list", "--count", "HEAD"))
    path = vault_path / made["path"]
    text = path.read_text().replace("She took it over.", "Burrows are long.")
    tmp = path.with_name(f".{path.name}.swp")
    backup = path.with_name(path.name + "~")
    tmp.write_text(text)
    os.replace(path, backup)  # some editors keep the old file as a backup
    os.replace(tmp, path)
    backup.unlink()
    eventually(lambda: titles(watched, "burrows long") == ["Wombats dig burrows"])
    eventually(lambda: git(vault_path, "status", "--porcelain") == "")
    assert int(git(vault_path, "rev-list", "--count", "HEAD")) == before + 1
    assert git(vault_path, "show", "--name-only", "--format=", "HEAD") == made["path"]


def test_broken_yaml_keeps_the_last_good_version_and_is_reported(watched, vault_path):
    made = watched.remember(create_args("Wombats dig burrows", body="Cube-shaped droppings."))
    path = vault_path / made["path"]
    head = git(vault_path, "rev-parse", "HEAD")
    path.write_text("---\ntitle: [broken\n---\n# Wombats\n\nNew words here.\n")
    # (On a busy machine the watcher may first read the file truncated and half-written,
    # a problem of its own: the recorded problem ends as the file's.)
    eventually(lambda: "YAML" in reason_of(watched, made["path"]))
    problem = watched.problems()[made["path"]]
    assert problem["line"] and "YAML" in problem["reason"]
    assert titles(watched, "cube droppings") == ["Wombats dig burrows"]
    assert titles(watched, "new words") == []
    assert git(vault_path, "rev-parse", "HEAD") == head  # the broken state is not committed
    path.write_text(path.read_text().replace("[broken", "Wombats fixed"))
    eventually(lambda: made["path"] not in watched.problems())
    eventually(lambda: subjects(vault_path, 1) == ["Hand edit: Wombats fixed"])


def test_a_hand_edit_holding_a_secret_is_not_committed(watched, vault_path):
    note = vault_path / "notes.md"
    key = "AKIA" + "IOSFODNN7" + "EXAMPLE"
    note.write_text(f"# Keys\n\nThe key is {key}\n")
    eventually(lambda: "aws" in reason_of(watched, "notes.md"))
    assert key not in git(vault_path, "log", "-p", "--all")
    assert titles(watched, "keys") == []


def test_catch_up_after_edits_made_while_stopped(vault_path):
    with Vault.open(vault_path) as vault:
        made = vault.remember(create_args("Wombats dig burrows", body="Cube-shaped droppings."))
    path = vault_path / made["path"]
    path.write_text(path.read_text().replace("Cube-shaped droppings.", "Nocturnal grazers."))
    (vault_path / "new.md").write_text("# Platypus facts\n\nThey lay eggs.\n")
    with Vault.open(vault_path) as vault:
        watcher = Watcher(vault).start()
        try:
            assert watcher.ready.wait(10)
            assert titles(vault, "nocturnal grazers") == ["Wombats dig burrows"]
            assert titles(vault, "lay eggs") == ["Platypus facts"]
            assert git(vault_path, "status", "--porcelain") == ""
            # What changed while nothing watched is one change of the person's: one commit.
            assert subjects(vault_path, 2) == [
                "Hand edit 2 memories",
                "Create decision: Wombats dig burrows",
            ]
            body = git(vault_path, "log", "-1", "--format=%b")
            assert "- decision: Wombats dig burrows (" in body
            assert "- note: Platypus facts (new)" in body
        finally:
            watcher.stop()


def test_catch_up_after_checkout_of_an_older_commit(vault_path):
    with Vault.open(vault_path) as vault:
        made = vault.remember(create_args("Wombats dig burrows", body="Cube-shaped droppings."))
        old = made["version_id"]
        vault.remember({
            "mode": "update", "memory_id": made["memory_id"], "expected_version_id": old,
            "content_md": "# Wombats dig burrows\n\nNocturnal grazers.\n",
            "semantic_delta": create_args("Wombats dig burrows")["semantic_delta"],
        })  # fmt: skip
        assert titles(vault, "nocturnal grazers") == ["Wombats dig burrows"]
    git(vault_path, "checkout", "--quiet", old)
    with Vault.open(vault_path) as vault:
        assert titles(vault, "nocturnal grazers") == []
        assert titles(vault, "cube droppings") == ["Wombats dig burrows"]
        assert vault.read(made["memory_id"])["version_id"] == old


def _spawn(code: str, vault_path: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", code, str(vault_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )


def test_a_write_in_one_process_is_found_by_another(vault, vault_path):
    writer = _spawn(
        "import sys\n"
        "from vault_tool.engine.vault import Vault\n"
        "from tests.helpers import create_args\n"
        "with Vault.open(sys.argv[1]) as v:\n"
        "    v.remember(create_args('Written elsewhere', body='Quokkas smile.'))\n",
        vault_path,
    )
    _, err = writer.communicate(timeout=30)
    assert writer.returncode == 0, err
    eventually(lambda: titles(vault, "quokkas smile") == ["Written elsewhere"])


def test_when_the_leader_dies_another_process_takes_over_watching(vault, vault_path):
    leader = _spawn(
        "import sys, time\n"
        "from vault_tool.engine.vault import Vault\n"
        "from vault_tool.watcher import Watcher\n"
        "v = Vault.open(sys.argv[1])\n"
        "w = Watcher(v).start()\n"
        "w.ready.wait(10)\n"
        "print('leading', w.leading.is_set(), flush=True)\n"
        "time.sleep(60)\n",
        vault_path,
    )
    try:
        assert leader.stdout.readline().strip() == "leading True"
        standby = Watcher(vault).start()
        try:
            # More than one retry of the leader lock, and the standby still does not lead.
            assert not standby.leading.wait(1.5)
            leader.send_signal(signal.SIGKILL)
            leader.wait(5)
            eventually(standby.leading.is_set)
            (vault_path / "after.md").write_text("# Taken over\n\nThe standby leads now.\n")
            eventually(lambda: titles(vault, "standby leads") == ["Taken over"])
            eventually(lambda: subjects(vault_path, 1) == ["Hand edit: Taken over"])
        finally:
            standby.stop()
    finally:
        leader.kill()
        leader.wait(5)


def test_the_tools_own_writes_are_settled_so_the_watcher_skips_them(vault: Vault):
    written = vault.remember(create_args())
    assert vault.settled(written["path"])

    file = vault.root / written["path"]
    file.write_text(file.read_text() + "\nA hand edit.\n")
    assert not vault.settled(written["path"])
    assert not vault.settled("decision/none-such.md")
    fifo = vault.root / "notes" / "pipe.md"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    assert not vault.settled("notes/pipe.md")  # and did not block reading it


def test_a_new_top_level_folder_is_watched_even_for_files_written_at_once(watched, vault_path):
    # The folder and its nested file appear before the folder's own watch can begin.
    deep = vault_path / "projects" / "2026" / "q4" / "kiwi.md"
    deep.parent.mkdir(parents=True)
    deep.write_text(NOTE.format(title="Kiwis cannot fly", body="Small wings, no keel."))
    eventually(lambda: titles(watched, "kiwis keel") == ["Kiwis cannot fly"])
    deep.write_text(NOTE.format(title="Kiwis cannot fly", body="They hunt worms at night."))
    eventually(lambda: titles(watched, "worms night") == ["Kiwis cannot fly"])


def test_a_renamed_top_level_folder_keeps_being_watched_under_its_new_name(watched, vault_path):
    note = vault_path / "birds" / "tui.md"
    note.parent.mkdir()
    note.write_text(NOTE.format(title="Tui mimic sounds", body="Two voice boxes."))
    eventually(lambda: titles(watched, "voice boxes") == ["Tui mimic sounds"])
    os.rename(vault_path / "birds", vault_path / "songbirds")
    eventually(lambda: watched.at_path("songbirds/tui.md") is not None)
    (vault_path / "songbirds" / "tui.md").write_text(
        NOTE.format(title="Tui mimic sounds", body="They copy car alarms.")
    )
    eventually(lambda: titles(watched, "car alarms") == ["Tui mimic sounds"])
    assert watched.at_path("birds/tui.md") is None


def test_git_and_vault_internals_are_not_watched(vault, vault_path):
    # Every write touches .git (objects, refs) and .vault (index segments); watching them
    # cost each write more CPU in the watcher than the write itself.
    (vault_path / "notes").mkdir()
    watcher = Watcher(vault).start()
    assert watcher.ready.wait(10)
    try:
        watched_paths = {Path(e.watch.path) for e in watcher._observer.emitters}
    finally:
        watcher.stop()
    assert watched_paths == {vault_path, vault_path / "notes"}


def test_removing_the_run_folder_under_a_leader_leaves_it_leading(watched, vault_path):
    run = vault_path / ".vault" / "run"
    shutil.rmtree(run)
    # The next heartbeat makes the folder again (the old code's watcher thread died here).
    eventually(lambda: (run / "leader.json").exists())
    note = vault_path / "notes" / "after-removal.md"
    note.parent.mkdir()
    note.write_text(NOTE.format(title="Wombats after the removal", body="Still watched."))
    eventually(lambda: subjects(vault_path, 1) == ["Hand edit: Wombats after the removal"])
    eventually(lambda: titles(watched, "still watched") == ["Wombats after the removal"])
    assert watched.leader() is not None


def test_git_clean_xfd_under_a_leader_leaves_it_watching_and_searching(watched, vault_path):
    made = watched.remember(create_args("Wombats dig burrows", body="Cube-shaped droppings."))
    index = vault_path / ".vault" / "index"
    segments = [*index.glob("*.seg"), *index.glob("recent-*.jsonl")]  # (the write's journal)
    # Index, run files and ledger: all of .vault's caches. (git exits 1 when the leader
    # writes its next heartbeat into a folder git is removing: "Directory not empty".)
    subprocess.run(["git", "clean", "-xfdq"], cwd=vault_path, capture_output=True, check=False)
    assert segments and not any(segment.exists() for segment in segments)
    file = vault_path / made["path"]
    file.write_text(file.read_text().replace("Cube-shaped droppings.", "They sleep all day."))
    eventually(lambda: titles(watched, "sleep all day") == ["Wombats dig burrows"], timeout=30)
    eventually(lambda: subjects(vault_path, 1) == ["Hand edit: Wombats dig burrows"])
    eventually(lambda: (vault_path / ".vault" / "run" / "leader.json").exists())
    assert (vault_path / ".vault" / "index").is_dir()


def test_an_idle_leader_asks_for_index_upkeep_once_a_period_not_every_tick(vault, monkeypatch):
    """Each asking reads the index's table of contents: asked at every 50 ms tick, an idle
    server used 1.3% of a core. The watcher's clock stands still unless stepped here; its
    ticks go on, counted by its flushes."""
    now = [0.0]
    asked: list[float] = []
    real = Upkeep.merge_when_idle
    monkeypatch.setattr(Upkeep, "merge_when_idle", lambda self: asked.append(now[0]) or real(self))
    watcher = Watcher(vault, clock=lambda: now[0])
    flushes: list[int] = []
    flush = watcher._flush
    watcher._flush = lambda: flushes.append(1) or flush()  # type: ignore[method-assign]
    watcher.start()
    try:
        assert watcher.ready.wait(10)
        for expected in (1, 2):
            eventually(lambda n=expected: len(asked) == n)
            ticked = len(flushes)
            eventually(lambda t=ticked: len(flushes) >= t + 5)  # five ticks, the clock still
            assert len(asked) == expected
            now[0] += UPKEEP_SECONDS
    finally:
        watcher.stop()
