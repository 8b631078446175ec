"""The fast paths over Whoosh's internals give Whoosh's own answers, on a real on-disk index.

Each test names the private part of Whoosh it relies on and asserts it is there, so a
Whoosh upgrade that changes one fails here rather than slowing search down in silence or
changing its scores.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vault_tool.core.memory import Entity, Fact, Memory
from vault_tool.core.text import query_words
from vault_tool.search import postings
from vault_tool.search.documents import document_for
from vault_tool.search.index import Index

TEAM = Entity("platform team", "team", "the team that runs the platform")
BATCHES = [
    [
        ("Billing service restarts", "The billing service restarts when Kafka restarts."),
        ("Billing invoices", "Invoices are issued by the billing service, billing daily."),
        ("Search service region", "The search service runs in eu-west-1."),
    ],
    [
        ("Kafka upgrade", "Kafka was upgraded; the billing service was restarted twice."),
        ("Pager rota", "The platform team keeps the pager rota for every service."),
    ],
    [
        ("Billing worker", "The billing worker retries failed invoices with a back off."),
        ("Audit service", "The audit service stores every event for a year, billing too."),
        ("A short one", "Billing."),
    ],
]
DELETED = "notes/kafka-upgrade.md"
WORDS = query_words("billing service kafka invoices platform team restarts")


def memory(title: str, body: str) -> Memory:
    thing = Entity(title.lower(), "service", f"the {title.lower()}")
    return Memory(
        memory_type="fact",
        title=title,
        body=f"# {title}\n\n{body}\n",
        entities=(TEAM, thing),
        facts=(Fact("platform team", "runs", thing.n),),
        tags=("ops",),
    )


def path_of(title: str) -> str:
    return f"notes/{title.lower().replace(' ', '-')}.md"


@pytest.fixture
def index(tmp_path: Path):
    """An index of three segments (one commit each), one document deleted in an older one."""
    opened = Index(tmp_path).open()
    for batch in BATCHES:
        with opened.writer() as writer:
            for title, body in batch:
                made = memory(title, body)
                writer.add_document(
                    **document_for(
                        made, path_of(title), version_id="v1", blob="b1", mtime_ns=1, size=1
                    )
                )
    with opened.writer() as writer:
        writer.delete_by_term("path", DELETED)
    yield opened
    opened.close()


def whoosh_scores(searcher, word: str) -> dict[int, float]:
    """docnum -> score of Whoosh's own scored search for one word of the `all` field,
    weighted as ranking weighs (postings.weighting)."""
    from whoosh import query as q

    searcher.weighting = postings.weighting()
    return {hit.docnum: hit.score for hit in searcher.search(q.Term("all", word), limit=None)}


def walked(matcher) -> list[tuple[int, float]]:
    """(docnum, weight) of every live posting, walking Whoosh's matcher one at a time."""
    out = []
    while matcher.is_active():
        out.append((matcher.id(), matcher.weight()))
        matcher.next()
    return out


def test_the_corpus_has_several_segments_and_a_deletion(index: Index):
    with index.searcher() as searcher:
        leaves = [leaf for leaf, _ in searcher.reader().leaf_readers()]
        assert len(leaves) == 3
        assert sum(leaf.segment().deleted_count() for leaf in leaves) == 1
        assert searcher.doc_count() == sum(map(len, BATCHES)) - 1


def test_bm25_over_posting_blocks_equals_whooshs_bm25f(index: Index):
    with index.searcher() as searcher:
        assert type(searcher.weighting).__name__ == "BM25F"
        deleted = {d for d in searcher.reader().all_doc_ids()} ^ set(
            range(searcher.reader().doc_count_all())
        )
        assert len(deleted) == 1
        for word in WORDS:
            expected = whoosh_scores(searcher, word)
            ours = postings.bm25_scores(searcher, "all", [word], None, None)
            assert expected, word
            assert set(ours) == set(expected), word
            for docnum, score in expected.items():
                assert ours[docnum] == pytest.approx(score, abs=1e-9, rel=0), word
            assert not set(ours) & deleted
        both = postings.bm25_scores(searcher, "all", WORDS[:2], None, None)
        summed: dict[int, float] = {}
        for word in WORDS[:2]:
            for docnum, score in whoosh_scores(searcher, word).items():
                summed[docnum] = summed.get(docnum, 0.0) + score
        assert both == pytest.approx(summed, abs=1e-9, rel=0)


