"""verify and doctor find every fault injected into a real vault; gc compacts and stays healthy."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import create_args, git
from vault_tool.checks import doctor as doctor_module
from vault_tool.checks import verify as health
from vault_tool.engine.vault import Vault
from vault_tool.ops import gc
from vault_tool.search.documents import INDEX_SCHEMA_VERSION
from vault_tool.search.index import Index
from vault_tool.storage.git import blob_sha
from vault_tool.storage.store import Store


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    """A vault with three committed, indexed memories, made once and copied for each test."""
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        patch.setenv("GIT_CONFIG_GLOBAL", str(home / "gitconfig"))
        patch.setenv("GIT_CONFIG_NOSYSTEM", "1")
        root = tmp_path_factory.mktemp("template") / "vault"
        Store.init(root).close()
        with Vault.open(root, client="pytest") as made:
            titles = ("Ana owns billing", "Staging needs the VPN", "Deploys happen on Tuesdays")
            return root, [made.remember(create_args(title)) for title in titles]


@pytest.fixture
def vault_path(tmp_path: Path, template: tuple[Path, list[dict]]) -> Path:
    """A copy of the template vault (files, git and index, with their times)."""
    path = tmp_path / "vault"
    shutil.copytree(template[0], path, symlinks=True)
    return path


@pytest.fixture
def filled(vault, template: tuple[Path, list[dict]]) -> list[dict]:
    """The template's memories, in a vault this test has open (as a server would)."""
    return template[1]


def verify(vault_path: Path) -> health.VerifyReport:
    with health.Checkup(vault_path) as checkup:
        return health.verify(checkup)


def doctor(vault_path: Path) -> doctor_module.DoctorReport:
    with health.Checkup(vault_path) as checkup:
        return doctor_module.doctor(checkup)


def kinds(report: health.VerifyReport) -> set[tuple[str, str]]:
    return {(i.kind, i.path) for i in report.issues}


def check(report: doctor_module.DoctorReport, name: str) -> doctor_module.Check:
    return next(c for c in report.checks if c.name == name)


def test_a_clean_vault_is_healthy_for_verify_and_doctor(vault_path, filled):
    found = verify(vault_path)
    assert found.healthy and found.issues == []
    assert (found.files, found.indexed, found.committed) == (3, 3, 3)
    report = doctor(vault_path)
    assert report.healthy, [c for c in report.checks if c.status != "ok"]
    assert {c.name for c in report.checks} >= {
        "config",
        "git",
        "index",
        "files",
        "uncommitted",
        "index_drift",
        "git_locks",
        "write_lock",
        "journal",
        "watcher",
    }
    assert "vault-tool" in check(report, "git").summary  # who commits (the vault's identity)
    assert f"schema version {INDEX_SCHEMA_VERSION}" in check(report, "index").summary


# --- each injected fault is found by both ----------------------------------------------------

BROKEN = "---\nmemory_type: note\ntitle: Broken: a colon in the middle\n---\n# Broken\n"


def break_yaml(vault_path: Path, filled: list[dict]) -> str:
    path = filled[0]["path"]
    (vault_path / path).write_text(BROKEN)
    return path


def delete_index(vault_path: Path, filled: list[dict]) -> str:
    shutil.rmtree(vault_path / ".vault" / "index")
    return ".vault/index"


def delete_file(vault_path: Path, filled: list[dict]) -> str:
    path = filled[1]["path"]
    (vault_path / path).unlink()
    return path


def index_a_file_twice(vault_path: Path, filled: list[dict]) -> str:
    path = filled[0]["path"]
    index = Index(vault_path).open()
    try:
        held = index.read(lambda s: next(f for f in s.all_stored_fields() if f["path"] == path))
        with index.writer() as writer:
            writer.add_document(**held)
    finally:
        index.close()
    return path


def leave_git_lock(vault_path: Path, filled: list[dict]) -> str:
    (vault_path / ".git" / "index.lock").write_bytes(b"")
    return ".git/index.lock"


