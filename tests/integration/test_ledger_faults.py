"""The retrieval ledger under faults: a search answers on a full disk, a short append is
finished, and a ledger folder removed under a running process (`git clean -xfd`) is made again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.faults import Fault, Faults
from tests.helpers import create_args
from vault_tool.engine.vault import Vault


def searches(vault: Vault) -> list[dict]:
    return list(vault.ledger_records("search"))


def test_a_search_answers_when_the_disk_is_too_full_to_record_it(vault: Vault):
    made = vault.remember(create_args("Wombats dig burrows"))

    with Faults(Fault("write", 1, "enospc")) as faults:
        found = vault.search({"query": "wombats"})

    assert faults.counts["write"] >= 1
    assert [h["memory_id"] for h in found["selected_hits"]] == [made["memory_id"]]
    assert searches(vault) == []


def test_a_short_append_to_the_ledger_is_finished(vault: Vault):
    vault.remember(create_args("Wombats dig burrows"))

    with Faults(Fault("write", 1, "short")) as faults:
        vault.search({"query": "wombats"})

    assert faults.counts["write"] == 2  # half the line, then the rest

    (record,) = searches(vault)
    assert record["query"] == "wombats"
    for path in vault.places.ledger.glob("*.jsonl"):
        for line in path.read_text().splitlines():
            json.loads(line)  # no torn line


def test_a_ledger_folder_removed_under_a_running_process_is_made_again(vault_path: Path):
    opened = Vault.open(vault_path)
    opened.remember(create_args("Wombats dig burrows"))
    opened.search({"query": "wombats"})
    shutil.rmtree(opened.places.ledger)

    opened.close()  # syncs the file it wrote, which is gone
    with Vault.open(vault_path) as reopened:
        reopened.search({"query": "burrows"})
        assert [r["query"] for r in searches(reopened)] == ["burrows"]
