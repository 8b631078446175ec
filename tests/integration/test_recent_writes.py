"""The journal of recent writes (search/recent.py): searched at once, in every process, the
same whether flushed or not, and never losing a write to a crash."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers import create_args
from vault_tool.engine.vault import Vault
from vault_tool.search import recent
from vault_tool.search.recent import journals


def _update(vault: Vault, memory_id: str, body: str) -> dict:
    read = vault.read(memory_id)
    return vault.remember({
        "mode": "update", "memory_id": memory_id, "expected_version_id": read["version_id"],
        "content_md": f"# {read['title']}\n\n{body}\n", "semantic_delta": read["semantic_delta"],
    })  # fmt: skip


def _delete(vault: Vault, memory_id: str) -> dict:
    version = vault.read(memory_id)["version_id"]
    return vault.remember(
        {"mode": "delete", "memory_id": memory_id, "expected_version_id": version}
    )


def _flush(vault: Vault) -> None:
    with vault._store.write_lock():
        vault._index.flush()


def _ranked(vault: Vault, query: str) -> list[tuple[str, dict, str]]:
    hits = vault.search({"query": query, "top_k": 20}, explain=True)["selected_hits"]
    return [(h["memory_id"], h["score_parts"], h["content_md"]) for h in hits]


def _segments_on_disk(vault: Vault) -> int:
    return vault._index.segment_count()


def _some_writes(vault: Vault) -> list[dict]:
    made = [
        vault.remember(create_args(f"Wombat burrow {n}", body="wombats dig " * (n + 1)))
        for n in range(4)
    ]
    batch = vault.remember({
        "mode": "create",
        "items": [
            {k: v for k, v in create_args(f"Badger {n}", body="badgers dig").items() if k != "mode"}
            for n in range(3)
        ],
    })  # fmt: skip
    _update(vault, made[1]["memory_id"], "wombats dig deep burrows, updated")
    _delete(vault, made[2]["memory_id"])
    return made + batch["results"]


def test_a_write_is_searchable_at_once_before_it_reaches_a_segment_on_disk(vault: Vault):
    before = _segments_on_disk(vault)
    made = vault.remember(create_args("Numbats eat termites", body="Numbats only."))
    assert _segments_on_disk(vault) == before  # in the journal, not a segment of its own
    assert journals(vault._index.dir)
    hits = vault.search({"query": "numbats"})["selected_hits"]
    assert [h["memory_id"] for h in hits] == [made["memory_id"]]
    updated = _update(vault, made["memory_id"], "Numbats eat ants too.")
    assert vault.read(made["memory_id"])["version_id"] == updated["version_id"]
    assert len(vault._index.find("memory_id", made["memory_id"])) == 1
    assert [h["content_md"] for h in vault.search({"query": "numbats"})["selected_hits"]] == [
        "# Numbats eat termites\n\nNumbats eat ants too.\n"
    ]
    _delete(vault, made["memory_id"])
    assert vault.search({"query": "numbats"})["selected_hits"] == []
    assert vault._index.find("memory_id", made["memory_id"]) == []


def test_results_and_scores_are_the_same_before_and_after_the_flush(vault: Vault):
    _some_writes(vault)
    queries = ["wombats dig", "badgers setts", "burrow", "wombats deep updated"]
    in_journal = {q: _ranked(vault, q) for q in queries}
    count = vault.count()
    _flush(vault)
    assert journals(vault._index.dir) == []
    assert {q: _ranked(vault, q) for q in queries} == in_journal
    assert vault.count() == count == 6


def test_another_process_sees_an_acknowledged_write_at_once(vault_path: Path):
    with Vault.open(vault_path) as writer, Vault.open(vault_path) as other:
        other.search({"query": "anything"})  # a searcher already open, before the writes
        made = _some_writes(writer)
        for query in ("wombats dig", "badgers setts"):
            assert _ranked(other, query) == _ranked(writer, query)
        assert other.read(made[1]["memory_id"])["content_md"].endswith("updated\n")
        # Flushed by the other one: each sees every document once, and what comes next.
        _flush(other)
        assert _ranked(writer, "wombats dig") == _ranked(other, "wombats dig")
        later = writer.remember(create_args("Wombat burrow later", body="wombats dig later"))
        assert other.read(later["memory_id"])["title"] == "Wombat burrow later"
        assert writer.count() == other.count() == 7


def test_a_cli_search_in_another_process_finds_a_write_still_in_the_journal(vault: Vault):
    made = vault.remember(create_args("Quokkas smile", body="Quokkas live on Rottnest."))
    assert journals(vault._index.dir)
    out = subprocess.run(
        [sys.executable, "-m", "vault_tool", "search", "quokkas", "--json"],
        cwd=vault.root, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert made["memory_id"] in out.stdout


def test_the_leader_flushes_the_journal_once_it_is_idle(vault: Vault):
    vault.remember(create_args("Echidnas lay eggs"))
    (journal,) = journals(vault._index.dir)
    just_written = time.time() + 60  # (the clock of the file, not of the machine's speed)
    os.utime(journal, (just_written, just_written))
    assert not vault.upkeep.merge_when_idle()
    assert journals(vault._index.dir) == [journal]
    idle = time.time() - recent.IDLE_SECONDS - 1
    os.utime(journal, (idle, idle))
    assert vault.upkeep.merge_when_idle()
    assert journals(vault._index.dir) == []
    assert [h["title"] for h in vault.search({"query": "echidnas"})["selected_hits"]] == [
        "Echidnas lay eggs"
    ]


def test_past_the_hard_bound_a_write_flushes_the_journal_itself(vault: Vault):
    before = _segments_on_disk(vault)
    for n in range(recent.HARD_RECORDS):
        vault.remember(create_args(f"Platypus note {n}", body=f"Platypus number {n}."))
    assert journals(vault._index.dir) == []
    assert _segments_on_disk(vault) == before + 1
    assert vault.search({"query": "platypus"})["total_matches"] == recent.HARD_RECORDS


def test_a_hand_edit_after_a_journaled_write_leaves_one_document_of_the_edit(vault: Vault):
    made = vault.remember(create_args("Dingo packs", body="Dingoes hunt in packs."))
    _update(vault, made["memory_id"], "Dingoes hunt alone too.")
    file = vault.root / made["path"]
    file.write_text(file.read_text().replace("alone too", "at dusk"))
    vault.sync_paths([made["path"]])  # a few hand edits go to the journal too
    assert journals(vault._index.dir)
    for flushed in (False, True):
        if flushed:
            _flush(vault)
        found = vault._index.find("memory_id", made["memory_id"])
        assert [doc.record["content_md"] for doc in found] == [
            "# Dingo packs\n\nDingoes hunt at dusk.\n"
        ]
        assert [h["memory_id"] for h in vault.search({"query": "dusk"})["selected_hits"]] == [
            made["memory_id"]
        ]
        assert vault.search({"query": "alone"})["selected_hits"] == []


def test_many_hand_edits_at_once_go_to_a_segment_of_their_own(vault: Vault):
    folder = vault.root / "pulled"
    folder.mkdir()
    paths = []
    for n in range(recent.SOFT_DOCUMENTS + 1):
        (folder / f"note-{n}.md").write_text(f"# Pulled note {n}\n\nEchidna {n}.\n")
        paths.append(f"pulled/note-{n}.md")
    before = _segments_on_disk(vault)
    vault.sync_paths(paths)
    assert journals(vault._index.dir) == []
    assert _segments_on_disk(vault) == before + 1
    assert vault.search({"query": "echidna"})["total_matches"] == len(paths)


def test_writes_in_the_journal_survive_the_process_being_killed(vault_path: Path):
    code = (
        "import os, sys, json\n"
        "from vault_tool.engine.vault import Vault\n"
        "from tests.helpers import create_args\n"
        "v = Vault.open(sys.argv[1])\n"
        "made = [v.remember(create_args(f'Bilby {n}', body='Bilbies dig.')) for n in range(3)]\n"
        "print(json.dumps([m['memory_id'] for m in made]), flush=True)\n"
        "os._exit(0)\n"  # no close, no flush
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(vault_path)],
        cwd=Path(__file__).parents[2], capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    ids = set(__import__("json").loads(out.stdout))
    assert journals(vault_path / ".vault" / "index")
    with Vault.open(vault_path) as vault:
        hits = vault.search({"query": "bilbies", "top_k": 10})["selected_hits"]
        assert {h["memory_id"] for h in hits} == ids


def test_a_torn_record_is_cut_off_by_the_next_write_and_indexed_again_by_catch_up(
    vault_path: Path,
):
    with Vault.open(vault_path) as vault:
        first = vault.remember(create_args("Kiwi one", body="Kiwis cannot fly."))
        second = vault.remember(create_args("Kiwi two", body="Kiwis lay big eggs."))
        (journal,) = journals(vault._index.dir)
    data = journal.read_bytes()
    journal.write_bytes(data[: len(data) - 40])  # the second record torn by a crash

    def kiwis(vault: Vault) -> set[str]:
        return {h["memory_id"] for h in vault.search({"query": "kiwis"})["selected_hits"]}

    with Vault.open(vault_path, catch_up=False) as vault:
        assert kiwis(vault) == {first["memory_id"]}
        third = vault.remember(create_args("Kiwi three", body="Kiwis are nocturnal."))
    with Vault.open(vault_path, catch_up=False) as vault:  # reads past where the tear was
        assert kiwis(vault) == {first["memory_id"], third["memory_id"]}
        vault.catch_up()  # (what every open does: it compares every file with the index)
        assert kiwis(vault) == {first["memory_id"], second["memory_id"], third["memory_id"]}
        assert vault.count() == 3
