"""Words scored by column or from kept scores (search/impacts.py) rank exactly as posting
by posting, every time.

A real on-disk index of several segments, with a deleted document, pinned, tagged and
superseded memories, identical notes under different paths (ties) and a vocabulary so small
that every word is in most documents. Each query is ranked as before (posting by posting),
by column, and from each word's kept scores; the hits (ids, paths, every part of every
score, their order) and the count of matches must be the same, to the last bit.
"""

from __future__ import annotations

import random
from array import array
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from vault_tool.core import search_call
from vault_tool.core.memory import Entity, Memory
from vault_tool.search import decoded, impacts, postings, ranking, sparse_columns
from vault_tool.search.documents import document_for
from vault_tool.search.index import Index

WORDS = ["amber", "basalt", "cobalt", "delta", "ember", "fjord", "garnet", "harbor", "indigo"]
NOW = datetime(2026, 1, 1, tzinfo=UTC)
QUERIES = [
    "amber",
    "amber basalt",
    "cobalt delta ember fjord",
    "garnet harbor indigo amber basalt",
    "amber zzzunknown",
    "basalt -cobalt",
    "tag:blue delta",
    "type:decision ember garnet",
    '"amber basalt" delta',
]
JUDGED = [("m0007", 1, "amber basalt"), ("m0011", -1, "amber"), ("m0003", 1, "delta ember")]


def note(n: int, rng: random.Random) -> tuple[Memory, str]:
    # Every fifth note repeats the one before it under another path: equal scores.
    body = " ".join(rng.choices(WORDS, k=rng.randint(3, 40)))
    title = f"Note {rng.choice(WORDS)}"
    made = Memory(
        id=f"m{n:04d}",
        memory_type="decision" if n % 3 == 0 else "note",
        title=title,
        body=f"# {title}\n\n{body}\n",
        tags=("blue",) if n % 4 == 0 else (),
        pinned=n % 17 == 0,
        supersedes=(f"m{n - 1:04d}",) if n % 23 == 0 else (),
        entities=(Entity("amber team", "team", "the team of basalt"),) if n % 7 == 0 else (),
    )
    return made, f"notes/n{n:04d}.md"


@pytest.fixture
def index(tmp_path: Path):
    """Three segments of 120 notes (every fifth a copy of the one before), one deleted."""
    rng = random.Random(5)
    opened = Index(tmp_path).open()
    made: list[tuple[Memory, str]] = []
    for n in range(120):
        memory, path = note(n, rng)
        if n % 5 == 4:
            memory = replace(made[-1][0], id=memory.id)
        made.append((memory, path))
    for start in range(0, 120, 40):
        with opened.writer() as writer:
            for memory, path in made[start : start + 40]:
                fields = document_for(memory, path, version_id="v", blob="b", mtime_ns=1, size=1)
                writer.add_document(**fields)
    with opened.writer() as writer:
        writer.delete_by_term("path", "notes/n0010.md")
    yield opened
    opened.close()


def ranked(
    index: Index, query: str, columns: bool | None, monkeypatch, common_minimum: int = 1000
) -> tuple[list, int]:
    """The hits and count of a query: by column, by kept word scores (columns False), or
    (columns None) posting by posting, every time, as ranking did before either."""
    monkeypatch.setattr(impacts, "COLUMNS_FROM", 0 if columns else 10**9)
    every_time = columns is None
    monkeypatch.setattr(
        ranking, "text_scores", postings.bm25_scores if every_time else impacts.text_scores
    )
    monkeypatch.setattr(
        ranking, "add_scores", postings.add_bm25 if every_time else impacts.add_scores
    )
    # Below COMMON_MINIMUM documents no word is dropped as too common: at 0, the words in
    # over a fifth of them are, and then added back for the best candidates only.
    monkeypatch.setattr(ranking, "COMMON_MINIMUM", common_minimum)
    controls = search_call.check_search({"query": query, "top_k": 8}).controls
    hits, total = index.read(lambda s: ranking.rank(s, query, controls, NOW, JUDGED))
    return [(h.memory_id, h.fields["path"], h.parts, h.score) for h in hits], total


