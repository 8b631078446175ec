"""The index is a cache: rebuilt when missing or old, caught up without re-reading everything."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.helpers import create_args
from vault_tool.engine.vault import Vault
from vault_tool.errors import NotFound, VaultBusy
from vault_tool.search.documents import INDEX_SCHEMA_VERSION
from vault_tool.search.index import Index, IndexDamaged


def test_deleting_the_index_loses_nothing(vault_path):
    with Vault.open(vault_path) as vault:
        made = vault.remember(create_args("Wombats dig burrows"))
    shutil.rmtree(vault_path / ".vault" / "index")
    with Vault.open(vault_path) as vault:
        assert vault.read(made["memory_id"])["version_id"] == made["version_id"]
        assert [h["memory_id"] for h in vault.search({"query": "wombats"})["selected_hits"]] == [
            made["memory_id"]
        ]


def test_an_index_of_an_older_schema_is_rebuilt_on_open(vault_path):
    with Vault.open(vault_path) as vault:
        made = vault.remember(create_args("Wombats dig burrows"))
    meta = vault_path / ".vault" / "index" / "vault-tool-index.json"
    meta.write_text(json.dumps({"schema_version": INDEX_SCHEMA_VERSION - 1}))
    with Vault.open(vault_path) as vault:
        assert vault._index.rebuilt
        assert json.loads(meta.read_text())["schema_version"] == INDEX_SCHEMA_VERSION
        assert vault.read(made["memory_id"])["title"] == "Wombats dig burrows"


def test_catch_up_reads_only_the_files_that_changed(vault_path):
    with Vault.open(vault_path) as vault:
        made = [vault.remember(create_args(f"Memory number {n}")) for n in range(5)]
    changed = vault_path / made[2]["path"]
    changed.write_text(changed.read_text().replace("She took it over.", "Changed while stopped."))
    with Vault.open(vault_path, catch_up=False) as vault:
        report = vault.catch_up()
        assert report.indexed == [made[2]["path"]]
        assert report.unchanged == 4
        hits = vault.search({"query": "changed while stopped"})["selected_hits"]
        assert [h["memory_id"] for h in hits] == [made[2]["memory_id"]]


def test_a_search_during_catch_up_says_so(vault):
    vault.remember(create_args())
    vault.catching_up = True
    assert vault.search({"query": "billing"})["index_catching_up"] is True
    vault.catching_up = False
    assert "index_catching_up" not in vault.search({"query": "billing"})


def test_a_deleted_memory_read_during_catch_up_is_reported_deleted_not_busy(vault, vault_path):
    made = vault.remember(create_args())
    delete = {"mode": "delete", "memory_id": made["memory_id"],
              "expected_version_id": made["version_id"]}  # fmt: skip
    vault.remember(delete)
    vault.catching_up = True
    with pytest.raises(NotFound, match="was deleted on"):
        vault.read(made["memory_id"])
    # Its file back in the folder, not read yet: the index may simply be behind.
    (vault_path / made["path"]).write_text("---\ntitle: back\n---\n")
    with pytest.raises(VaultBusy):
        vault.read(made["memory_id"])


def test_cli_search_json_has_the_tool_result_shape(vault_path):
    with Vault.open(vault_path) as vault:
        made = vault.remember(create_args())
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "vault_tool",
            "search",
            "billing",
            "--vault",
            str(vault_path),
            "--json",
        ],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        check=True,
    ).stdout
    result = json.loads(out)
    assert set(result) >= {"query", "selected_hits", "total_matches"}
    assert result["selected_hits"][0]["memory_id"] == made["memory_id"]
    assert result["selected_hits"][0]["version_id"] == made["version_id"]


def test_a_torn_ledger_line_costs_only_the_torn_record(vault):
    vault.remember(create_args())
    vault.search({"query": "billing"})
    ledger_file = next((vault.root / ".vault" / "ledger").glob("2*.jsonl"))
    with ledger_file.open("a") as torn:
        torn.write('{"type":"search","id":"torn')  # a crash in the middle of an append
    vault.search({"query": "after the crash"})
    queries = [r["query"] for r in vault.ledger_records("search")]
    assert queries == ["billing", "after the crash"]


def test_writes_without_a_leader_never_pile_up_more_than_max_segments(vault: Vault):
    from vault_tool.search.index import MAX_SEGMENTS

    for n in range(MAX_SEGMENTS + 3):
        vault.remember(create_args(f"Segment test {n}", body=f"Number {n} of the pile."))
        assert vault._index.segment_count() <= MAX_SEGMENTS
    assert vault.search({"query": "Segment test 14"})["selected_hits"]


def test_updates_and_deletes_in_older_segments_never_show_old_versions(vault: Vault):
    # Each write adds a segment and deletes in an older one; the searcher keeps the
    # readers of older segments, which must see every new deletion at once.
    made = [
        vault.remember(create_args(f"Layered memory {n}", body="Version zero.")) for n in range(3)
    ]
    for version in (1, 2):
        for item in made:
            read = vault.read(item["memory_id"])
            vault.remember({
                "mode": "update", "memory_id": item["memory_id"],
                "expected_version_id": read["version_id"],
                "content_md": read["content_md"].replace(
                    f"Version {'zero' if version == 1 else 'one'}.",
                    f"Version {'one' if version == 1 else 'two'}.",
                ),
                "semantic_delta": read["semantic_delta"],
            })  # fmt: skip
            assert len(vault._index.find("memory_id", item["memory_id"])) == 1
            assert vault.count() == 3
    hits = vault.search({"query": "layered memory version", "top_k": 10})["selected_hits"]
    assert len(hits) == 3
    assert all("Version two." in h["content_md"] for h in hits)
    vault.remember({
        "mode": "delete", "memory_id": made[0]["memory_id"],
        "expected_version_id": vault.read(made[0]["memory_id"])["version_id"],
    })  # fmt: skip
    assert vault.count() == 2
    assert vault._index.find("memory_id", made[0]["memory_id"]) == []


def test_a_locked_index_is_reported_as_busy_with_the_way_out(tmp_path, monkeypatch):
    index = Index(tmp_path).open()
    held = index._ix.writer()  # another process's writer holds Whoosh's write lock
    wait = index._ix.writer
    # The same lock, waited for a tenth of a second instead of ten.
    monkeypatch.setattr(index._ix, "writer", lambda **options: wait(**{**options, "timeout": 0.1}))
    try:
        with pytest.raises(VaultBusy) as refused, index.writer():
            pass
    finally:
        held.cancel()
        index.close()
    assert refused.value.message == "the search index is locked by another process"
    assert refused.value.hint == "retry in a moment; `vault-tool doctor` shows which process leads"
    assert refused.value.exit_code == 6


def test_a_file_touched_without_a_change_is_read_as_indexed(vault, vault_path):
    made = vault.remember(create_args())
    path = vault_path / made["path"]
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 5_000_000_000))
    assert vault.read(made["memory_id"])["version_id"] == made["version_id"]


@pytest.mark.parametrize("made_by", ["a tool write", "a hand-made file"])
def test_a_file_made_while_a_catch_up_lists_the_folder_is_indexed_once(vault_path, made_by):
    """Catch-up compares the folder with what the index held when it started; a file made
    in between (a write of the same process, a watcher's sync) is indexed by then, and the
    catch-up must not add it a second time (a search then served the memory twice)."""
    with Vault.open(vault_path) as vault:
        store = vault._intake.store
        listing, made = store.iter_memory_paths, []

        def listed_after_a_file_is_made():
            if not made:
                made.append(True)
                if made_by == "a tool write":
                    vault.remember(create_args("Ana owns the blog engine"))
                else:
                    (vault_path / "blog.md").write_text("# Ana owns the blog engine\n")
                    vault.sync_paths(["blog.md"])
            return listing()

        store.iter_memory_paths = listed_after_a_file_is_made
        vault.catch_up()
        store.iter_memory_paths = listing
        hits = vault.search({"query": "blog engine"})["selected_hits"]
        assert [h["title"] for h in hits] == ["Ana owns the blog engine"]
        assert vault.count() == len(dict(listing()))


@pytest.mark.parametrize("kept_view", ["unreadable", "behind"])
def test_a_catch_up_asks_the_writer_which_files_are_new_when_its_view_is_not_the_writers(
    vault_path, kept_view
):
    """Which files lack a document is asked under the lock of what the writer writes to. The
    kept searcher may not see that: a read of it failed on files a `git clean` removed, or
    it still reads the index of before a rebuild; asked of it, every file looked new and
    was added a second time (seen in the torture after `git clean -xfd`)."""
    with Vault.open(vault_path) as vault:
        index, intake = vault._intake.index, vault._intake
        with index.searcher() as before:  # the kept searcher of before the file was indexed
            pass
        made = vault.remember(create_args("Ana owns the blog engine"))
        if kept_view == "unreadable":

            @contextlib.contextmanager
            def kept():
                raise IndexDamaged("damaged")
                yield

        else:

            @contextlib.contextmanager
            def kept():
                yield before

        index.searcher = kept
        intake.files.index_paths([made["path"]], [], unindexed={made["path"]})
        del index.searcher
        hits = vault.search({"query": "blog engine"})["selected_hits"]
        assert [h["title"] for h in hits] == ["Ana owns the blog engine"]


@pytest.mark.parametrize("how", ["open of a removed index", "clear"])
def test_the_index_folder_is_made_anew_only_under_the_creators_lock(vault_path, monkeypatch, how):
    """Every way of making the folder anew holds one lock: a rebuild's clear and another
    process's open of a removed index, at once, removed each other's folder (seen in the
    torture after `git clean -xfd`: "File exists", and a rebuild that failed)."""
    from vault_tool.storage.processes import flock_holder

    index = Index(vault_path).open()
    held = []
    create = Index._create
    monkeypatch.setattr(
        Index, "_create", lambda self: held.append(flock_holder(self._create_lock)) or create(self)
    )
    if how == "clear":
        index.clear()
    else:
        index.close()
        shutil.rmtree(vault_path / ".vault")
        index.open()
    index.close()
    assert held == [os.getpid()]


def test_a_searcher_of_an_index_made_anew_is_not_taken_for_current_by_its_generation(
    tmp_path,
):
    """Generations count again from 0 in an index folder made anew (a `git clean -xfd`,
    a rebuild in another process). A process whose searcher read the old folder at the
    generation the new one reaches took it for current: it served the old documents, and
    a flush of its journal hid documents in the old segments, so the new ones stayed
    beside their updates (seen in the torture after `git clean -xfd`: files indexed twice)."""
    from vault_tool.engine.hand_edits import parse_memory
    from vault_tool.search.documents import document_for

    def indexed(index: Index, title: str) -> None:
        memory = parse_memory(f"# {title}\n\nSaid once.\n".encode(), "notes/a.md")
        document = document_for(memory, "notes/a.md", version_id="v", blob="b", mtime_ns=1, size=1)
        with index.writer() as writer:
            writer.update_document(**document)

    here = Index(tmp_path).open()
    indexed(here, "Ana owns the blog engine")
    with here.searcher() as searcher:
        generation = searcher.reader().generation()
    shutil.rmtree(tmp_path / ".vault" / "index")
    elsewhere = Index(tmp_path).open()  # made anew, at generation 0
    while elsewhere._ix.latest_generation() < generation:
        indexed(elsewhere, "Bo owns the payroll service")
    assert elsewhere._ix.latest_generation() == generation
    titles = here.read(lambda s: [fields["title"] for fields in s.all_stored_fields()])
    assert titles == ["Bo owns the payroll service"]
    here.close()
    elsewhere.close()


def test_a_file_back_before_a_catch_up_removes_it_stays_indexed(vault_path):
    """A file gone when catch-up lists the folder, and back (and taken in as it was) before
    it takes the lock, is a file the index must keep."""
    with Vault.open(vault_path) as vault:
        made = vault.remember(create_args("Ana owns the blog engine"))
        store, file = vault._intake.store, vault_path / made["path"]
        listing, data = store.iter_memory_paths, file.read_bytes()

        def listed_while_the_file_is_away():
            file.unlink()
            yield from listing()
            file.write_bytes(data)
            vault.sync_paths([made["path"]])

        store.iter_memory_paths = listed_while_the_file_is_away
        vault.catch_up()
        store.iter_memory_paths = listing
        hits = vault.search({"query": "blog engine"})["selected_hits"]
        assert [h["memory_id"] for h in hits] == [made["memory_id"]]