def leave_journal_entry(vault_path: Path, filled: list[dict]) -> str:
    """What a writer that crashed before its rename leaves: a journal entry and a temp file."""
    data = b"---\nmemory_type: note\ntitle: Half written\n---\n# Half written\n"
    (vault_path / "note").mkdir(exist_ok=True)
    (vault_path / "note" / ".half-written.md.vault-tmp-0a1b2c3d").write_bytes(data[:20])
    entry = {
        "message": "Create note: Half written\n\nClient: pytest\n",
        "entries": [
            {
                "path": "note/half-written.md",
                "tmp": "note/.half-written.md.vault-tmp-0a1b2c3d",
                "blob": blob_sha(data),
                "title": "Half written",
            }
        ],
    }
    journal = vault_path / ".vault" / "run" / "journal"
    journal.mkdir(parents=True, exist_ok=True)
    (journal / "1700000000000000000-4242.json").write_text(json.dumps(entry))
    return ".vault/run/journal/1700000000000000000-4242.json"


def edit_without_commit(vault_path: Path, filled: list[dict]) -> str:
    path = filled[2]["path"]
    with (vault_path / path).open("a") as file:
        file.write("\nA line a person added.\n")
    return path


FAULTS: list[tuple[Callable[[Path, list[dict]], str], set[str], set[str]]] = [
    # (inject, verify issue kinds at the returned path, doctor checks that fail)
    # (a broken file is reported once, as unparseable: committing it is not the fix)
    (break_yaml, {"unparseable"}, {"files"}),
    (index_a_file_twice, {"indexed_twice"}, {"index_drift"}),
    (leave_git_lock, {"stale_git_lock"}, {"git_locks"}),
    (leave_journal_entry, {"interrupted_write"}, {"journal"}),
]


@pytest.mark.parametrize(
    ("inject", "issue_kinds", "failing"), FAULTS, ids=[f[0].__name__ for f in FAULTS]
)
def test_verify_and_doctor_each_find_the_injected_fault(
    vault_path, filled, inject, issue_kinds, failing
):
    where = inject(vault_path, filled)
    found = verify(vault_path)
    assert not found.healthy
    assert {(kind, where) for kind in issue_kinds} <= kinds(found)
    assert all(i.fix for i in found.issues)
    report = doctor(vault_path)
    assert not report.healthy
    assert {c.name for c in report.checks if c.status == "fail"} == failing
    assert all(check(report, name).fix for name in failing)


PENDING: list[tuple[Callable[[Path, list[dict]], str], set[str]]] = [
    # (a hand edit nobody has taken in yet, verify issue kinds at the returned path)
    (delete_file, {"indexed_but_missing", "deleted_uncommitted"}),
    (edit_without_commit, {"stale_index", "uncommitted"}),
]


@pytest.mark.parametrize(("inject", "issue_kinds"), PENDING, ids=[p[0].__name__ for p in PENDING])
def test_hand_edits_while_nobody_watches_need_attention_but_are_not_a_fault(
    vault_path, filled, inject, issue_kinds
):
    where = inject(vault_path, filled)
    assert {(kind, where) for kind in issue_kinds} <= kinds(verify(vault_path))
    report = doctor(vault_path)
    assert report.healthy and report.verdict == "needs attention"
    assert {c.name for c in report.checks if c.status != "ok"} == {"uncommitted"}
    # The index lags the file because nobody took the edit in: the same edit, not drift.
    assert check(report, "index_drift").status == "ok"
    assert "nobody watches" in check(report, "uncommitted").summary


def test_hand_edits_a_live_watcher_has_not_taken_in_are_a_fault(vault_path, filled):
    record = {"pid": os.getpid(), "client": "pytest", "since": 0, "heartbeat": time.time()}
    (vault_path / ".vault" / "run" / "leader.json").write_text(json.dumps(record))
    edit_without_commit(vault_path, filled)
    report = doctor(vault_path)
    assert report.verdict == "unhealthy"
    assert check(report, "uncommitted").status == "fail"


def test_a_clean_vault_with_only_a_warning_needs_attention(vault_path, filled):
    config = vault_path / ".vault" / "config.toml"
    config.write_text(config.read_text().replace("auto_commit", "auto_comit"))
    report = doctor(vault_path)
    assert report.healthy and report.verdict == "needs attention"
    assert report.to_dict()["verdict"] == "needs attention"


def test_semantic_on_is_known_and_without_the_extra_it_says_how_to_fix(
    vault_path, filled, monkeypatch
):
    from vault_tool.search import dense

    config = vault_path / ".vault" / "config.toml"
    config.write_text(config.read_text().replace("semantic = false", "semantic = true"))
    if dense.available():
        found = check(doctor(vault_path), "config")
        assert found.status == "ok" and "semantic on" in found.summary
    # (the extra's presence is a package lookup: made to say "absent" for this one check)
    monkeypatch.setattr(dense, "available", lambda: False)
    found = check(doctor(vault_path), "config")
    assert found.status == "warn" and "not installed" in found.summary
    assert "vault-tool[semantic]" in found.fix


