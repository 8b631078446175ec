"""The ledger's batched fsync: every search record is synced soon after it is written, by
one thread of the process, however many bursts of searches come (not a thread per burst)."""

from __future__ import annotations

import threading

from tests.faults import Faults
from tests.helpers import create_args, eventually
from vault_tool.engine import ledger
from vault_tool.engine.vault import Vault


def syncers() -> set[int | None]:
    return {t.ident for t in threading.enumerate() if t.name == "ledger-fsync"}


def test_bursts_of_searches_are_synced_by_one_thread(vault: Vault) -> None:
    vault.remember(create_args("Wombats dig burrows"))
    seen: set[int | None] = set()
    for _ in range(3):  # bursts, each synced before the next
        with Faults() as steps:
            for _ in range(5):
                vault.search({"query": "wombats"})
            eventually(lambda steps=steps: steps.counts["fsync"] >= 1, what="the ledger synced")
        assert not vault._ledger._unsynced
        seen |= syncers()
    assert len(seen) == 1


def test_two_vaults_share_the_thread_and_each_is_synced(vault: Vault, tmp_path) -> None:
    other_path = tmp_path / "other"
    Vault.create(other_path)
    with Vault.open(other_path) as other, Faults() as steps:
        vault.search({"query": "wombats"})
        other.search({"query": "wombats"})
        eventually(lambda: steps.counts["fsync"] >= 2, what="both ledgers synced")
        assert not vault._ledger._unsynced and not other._ledger._unsynced
    assert len(syncers()) == 1


def test_close_syncs_at_once_and_nothing_is_left_due(vault_path) -> None:
    opened = Vault.open(vault_path)
    with Faults() as steps:
        opened.search({"query": "wombats"})
        opened.close()
        assert steps.counts["fsync"] >= 1
    assert opened._ledger not in ledger._SYNCER._due