def test_bm25_added_for_candidates_equals_whooshs_bm25f(index: Index):
    with index.searcher() as searcher:
        every = list(searcher.reader().all_doc_ids())
        # Candidates in every segment, some without the word.
        candidates = {docnum: 1.0 for docnum in every[::2]}
        for word in WORDS:
            expected = whoosh_scores(searcher, word)
            added = postings.add_bm25(searcher, "all", [word], candidates)
            assert set(added) == set(candidates)
            for docnum, start in candidates.items():
                assert added[docnum] == pytest.approx(
                    start + expected.get(docnum, 0.0), abs=1e-9, rel=0
                ), word
        assert any(whoosh_scores(searcher, w).keys() - candidates.keys() for w in WORDS)


def test_the_posting_block_walk_yields_what_walking_the_matcher_does(index: Index):
    from whoosh.codec.whoosh3 import W3LeafMatcher
    from whoosh.matching.wrappers import FilterMatcher

    with index.searcher() as searcher:
        for leaf, _ in searcher.reader().leaf_readers():
            for word in WORDS:
                if ("all", word) not in leaf:
                    continue
                matcher = leaf.postings("all", word)
                if leaf.segment().has_deletions():
                    # Whoosh hides deleted documents behind a filter; its parts are read here.
                    assert isinstance(matcher, FilterMatcher)
                    assert matcher._exclude and isinstance(matcher._ids, set | frozenset)
                    assert matcher.child is not None
                inner, _, blocks = postings.leaf_matcher(matcher)
                assert isinstance(inner, W3LeafMatcher) and blocks
                for name in ("_ids", "_weights", "_read_ids", "_read_weights", "_next_block"):
                    assert hasattr(inner, name), name
                from_blocks = [
                    (docnum, weight)
                    for docnums, weights, deleted in postings.posting_blocks(
                        leaf.postings("all", word)
                    )
                    for docnum, weight in zip(docnums, weights, strict=True)
                    if deleted is None or docnum not in deleted
                ]
                expected = walked(leaf.postings("all", word))
                assert from_blocks == expected
                wanted = [docnum for docnum, _ in expected][::2]
                chosen = list(postings.postings_of(leaf.postings("all", word), wanted))
                assert chosen == [pair for pair in expected if pair[0] in wanted]


def test_the_field_length_table_equals_whooshs_lengths(index: Index):
    with index.searcher() as searcher:
        for leaf, _ in searcher.reader().leaf_readers():
            # The one-byte length column is read through these private parts.
            column = leaf._perdoc._cached_reader("_all_len", _lengths_column())
            for name in ("_dbfile", "_basepos", "_count", "_fixedlen"):
                assert hasattr(column, name), name
            for field_name in ("all", "glosses"):
                table = postings.field_lengths(leaf, field_name)
                assert isinstance(table, list)  # (not Whoosh's per-document fallback)
                assert len(table) == leaf.doc_count_all()
                for docnum in range(leaf.doc_count_all()):
                    assert table[docnum] == leaf.doc_field_length(docnum, field_name, 1)


def test_a_missing_length_column_is_remembered(index: Index):
    from whoosh.codec import whoosh3

    reader_class = whoosh3.W3PerDocReader
    assert reader_class._vault_patched is True
    assert reader_class._cached_reader.__name__ == "cached_reader"
    with index.searcher() as searcher:
        leaf = next(leaf for leaf, _ in searcher.reader().leaf_readers())
        perdoc = leaf._perdoc
        assert isinstance(perdoc, reader_class)
        # An ID field has no length column: asked once, the file system is not asked again.
        assert perdoc.doc_field_length(0, "path", 1) == 1
        assert "_path_len" in postings.per_reader(perdoc, "missing columns", set)
        asked = []
        perdoc.has_column = lambda name: asked.append(name) or False
        assert perdoc.doc_field_length(0, "path", 1) == 1
        assert asked == []


