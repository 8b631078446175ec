"""The dense index of the semantic extra over a real vault: its memories embedded once each,
kept in step with the search index in the background, safe to share and to damage."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.helpers import create_args, delta, git
from vault_tool.search import dense

pytestmark = pytest.mark.skipif(
    not dense.available(),
    reason="the semantic extra is not installed (pip install -e '.[semantic]')",
)

BILLING = ("Ana owns the billing service", "She answers for every invoice it sends.")
GARDEN = ("The office garden gets watered on Fridays", "Tomatoes and basil by the window.")
ONCALL = ("Ben leads the on-call rota", "Pages go to him first this quarter.")


@pytest.fixture
def stores(vault, vault_path: Path):
    """The vault's search index (a second reader of it) and a dense index beside it."""
    from vault_tool.engine.embedding import EmbeddingWorker
    from vault_tool.search.index import Index

    index = Index(vault_path).open()
    store = dense.DenseIndex.open(index.dir)
    yield index, store, EmbeddingWorker(index, store, pause=0.0)
    index.close()


def remember(vault, title: str, body: str) -> dict:
    return vault.remember(create_args(title, body))


def test_every_memory_is_embedded_once_and_found_by_meaning(vault, stores) -> None:
    _index, store, worker = stores
    billing, garden = remember(vault, *BILLING)["memory_id"], remember(vault, *GARDEN)["memory_id"]
    assert worker.catch_up() == 2
    assert worker.catch_up() == 0  # unchanged files are never embedded again
    assert store.ready_for([billing, garden])
    assert store.nearest("who is responsible for invoices", 1)[0][0] == billing
    near = store.similarities("watering the plants", [billing, garden, "no-such-id"])
    assert set(near) == {billing, garden}
    assert near[garden] > near[billing]


def test_a_changed_memory_is_embedded_again_and_a_deleted_one_dropped(vault, stores) -> None:
    _index, store, worker = stores
    billing, garden = remember(vault, *BILLING), remember(vault, *GARDEN)
    worker.catch_up()
    before = store.blob_of(billing["memory_id"])
    vault.remember(
        {
            "mode": "update",
            "memory_id": billing["memory_id"],
            "expected_version_id": billing["version_id"],
            "content_md": f"# {BILLING[0]}\n\nShe handed the invoices to Ben.\n",
            "semantic_delta": delta(BILLING[0]),
        }
    )
    vault.remember(
        {
            "mode": "delete",
            "memory_id": garden["memory_id"],
            "expected_version_id": garden["version_id"],
        }
    )
    assert worker.catch_up() == 1
    assert store.blob_of(billing["memory_id"]) not in (None, before)
    assert not store.ready_for([garden["memory_id"]])
    assert len(store) == 1


def test_the_worker_embeds_in_the_background_after_a_nudge(vault, stores) -> None:
    _index, store, worker = stores
    worker.start()
    try:
        assert worker.wait_until_idle(60)
        oncall = remember(vault, *ONCALL)["memory_id"]
        assert not store.ready_for([oncall])
        worker.nudge()
        assert worker.wait_until_idle(60)
        assert store.ready_for([oncall])
        assert worker.pending == 0
    finally:
        worker.stop()


def test_the_vectors_stay_out_of_git(vault, vault_path: Path, stores) -> None:
    _index, store, worker = stores
    remember(vault, *BILLING)
    worker.catch_up()
    assert store.path.is_file() and store.path.is_relative_to(vault_path / ".vault" / "index")
    assert git(vault_path, "status", "--porcelain", "--ignored=no") == ""