def test_an_uncommitted_move_is_one_row_paired_by_id(vault_path, filled):
    old = filled[0]["path"]
    new = str(Path(old).with_name("renamed.md"))
    (vault_path / old).rename(vault_path / new)
    found = verify(vault_path)
    assert ("moved_uncommitted", new) in kinds(found)
    assert not {("uncommitted", new), ("deleted_uncommitted", old)} & kinds(found)
    [moved] = [i for i in found.issues if i.kind == "moved_uncommitted"]
    assert moved.moved_from == old and moved.to_dict()["moved_from"] == old
    [row] = check(doctor(vault_path), "uncommitted").details
    assert row["path"] == new and row["reason"] == f"moved (uncommitted) from {old}"


def test_an_uncommitted_move_of_a_note_without_an_id_is_paired_by_content(vault, vault_path):
    (vault_path / "notes").mkdir()
    (vault_path / "notes" / "plain.md").write_text("# A plain note\n\nWritten by hand.\n")
    vault.sync_paths(["notes/plain.md"], commit=True)
    (vault_path / "notes" / "plain.md").rename(vault_path / "notes" / "moved.md")
    [row] = check(doctor(vault_path), "uncommitted").details
    assert row["path"] == "notes/moved.md"
    assert row["reason"] == "moved (uncommitted) from notes/plain.md"


def test_two_memories_that_swap_nothing_are_not_paired(vault_path, filled):
    """A delete and an unrelated new file stay two rows."""
    delete_file(vault_path, filled)
    (vault_path / "notes").mkdir()
    (vault_path / "notes" / "other.md").write_text("# Something else entirely\n\nText.\n")
    rows = check(doctor(vault_path), "uncommitted").details
    assert sorted(r["path"] for r in rows) == sorted([filled[1]["path"], "notes/other.md"])


def test_a_broken_file_is_reported_with_line_reason_and_fix(vault_path, filled):
    path = break_yaml(vault_path, filled)
    [row] = check(doctor(vault_path), "files").details
    assert row["path"] == path and row["line"] == 3
    assert "not valid YAML" in row["reason"]
    assert "between the --- lines" in row["fix"]


UNPARSEABLE = {
    "schema": "---\nfacts: not-a-list\n---\n# A note\n",
    "not_a_mapping": "---\n- just\n- a list\n---\n# A note\n",
    "empty": "\n\n",
    "not_closed": "---\nmemory_type: note\n# A note\n",
}


@pytest.mark.parametrize("kind", sorted(UNPARSEABLE))
def test_doctor_gives_the_fix_the_files_own_error_carries(vault_path, filled, kind):
    from vault_tool.core.memory import parse
    from vault_tool.errors import UnparseableFile

    path = f"notes/{kind}.md"
    (vault_path / "notes").mkdir(exist_ok=True)
    (vault_path / path).write_text(UNPARSEABLE[kind])
    with pytest.raises(UnparseableFile) as raised:
        parse(UNPARSEABLE[kind], path)
    [row] = check(doctor(vault_path), "files").details
    assert row["path"] == path and row["reason"] == raised.value.reason
    assert row["fix"] == raised.value.hint


def test_the_problems_record_keeps_the_hint_of_each_file_it_could_not_take_in(
    vault, vault_path, filled
):
    path = "notes/empty.md"
    (vault_path / "notes").mkdir(exist_ok=True)
    (vault_path / path).write_text(UNPARSEABLE["empty"])
    vault.sync_paths([path])
    with health.Checkup(vault_path) as checkup:
        recorded = checkup.recorded_problems()[path]
    assert recorded["hint"].startswith("write the note")


def test_looking_repairs_nothing_and_creates_no_index(vault_path, filled):
    leave_journal_entry(vault_path, filled)
    leave_git_lock(vault_path, filled)
    delete_index(vault_path, filled)
    before = git(vault_path, "rev-parse", "HEAD")
    doctor(vault_path)
    verify(vault_path)
    assert not (vault_path / ".vault" / "index").exists()
    assert (vault_path / ".git" / "index.lock").exists()
    assert list((vault_path / ".vault" / "run" / "journal").iterdir())
    assert git(vault_path, "rev-parse", "HEAD") == before