def test_a_kept_segment_reader_sees_deletions_made_after_it_was_opened(index: Index):
    with index.searcher() as searcher:
        before = [leaf for leaf, _ in searcher.reader().leaf_readers()]
        first = before[0]
        # _rebound swaps the segment these hold and drops the cached deletions.
        assert hasattr(first, "_segment") and hasattr(first._perdoc, "_segment")
        victim = next(d for d in first.all_doc_ids())
        victim_path = searcher.stored_fields(victim)["path"]
        word = query_words("billing")[0]
        assert victim in [docnum for docnum, _ in walked(first.postings("all", word))]
        # Reading postings caches the deleted documents' set on the reader.
        assert "deleted_docs_set" in first.__dict__
    with index.writer() as writer:
        writer.delete_by_term("path", victim_path)
    with index.searcher() as searcher:
        after = [leaf for leaf, _ in searcher.reader().leaf_readers()]
        assert after[0] is first  # kept, not reopened
        assert first.is_deleted(victim)
        assert victim not in [docnum for docnum, _ in walked(first.postings("all", word))]
        assert victim not in postings.bm25_scores(searcher, "all", [word], None, None)
        assert searcher.document(path=victim_path) is None


def test_values_kept_per_reader_last_until_the_next_write(index: Index):
    made = []

    def make() -> object:
        made.append(object())
        return made[-1]

    with index.searcher() as searcher:
        kept = postings.per_reader(searcher.reader(), "probe", make)
        assert postings.per_reader(searcher.reader(), "probe", make) is kept
    with index.searcher() as searcher:
        assert postings.per_reader(searcher.reader(), "probe", make) is kept
    with index.writer() as writer:
        writer.delete_by_term("path", path_of("Pager rota"))
    with index.searcher() as searcher:
        assert postings.per_reader(searcher.reader(), "probe", make) is not kept
    assert len(made) == 2


def _lengths_column():
    from whoosh.codec.whoosh3 import LENGTHS_COLUMN

    return LENGTHS_COLUMN


def test_counts_from_the_kept_word_sets_equal_whooshs_own(index: Index):
    linking = Memory(
        memory_type="note",
        title="Links",
        body="See [[Billing invoices]] and [the rota](pager-rota.md).\n",
        entities=(TEAM,),
    )
    with index.writer() as writer:
        stat = {"version_id": "v1", "blob": "b1", "mtime_ns": 1, "size": 1}
        writer.add_document(**document_for(linking, "notes/links.md", **stat))
    fields = ("all", "names", "link_keys", "glosses", "entity_keys", "supersedes")
    with index.searcher() as searcher:
        leaves = [leaf for leaf, _ in searcher.reader().leaf_readers()]
        held = {
            (name, word)
            for leaf in leaves
            for name in fields
            if name in leaf.indexed_field_names()
            for word in leaf.field_terms(name)
        }
        assert {name for name, _ in held} >= {"all", "names", "link_keys", "glosses"}
        asked = held | {(name, "nowhere at all") for name in fields}
        for leaf in leaves:
            for name, word in sorted(asked):
                expected = leaf.doc_frequency(name, word)
                assert postings.leaf_frequency(leaf, name, word) == expected, (name, word)
            # Every field of these small segments, and the link fields of any, are sets.
            assert postings._term_set(leaf, "all") is not None


def test_posting_blocks_parsed_in_one_piece_are_the_matchers_own(index: Index):
    from vault_tool.search import decoded

    def live(blocks, deleted) -> list[tuple[int, float]]:
        return [(d, w) for ids, ws in blocks for d, w in zip(ids, ws, strict=True)
                if d not in deleted]  # fmt: skip

    with index.searcher() as searcher:
        for leaf, _ in searcher.reader().leaf_readers():
            deleted = set(leaf.all_doc_ids()) ^ set(range(leaf.doc_count_all()))
            for word in leaf.field_terms("all"):
                whole = decoded._blocks(postings.leaf_matcher(leaf.postings("all", word))[0])
                matcher = postings.leaf_matcher(leaf.postings("all", word))[0]
                walked = [(ids, weights) for ids, weights, _ in postings.posting_blocks(matcher)]
                assert live(whole, deleted) == live(walked, deleted), word
