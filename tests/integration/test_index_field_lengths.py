"""Field lengths read whole (search/readers.py) answer what Whoosh's own per-document reader
answers, for every document and field of a real index on disk with several segments."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import create_args
from vault_tool.engine.vault import Vault


def test_field_lengths_read_whole_are_whoosh_own(vault: Vault, vault_path: Path) -> None:
    (vault_path / "notes").mkdir(exist_ok=True)
    for n in range(6):  # hand-made notes of growing length, and a few tool writes
        words = " ".join(f"word{k}" for k in range(n * 40))
        (vault_path / "notes" / f"note-{n}.md").write_text(f"# Note {n}\n\n{words}\n")
    vault.reindex()
    for title in ("Staging needs the VPN", "Ana owns the billing service", "x"):
        vault.remember(create_args(title))
    index = vault._index
    compared = 0
    with index.searcher() as searcher:
        leaves = [leaf for leaf, _ in searcher.reader().leaf_readers()]
        assert len(leaves) >= 2  # (the reindex's segment and the writes' own)
        for leaf in leaves:
            perdoc = leaf._perdoc
            for docnum in range(leaf.doc_count_all() + 1):
                for field in searcher.schema.names():
                    ours = perdoc.doc_field_length(docnum, field)
                    assert ours == perdoc.whoosh_doc_field_length(docnum, field), (docnum, field)
                    compared += ours is not None and ours > 0
    assert compared > 10
