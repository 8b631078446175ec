"""A word's postings decoded once per segment and scored in one pass, with numpy or without
(search/decoded.py), give postings.bm25_scores's scores to the last bit, generation after
generation: after
documents are added (a new segment) and deleted (deletions beside a kept segment), and
for words in one segment, in several, and in none. Real Whoosh indexes on disk."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from vault_tool.core.memory import Entity, Memory
from vault_tool.search import decoded, postings
from vault_tool.search.documents import document_for
from vault_tool.search.index import Index

WORDS = ["amber", "basalt", "cobalt", "delta", "ember", "fjord", "garnet", "harbor"]


def add_notes(index: Index, first: int, count: int, rng: random.Random) -> None:
    with index.writer() as writer:
        for n in range(first, first + count):
            body = " ".join(rng.choices(WORDS, k=rng.randint(1, 60)))
            memory = Memory(
                id=f"m{n:04d}",
                memory_type="note",
                title=f"Note {n} {rng.choice(WORDS)}",
                body=f"# Note {n}\n\n{body} only{n}\n",
                entities=(Entity("Ana", "person", f"the {rng.choice(WORDS)} lead"),),
            )
            path = f"notes/n{n:04d}.md"
            fields = document_for(memory, path, version_id="v", blob="b", mtime_ns=1, size=1)
            writer.add_document(**fields)


def same_as_walked(index: Index) -> None:
    def check(searcher) -> None:
        for field_name in ("all", "glosses"):
            for word in [*WORDS, "note", "only7", "lead", "zzzabsent"]:
                walked = postings.bm25_scores(searcher, field_name, [word], None, None)
                found = decoded.word_scores(searcher, field_name, word)
                assert found == walked, (field_name, word)
                assert list(found) == list(walked)  # (docnum order)
                column = decoded.word_column(searcher, field_name, word)
                assert column is not None and len(column) == searcher.doc_count_all()
                assert {docnum: s for docnum, s in enumerate(column) if s} == walked

    index.read(check)


@pytest.fixture
def index(tmp_path: Path):
    opened = Index(tmp_path).open()
    yield opened
    opened.close()


@pytest.mark.parametrize("numpy_from", [10**9, 0], ids=["lists", "numpy"])
def test_decoded_scores_are_the_walked_ones_across_generations(
    index: Index, monkeypatch, numpy_from: int
):
    monkeypatch.setattr(decoded, "NUMPY_FROM", numpy_from)
    decoded._kept.clear()
    decoded._held[0] = 0
    rng = random.Random(3)
    add_notes(index, 0, 150, rng)
    add_notes(index, 150, 90, rng)
    same_as_walked(index)

    decodes: list[tuple] = []
    real = decoded._decode
    monkeypatch.setattr(decoded, "_decode", lambda *a: decodes.append(a[1:]) or real(*a))
    with index.writer() as writer:  # deletions beside the kept segments, no new postings
        for n in (0, 7, 151, 239):
            writer.delete_by_term("path", f"notes/n{n:04d}.md")
    same_as_walked(index)
    assert decodes == []  # (the segments' postings were decoded in the first generation)

    add_notes(index, 240, 30, rng)  # a new segment, and a new average field length
    same_as_walked(index)
    assert decodes and all(word in (*WORDS, "note", "only7", "lead") for _, word in decodes)


def test_kept_postings_are_bounded(index: Index, monkeypatch):
    monkeypatch.setattr(decoded, "KEPT_POSTINGS", 50)
    monkeypatch.setattr(decoded, "KEPT_PER_DOCUMENT", 0)
    decoded._kept.clear()
    decoded._held[0] = 0
    add_notes(index, 0, 120, random.Random(4))
    same_as_walked(index)
    assert decoded._held[0] <= 50 or len(decoded._kept) == 1
