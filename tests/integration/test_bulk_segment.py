"""A segment written term by term (search/bulk_segment.py, posting_blocks.py) is the segment
Whoosh's own writer makes from the same documents: byte for byte, every file of it, when
every block is compressed as Whoosh compresses them; with small blocks left uncompressed,
every other file byte for byte and every term's statistics and blocks, read back through
Whoosh's reader. For terms of one posting and of many blocks, weights that differ within
a block, and fields without lengths. Real Whoosh indexes on disk; a reindex in the
indexing processes uses it."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from typing import Any

import pytest
from whoosh.filedb.filestore import FileStorage
from whoosh.writing import SegmentWriter

from tests.helpers import git
from vault_tool.core.memory import Memory, parse
from vault_tool.engine.file_indexing import BULK_DOCUMENTS
from vault_tool.engine.vault import Vault
from vault_tool.search import posting_blocks
from vault_tool.search.bulk_segment import BulkSegmentWriter
from vault_tool.search.documents import document_for, whoosh_schema

SAMPLE = Path(__file__).resolve().parents[2] / "sample-vault"
WORDS = [
    "billing",
    "kafka",
    "outage",
    "deploy",
    "staging",
    "credentials",
    "redis",
    "terraform",
    "ana",
    "bo",
]


def documents() -> list[dict[str, Any]]:
    """The sample vault's memories, then 400 more that share words (terms of 3+ blocks,
    counts that differ: weights that differ within a block), one with a word 300 times."""
    found = []
    for path in sorted(SAMPLE.rglob("*.md")):
        if path.name == "README.md":
            continue
        relpath = path.relative_to(SAMPLE).as_posix()
        found.append(_document(parse(path.read_text(encoding="utf-8"), relpath), relpath))
    rng = random.Random(5)
    for n in range(400):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 40)))
        text = f"---\nmemory_type: note\ntitle: Note {n}\n---\n# Note {n}\n\n{words}\n"
        relpath = f"note/n-{n}.md"
        found.append(_document(parse(text, relpath), relpath))
    text = f"# Many\n\n{' '.join(['billing'] * 300)} kafka\n"  # (a count past one byte)
    found.append(_document(parse(text, "note/many.md"), "note/many.md"))
    return found


def _document(memory: Memory, relpath: str) -> dict[str, Any]:
    return document_for(memory, relpath, version_id="0" * 40, blob="1" * 40, mtime_ns=5, size=9)


def segment_files(
    folder: Path, writer_class: type, docs: list[dict[str, Any]], pool_bytes: int | None = None
) -> dict:
    """name -> digest of each file of the segment writer_class makes of docs."""
    folder.mkdir()
    ix = FileStorage(str(folder)).create_index(whoosh_schema())
    random.seed(3)  # (the segment's name)
    writer = writer_class(ix, compound=False)
    if pool_bytes is not None:
        writer.pool.limit = pool_bytes
    for doc in docs:
        writer.add_document(**doc)
    writer.commit()
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.iterdir())
        if path.suffix not in (".toc", "") and "LOCK" not in path.name
    }


@pytest.mark.parametrize("pool_bytes", [None, 50_000], ids=["in memory", "in sorted runs"])
def test_a_segment_written_term_by_term_is_the_one_whoosh_writes(
    tmp_path: Path, pool_bytes: int | None, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(posting_blocks, "COMPRESS_FROM", 0)  # (every block, as Whoosh's)
    docs = documents()
    theirs = segment_files(tmp_path / "whoosh", SegmentWriter, docs)
    ours = segment_files(tmp_path / "bulk", BulkSegmentWriter, docs, pool_bytes)
    assert len(ours) >= 5  # postings, terms, columns, stored fields, lengths
    assert ours == theirs


def test_small_blocks_are_left_uncompressed_and_read_back_as_whoosh_wrote_them(tmp_path: Path):
    docs = documents()
    theirs = segment_files(tmp_path / "whoosh", SegmentWriter, docs)
    ours = segment_files(tmp_path / "bulk", BulkSegmentWriter, docs)
    stored = {".pst", ".trm"}  # (the postings, and the term infos that say where they are)
    assert {n: d for n, d in ours.items() if Path(n).suffix not in stored} == {
        n: d for n, d in theirs.items() if Path(n).suffix not in stored
    }
    their_terms, their_compressions = terms_read_back(tmp_path / "whoosh")
    our_terms, our_compressions = terms_read_back(tmp_path / "bulk")
    assert our_terms == their_terms
    assert len(our_terms) > 1000
    assert their_compressions == {3}
    assert our_compressions == {0, 3}  # (one-posting terms stored as they are, long ones not)
    assert _size(tmp_path / "bulk", ".pst") < _size(tmp_path / "whoosh", ".pst")


def terms_read_back(folder: Path) -> tuple[dict, set[int]]:
    """(field, term) -> its term info's statistics and every posting with its block's, and
    the compressions its blocks were stored with, as Whoosh's reader reads them."""
    terms, compressions = {}, set()
    with FileStorage(str(folder)).open_index().reader() as reader:
        for field_name, text in reader.all_terms():
            info = reader.term_info(field_name, text)
            matcher = reader.postings(field_name, text)
            postings = []
            while matcher.is_active():
                compressions.add(matcher._compression)  # (the block's, from its info)
                postings.append(
                    (
                        matcher.id(),
                        matcher.weight(),
                        matcher.value(),
                        matcher.block_max_weight(),
                        matcher.block_min_length(),
                        matcher.block_max_length(),
                        matcher.block_max_id(),
                    )
                )
                matcher.next()
            statistics = (info.weight(), info.doc_frequency(), info.min_length())
            statistics += (info.max_length(), info.max_weight(), info.min_id(), info.max_id())
            terms[(field_name, text)] = (statistics, postings)
    return terms, compressions


def _size(folder: Path, suffix: str) -> int:
    return sum(path.stat().st_size for path in folder.iterdir() if path.suffix == suffix)


def test_a_reindex_of_many_files_finds_each_by_its_words_and_counts_them_once(vault_path: Path):
    folder = vault_path / "note"
    folder.mkdir()
    rng = random.Random(9)
    for n in range(BULK_DOCUMENTS + 50):  # (enough for the indexing processes)
        words = " ".join(rng.choice(WORDS) for _ in range(8))
        (folder / f"n-{n}.md").write_text(f"# Note number{n}\n\n{words} marker{n}\n")
    git(vault_path, "add", "note")
    git(vault_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "Notes")
    with Vault.open(vault_path, catch_up=False) as vault:
        report = vault.reindex()
        assert len(report.indexed) == BULK_DOCUMENTS + 50
        assert vault.count() == BULK_DOCUMENTS + 50
        for n in (0, 777, BULK_DOCUMENTS + 49):
            hits = vault.search({"query": f"marker{n}"})["selected_hits"]
            assert [hit["path"] for hit in hits] == [f"note/n-{n}.md"]