def test_an_index_version_that_is_not_gits_last_commit_is_found(vault_path, filled):
    git(vault_path, "commit", "--amend", "--quiet", "-m", "Rewritten history")
    found = verify(vault_path)
    assert ("wrong_version", filled[2]["path"]) in kinds(found)
    assert check(doctor(vault_path), "index_drift").status == "fail"


def test_a_copied_file_is_a_duplicate_id(vault, vault_path, filled):
    source = vault_path / filled[0]["path"]
    shutil.copy(source, source.with_name("copy.md"))
    vault.catch_up()
    found = verify(vault_path)
    copy = source.with_name("copy.md").relative_to(vault_path).as_posix()
    assert {("duplicate_id", filled[0]["path"]), ("duplicate_id", copy)} <= kinds(found)


def test_a_file_with_a_secret_is_reported_as_refused(vault_path, filled):
    path = vault_path / filled[0]["path"]
    path.write_text(path.read_text() + "\nkey AKIAIOSFODNN7EXAMPLQ in a note\n")
    found = kinds(verify(vault_path))
    assert ("refused", filled[0]["path"]) in found
    # Reported once, with its own fix: `vault-tool commit` would never commit it.
    assert ("uncommitted", filled[0]["path"]) not in found


def test_a_broken_file_is_reported_as_unparseable_not_as_waiting_for_a_commit(vault_path, filled):
    path = vault_path / filled[0]["path"]
    path.write_text(path.read_text().replace("title: ", "title: [", 1))
    found = kinds(verify(vault_path))
    assert ("unparseable", filled[0]["path"]) in found
    assert ("uncommitted", filled[0]["path"]) not in found


def test_after_reindex_and_commit_the_vault_is_healthy_again(vault_path, filled):
    edit_without_commit(vault_path, filled)
    delete_file(vault_path, filled)
    assert not verify(vault_path).healthy
    with Vault.open(vault_path) as opened:
        opened.sync_paths(opened.uncommitted(), commit=True)
    assert verify(vault_path).healthy
    assert doctor(vault_path).healthy


def test_uncommitted_edits_only_warn_when_auto_commit_is_off(vault_path, filled):
    config = vault_path / ".vault" / "config.toml"
    config.write_text(config.read_text().replace("auto_commit = true", "auto_commit = false"))
    git(vault_path, "commit", "--quiet", "-am", "Turn auto-commit off")
    with Vault.open(vault_path) as opened:
        edit_without_commit(vault_path, filled)
        opened.catch_up()  # hand edits are indexed but left uncommitted
    report = doctor(vault_path)
    assert check(report, "uncommitted").status == "warn"
    assert report.healthy
    assert not verify(vault_path).healthy  # verify lists every disagreement with git


def test_broken_settings_fail_doctor_with_the_reason(vault_path, filled):
    (vault_path / ".vault" / "config.toml").write_text("[watch\nauto_commit = true\n")
    config = check(doctor(vault_path), "config")
    assert config.status == "fail" and "not valid TOML" in config.summary


def test_unknown_settings_are_a_warning(vault_path, filled):
    config = vault_path / ".vault" / "config.toml"
    config.write_text(config.read_text().replace("auto_commit", "auto_comit"))
    found = check(doctor(vault_path), "config")
    assert found.status == "warn" and "[watch] auto_comit" in found.summary


# --- processes: watcher and write lock ----------------------------------------------------------


def test_doctor_names_the_live_watcher_leader_and_its_heartbeat(vault, vault_path, filled):
    from vault_tool.watcher import Watcher

    watcher = Watcher(vault).start()
    try:
        assert watcher.ready.wait(10)
        found = check(doctor(vault_path), "watcher")
    finally:
        watcher.stop()
    assert found.status == "ok"
    assert f"pid {os.getpid()}" in found.summary and "heartbeat" in found.summary


def test_a_leader_that_stopped_beating_fails_doctor(vault_path, filled):
    record = {"pid": os.getpid(), "client": "pytest", "since": 0, "heartbeat": time.time() - 60}
    (vault_path / ".vault" / "run" / "leader.json").write_text(json.dumps(record))
    found = check(doctor(vault_path), "watcher")
    assert found.status == "fail" and "hangs" in found.summary


def test_a_dead_leaders_record_is_a_warning(vault_path, filled):
    record = {"pid": 2**22 + 1, "client": "gone", "since": 0, "heartbeat": time.time()}
    (vault_path / ".vault" / "run" / "leader.json").write_text(json.dumps(record))
    assert check(doctor(vault_path), "watcher").status == "warn"