@pytest.mark.parametrize("numpy_from", [0, 10**9], ids=["numpy", "python"])
@pytest.mark.parametrize("common_minimum", [1000, 0])
@pytest.mark.parametrize("query", QUERIES)
def test_columns_rank_exactly_as_postings(
    index: Index, query: str, common_minimum: int, numpy_from: int, monkeypatch
) -> None:
    # (with numpy, as in a large vault: the columns kept as their matches, sparse_columns.py)
    monkeypatch.setattr(decoded, "NUMPY_FROM", numpy_from)
    by_postings = ranked(index, query, None, monkeypatch, common_minimum)
    assert ranked(index, query, True, monkeypatch, common_minimum) == by_postings
    assert ranked(index, query, False, monkeypatch, common_minimum) == by_postings
    # Asked again: from what the first asking kept.
    assert ranked(index, query, True, monkeypatch, common_minimum) == by_postings
    assert ranked(index, query, False, monkeypatch, common_minimum) == by_postings
    assert by_postings[0], query  # (every query has hits: the comparison is not empty)


def test_dropped_common_words_are_added_back_from_columns(index: Index, monkeypatch) -> None:
    monkeypatch.setattr(impacts, "COLUMNS_FROM", 0)

    def check(searcher) -> None:
        best = dict(list(postings.bm25_scores(searcher, "all", ["amber"], None, None).items())[:30])
        words = ["basalt", "cobalt", "zzzunknown"]
        expected = postings.add_bm25(searcher, "all", words, best)
        # The first time from the postings, then (the words came back) from columns.
        assert impacts.add_scores(searcher, "all", words, best) == expected
        assert ("all", "basalt") not in impacts._kept(searcher)
        assert impacts.add_scores(searcher, "all", words, best) == expected
        assert impacts._kept(searcher)[("all", "basalt")] is not None

    index.read(check)


def test_every_word_is_common_so_the_columns_are_used(index: Index, monkeypatch) -> None:
    monkeypatch.setattr(impacts, "COLUMNS_FROM", 0)

    def check(searcher) -> None:
        for word in WORDS:
            scores = impacts.text_scores(searcher, "all", [word], None, None)
            assert isinstance(scores, impacts.ColumnScores)
            assert dict(scores.top(1000, postings.columns(searcher)["path"])) == (
                postings.bm25_scores(searcher, "all", [word], None, None)
            )
        assert not impacts.worth_columns(searcher, "all", ["zzzunknown"])

    index.read(check)


@pytest.mark.parametrize("numpy_from", [0, 10**9], ids=["numpy", "python"])
def test_ties_keep_path_order_and_the_count_skips_hidden_and_deleted(
    index: Index, monkeypatch, numpy_from: int
) -> None:
    monkeypatch.setattr(impacts, "COLUMNS_FROM", 0)
    monkeypatch.setattr(decoded, "NUMPY_FROM", numpy_from)  # (a column's best, chosen so)
    with_numpy = numpy_from == 0

    def check(searcher) -> None:
        path = postings.columns(searcher)["path"]
        # One word: its matches in the order kept per column (without numpy: with it, its
        # best are chosen from the column as for several); more: columns added up.
        several = (["amber", "basalt"], ["cobalt", "zzzunknown", "delta", "ember"])
        for words in (["amber"], *several):
            full = postings.bm25_scores(searcher, "all", words, None, None)
            hidden = set(sorted(full)[:5])
            allow = set(sorted(full)[::2])
            for allowed, hide in ((None, None), (allow, None), (None, hidden), (allow, hidden)):
                expected = postings.bm25_scores(searcher, "all", words, allowed, hide)
                impacts.column_scores(searcher, "all", words, allowed, hide)  # (asked once)
                got = impacts.column_scores(searcher, "all", words, allowed, hide)
                assert (got.ranked is not None) == (len(words) == 1 and not with_numpy)
                assert len(got) == len(expected)
                for n in (1, 3, 15, len(expected) + 5):
                    assert got.top(n, path) == postings.top_scored(searcher, expected, n)
                assert impacts.sparse_scores(searcher, "all", words, allowed, hide) == expected
            tied = [s for s in full.values() if list(full.values()).count(s) > 1]
            assert tied  # (the copies make equal scores, so path order is exercised)

    index.read(check)