@pytest.mark.parametrize("damage", [b"", b"not a zip file at all", None])
def test_a_damaged_file_is_rebuilt_not_fatal(vault, stores, damage: bytes | None) -> None:
    index, store, worker = stores
    billing = remember(vault, *BILLING)["memory_id"]
    worker.catch_up()
    if damage is None:  # cut short: what a torn write would leave without the rename
        data = store.path.read_bytes()
        store.path.write_bytes(data[: len(data) // 2])
    else:
        store.path.write_bytes(damage)
    reopened = dense.DenseIndex.open(store.folder.parent)
    assert len(reopened) == 0
    assert reopened.nearest("invoices", 3) == []
    assert store.similarities("invoices", [billing]) == {}  # the live one reads it again
    assert type(worker)(index, reopened).catch_up() == 1
    assert reopened.ready_for([billing])


def test_vectors_made_by_another_model_are_dropped(vault, stores, caplog) -> None:
    import numpy as np

    index, store, worker = stores
    caplog.set_level(logging.INFO, logger=dense.__name__)
    billing = remember(vault, *BILLING)["memory_id"]
    store.folder.mkdir(parents=True)
    with open(store.path, "wb") as f:
        np.savez(
            f,
            meta=np.array(json.dumps({**store.meta, "name": "another model"})),
            ids=np.array([billing]),
            blobs=np.array(["x"]),
            matrix=np.zeros((1, store.meta["dims"]), dtype=np.int8),
            scales=np.ones(1, dtype=np.float32),
        )
    reopened = dense.DenseIndex.open(store.folder.parent)
    assert not reopened.ready_for([billing])
    assert "another model" in caplog.text
    assert type(worker)(index, reopened).catch_up() == 1  # made again with this model
    assert reopened.ready_for([billing])


def test_another_process_writes_are_seen_and_merged_not_lost(tmp_path: Path) -> None:
    ours = dense.DenseIndex.open(tmp_path)
    ours.update([("a", "1", "Ana owns the billing service")])
    other = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from vault_tool.search.dense import DenseIndex\n"
            "d = DenseIndex.open(Path(sys.argv[1]))\n"
            "d.update([('b', '1', 'the garden is watered on Fridays')])\n"
            "print(len(d))",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert other.stdout.strip() == "2", other.stderr
    assert ours.ready_for(["a", "b"])  # seen at the next call
    ours.update([("c", "1", "Ben leads the on-call rota")])  # merged with b, not over it
    assert dense.DenseIndex.open(tmp_path).ready_for(["a", "b", "c"])


def test_a_complete_update_drops_what_it_was_not_given(tmp_path: Path) -> None:
    store = dense.DenseIndex.open(tmp_path)
    called: list[str] = []

    def text(value: str):
        return lambda: called.append(value) or value

    assert store.update([("a", "1", text("first")), ("b", "1", text("second"))]) == 2
    assert store.update([("a", "1", text("again"))], complete=True) == 0
    assert called == ["first", "second"]  # an unchanged entry's text is never read
    assert not store.ready_for(["b"]) and store.ready_for(["a"])
    store.remove(["a"])
    assert len(dense.DenseIndex.open(tmp_path)) == 0


def test_readers_never_see_a_half_made_state(tmp_path: Path) -> None:
    store = dense.DenseIndex.open(tmp_path)
    words = [
        "billing",
        "invoices",
        "garden",
        "rota",
        "pages",
        "basil",
        "deploy",
        "review",
        "budget",
    ]
    entries = [(f"m{i}", "1", " ".join(words[i % 9 :] + words[: i % 9])) for i in range(64)]
    problems: list[BaseException] = []
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            try:
                found = store.nearest("invoices for billing", 5)
                assert len(found) <= 5 and all(m.startswith("m") for m, _ in found)
                cosines = [c for _, c in found]
                assert cosines == sorted(cosines, reverse=True)
            except BaseException as problem:
                problems.append(problem)
                return

    reader = threading.Thread(target=read)
    reader.start()
    try:
        assert store.update(entries, complete=True) == 64
    finally:
        done.set()
        reader.join()
    assert problems == []
    assert dense.DenseIndex.open(tmp_path).ready_for(m for m, _, _ in entries)
    assert not list(store.folder.glob(".*tmp*"))  # no temp file left behind


def test_an_update_told_to_stop_keeps_what_it_embedded(tmp_path: Path) -> None:
    store = dense.DenseIndex.open(tmp_path)
    size = store.model["chunk"]
    entries = [
        (f"m{i}", "1", f"note number {i} about the billing service") for i in range(size + 1)
    ]
    asked: list[int] = []

    def stopping() -> bool:
        asked.append(len(store))
        return len(asked) > 1  # after the first chunk

    assert store.update(entries, stopping=stopping) == size
    reopened = dense.DenseIndex.open(tmp_path)
    assert len(reopened) == size and not reopened.ready_for([f"m{size}"])
    assert store.update(entries) == 1  # the rest, at the next pass