def test_doctor_names_who_holds_the_write_lock_and_a_journal_is_then_in_progress(
    vault, vault_path, filled
):
    leave_journal_entry(vault_path, filled)
    with vault._store.write_lock():
        report = doctor(vault_path)
        found = verify(vault_path)
    lock = check(report, "write_lock")
    assert lock.status == "warn" and f"pid {os.getpid()}" in lock.summary
    assert check(report, "journal").status == "ok"
    assert "interrupted_write" not in {i.kind for i in found.issues}


# --- gc ------------------------------------------------------------------------------------------


def test_gc_merges_the_index_packs_git_and_stays_healthy(vault, vault_path, filled):
    for n in range(4):
        vault.remember(create_args(f"Extra memory {n}"))
        if n % 2:
            with vault._store.write_lock():
                vault._index.flush()  # (a write goes to the journal of recent writes first)
    assert vault._index.segment_count() > 1 and not vault._index.pending_writes()
    vault.remember(create_args("Extra memory still in the journal"))
    assert vault._index.pending_writes()
    report = gc.collect(vault)
    assert report.after["index_segments"] == 1 and not vault._index.pending_writes()
    # Objects nothing refers to stay loose for two weeks (git's margin for a concurrent
    # writer); everything a commit reaches is packed.
    assert report.after["git_loose_objects"] < report.before["git_loose_objects"]
    assert report.after["git_packs"] >= 1
    info = vault_path / ".git" / "objects" / "info"
    graphs = [info / "commit-graph", *info.glob("commit-graphs/*.graph")]
    # Changed-path Bloom filters (chunks BIDX and BDAT) keep `git log -- PATH` fast.
    assert any(g.is_file() and b"BIDX" in g.read_bytes() for g in graphs)
    assert verify(vault_path).healthy
    assert len(vault.search({"query": "extra memory"})["selected_hits"]) == 5


def _record(kind: str, when: str, **fields: object) -> str:
    return json.dumps({"type": kind, "id": f"{kind}-{when}", "time": when, **fields}) + "\n"


def test_gc_drops_torn_ledger_lines_and_salvages_the_record_glued_to_one(vault, filled):
    vault.search({"query": "billing"})
    vault._ledger.flush()
    [current] = vault.places.ledger.glob("*.jsonl")
    whole = _record("search", "2020-01-01T00:00:00.000000Z", query="x")
    with current.open("a") as file:
        file.write('{"type":"search","id":"torn","qu' + whole)  # torn, then the next append
        file.write("not json at all\n")
    report = gc.collect(vault)
    assert report.ledger.torn_dropped == 2 and report.ledger.salvaged == 1
    records = list(vault.ledger_records())
    assert [r["query"] for r in records] == ["billing", "x"]
    assert current.read_text().count("\n") == 2


def test_gc_drops_old_searches_without_feedback_and_keeps_the_judged(vault, filled):
    vault.places.ledger.mkdir(parents=True, exist_ok=True)
    old_month = vault.places.ledger / "2020-01.jsonl"
    old_month.write_text(
        _record("search", "2020-01-01T00:00:00.000000Z", query="nobody judged this")
        + _record("search", "2020-01-02T00:00:00.000000Z", query="judged")
        + _record(
            "feedback",
            "2020-01-03T00:00:00.000000Z",
            search_id="search-2020-01-02T00:00:00.000000Z",
        )
    )
    vault.search({"query": "billing"})
    vault._ledger.flush()
    report = gc.collect(vault, older_than_days=30)
    assert report.ledger.old_searches_dropped == 1
    queries = [r.get("query") for r in vault.ledger_records()]
    assert "nobody judged this" not in queries
    assert "judged" in queries and "billing" in queries
    assert sum(1 for r in vault.ledger_records() if r["type"] == "feedback") == 1


def test_gc_without_an_age_keeps_every_whole_record(vault, filled):
    for query in ("billing", "staging", "deploys"):
        vault.search({"query": query})
    vault._ledger.flush()
    before = [p.read_bytes() for p in sorted(vault.places.ledger.glob("*.jsonl"))]
    report = gc.collect(vault)
    assert report.ledger.rewritten == 0 and report.ledger.kept == 3
    assert [p.read_bytes() for p in sorted(vault.places.ledger.glob("*.jsonl"))] == before