def test_a_large_vaults_columns_are_kept_as_their_matches_and_made_whole_bit_for_bit(
    index: Index, monkeypatch
) -> None:
    monkeypatch.setattr(impacts, "COLUMNS_FROM", 0)
    monkeypatch.setattr(decoded, "NUMPY_FROM", 0)

    def check(searcher) -> None:
        size = searcher.doc_count_all()
        forms = set()
        for word in [*WORDS, "blue", "team"]:  # (a tag in a quarter of the notes, an entity)
            made = impacts._column(searcher, "all", word)
            kept = impacts._kept(searcher)[("all", word)]
            forms.add(type(kept))
            assert sparse_columns.held(kept) <= size  # (whole where that is smaller)
            again = impacts._column(searcher, "all", word)
            assert again.tobytes() == made.tobytes()
            by_postings = postings.bm25_scores(searcher, "all", [word], None, None)
            assert {d: s for d, s in enumerate(again) if s} == by_postings
        assert forms == {sparse_columns.Matches, array}  # (both forms are exercised)

    index.read(check)


def test_warming_a_large_vault_fills_the_sparse_budget_without_dropping_a_column(
    index: Index, monkeypatch
) -> None:
    monkeypatch.setattr(impacts, "COLUMNS_FROM", 0)
    monkeypatch.setattr(decoded, "NUMPY_FROM", 0)

    def warmed(searcher) -> None:
        size = searcher.doc_count_all()
        frequencies = sorted(_frequencies(searcher).items(), key=lambda item: -item[1])
        three = sum(sparse_columns.cost(size, df) for _, df in frequencies[:3])
        monkeypatch.setattr(sparse_columns, "KEPT_SPARSE_DOUBLES", three)
        assert impacts.warm(searcher, lambda: False) == 3
        assert {word for _, word in impacts._kept(searcher)} == {w for w, _ in frequencies[:3]}
        assert impacts.warm(searcher, lambda: False) == 0  # (full: nothing is dropped)

    index.read(warmed)


def test_a_new_generation_gets_new_columns(index: Index, monkeypatch) -> None:
    """A write changes every word's idf and the average length: columns are per generation."""
    monkeypatch.setattr(impacts, "COLUMNS_FROM", 0)
    before = ranked(index, "amber basalt", True, monkeypatch)
    memory = Memory(id="m9999", memory_type="note", title="Amber", body="# Amber\n\namber amber\n")
    with index.writer() as writer:
        fields = document_for(memory, "notes/new.md", version_id="v", blob="b", mtime_ns=1, size=1)
        writer.add_document(**fields)
    after = ranked(index, "amber basalt", True, monkeypatch)
    assert after == ranked(index, "amber basalt", None, monkeypatch)
    assert ranked(index, "amber basalt", False, monkeypatch) == after
    assert after != before


def test_a_full_set_of_columns_gives_way_only_to_a_word_asked_for_more_often(
    index: Index, monkeypatch
) -> None:
    """Room for two columns and three words asked in turn: making each anew would evict the
    next one needed, so the third is scored without being kept until it is asked for more
    often than the least recently used; rankings stay those of the postings throughout."""
    size = index.read(lambda s: s.doc_count_all())
    monkeypatch.setattr(impacts, "KEPT_DOUBLES", 2 * size)

    def kept_words() -> set[str]:
        kept = index.read(lambda s: dict(impacts._kept(s)))
        return {word for (_, word), column in kept.items() if column is not None}

    for word in ("amber", "basalt", "cobalt"):
        assert ranked(index, word, True, monkeypatch) == ranked(index, word, None, monkeypatch)
    assert kept_words() == {"amber", "basalt"}
    assert ranked(index, "cobalt", True, monkeypatch) == ranked(index, "cobalt", None, monkeypatch)
    assert kept_words() == {"basalt", "cobalt"}  # asked twice: amber, asked once, gives way


def _frequencies(searcher) -> dict[str, int]:
    """Every word of the field -> how many documents hold it."""
    words = [w.decode() for w in searcher.reader().lexicon("all")]
    return {w: postings.doc_frequency(searcher, "all", w) for w in words}


def test_warming_makes_the_most_common_words_columns_and_ranks_as_before(
    index: Index, monkeypatch
) -> None:
    by_postings = {q: ranked(index, q, None, monkeypatch) for q in QUERIES}
    monkeypatch.setattr(impacts, "COLUMNS_FROM", 0)
    size = index.read(lambda s: s.doc_count_all())
    monkeypatch.setattr(impacts, "KEPT_DOUBLES", 3 * size)  # (room for three of nine words)

    def warmed(searcher) -> None:
        assert impacts.warm(searcher, lambda: False) == 3
        kept = impacts._kept(searcher)
        frequencies = _frequencies(searcher)
        highest = sorted(frequencies.values(), reverse=True)[:3]
        assert sorted((frequencies[word] for _, word in kept), reverse=True) == highest
        assert impacts.warm(searcher, lambda: False) == 0  # (full: nothing is dropped)

    index.read(warmed)
    for query in QUERIES:
        assert ranked(index, query, True, monkeypatch) == by_postings[query]


def test_warming_stops_as_soon_as_a_call_comes_in(index: Index, monkeypatch) -> None:
    monkeypatch.setattr(impacts, "COLUMNS_FROM", 0)

    def warmed(searcher) -> None:
        kept = impacts._kept(searcher)
        assert impacts.warm(searcher, lambda: True) == 0
        assert len(kept) == 0
        assert impacts.warm(searcher, lambda: len(kept) >= 2) == 2
        assert len(kept) == 2

    index.read(warmed)


def test_a_column_made_ahead_gives_way_to_one_a_query_asks_for(index: Index, monkeypatch) -> None:
    monkeypatch.setattr(impacts, "COLUMNS_FROM", 0)
    size = index.read(lambda s: s.doc_count_all())
    monkeypatch.setattr(impacts, "KEPT_DOUBLES", 2 * size)

    def asked_for_the_least_common(searcher) -> None:
        assert impacts.warm(searcher, lambda: False) == 2
        made_ahead = {word for _, word in impacts._kept(searcher)}
        asked = next(w for w in WORDS if w not in made_ahead)
        impacts.text_scores(searcher, "all", [asked], None, None)
        kept = {word for (_, word), column in impacts._kept(searcher).items() if column}
        assert asked in kept and len(kept) == 2

    index.read(asked_for_the_least_common)


def test_warming_reads_the_columns_and_the_word_sets_every_ranked_query_reads_first(
    index: Index,
) -> None:
    def warmed(searcher) -> None:
        leaves = [leaf for leaf, _ in searcher.reader().leaf_readers()]
        kept = lambda reader: reader.__dict__.get(postings._KEPT, {})  # noqa: E731
        postings.warm(searcher, lambda: True)  # (the columns are read whatever comes)
        assert "columns" in kept(searcher.reader())
        assert not any("words of glosses" in kept(leaf) for leaf in leaves)
        postings.warm(searcher, lambda: False)
        for leaf in leaves:
            assert {"words of glosses", "words of link_keys"} <= set(kept(leaf))
        # Each column read in one piece, to the values Whoosh reads one by one.
        for name in ("path", "memory_id"):
            assert all(postings._texts_in_one_read(leaf, name) is not None for leaf in leaves)
            by_whoosh = [v for leaf in leaves for v in leaf.column_reader(name)]
            assert postings.columns(searcher)[name] == by_whoosh
        assert "columns" in kept(searcher.reader())

    index.read(warmed)
