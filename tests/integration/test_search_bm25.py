"""BM25 over kept postings (search/bm25.py) gives Whoosh's own scored search's answers, and
what is kept per reader and per segment (search/postings.py) holds as long as it should, on
a real on-disk index of several segments with a deletion."""

from __future__ import annotations

from pathlib import Path

import pytest

from vault_tool.core.memory import Entity, Fact, Memory
from vault_tool.core.text import query_words
from vault_tool.search import bm25, postings
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


def whoosh_scores(searcher, words: list[str], filter=None, mask=None) -> dict[int, float]:
    """docnum -> score of Whoosh's own scored search (public API) for words of the `all`
    field, weighted as ranking weighs (bm25.weighting)."""
    from whoosh import query as q

    collector = searcher.collector(limit=None, filter=filter, mask=mask)
    context = searcher.context(weighting=bm25.weighting())
    searcher.search_with_collector(q.Or([q.Term("all", w) for w in words]), collector, context)
    return {hit.docnum: hit.score for hit in collector.results()}


def test_the_corpus_has_several_segments_and_a_deletion(index: Index):
    with index.searcher() as searcher:
        leaves = [leaf for leaf, _ in searcher.reader().leaf_readers()]
        assert len(leaves) == 3
        assert sum(leaf.segment().deleted_count() for leaf in leaves) == 1
        assert searcher.doc_count() == sum(map(len, BATCHES)) - 1


def test_text_scores_are_whooshs_scored_search(index: Index):
    with index.searcher() as searcher:
        every = list(searcher.reader().all_doc_ids())
        allow, hidden = set(every[::2]), {every[1]}
        for words in [[w] for w in WORDS] + [WORDS[:2], WORDS]:
            for filters in ((None, None), (allow, None), (None, hidden), (allow, hidden)):
                expected = whoosh_scores(searcher, words, *filters)
                ours = bm25.text_scores(searcher, "all", words, *filters)
                assert ours.matches() == pytest.approx(expected, abs=1e-9, rel=0), words
                assert len(ours) == len(expected)
        assert whoosh_scores(searcher, WORDS)  # (the words are there)


def test_added_scores_are_whooshs_for_those_documents_only(index: Index):
    with index.searcher() as searcher:
        every = list(searcher.reader().all_doc_ids())
        candidates = {docnum: 1.0 for docnum in every[::2]}  # (some without the word)
        for word in WORDS:
            expected = whoosh_scores(searcher, [word])
            added = bm25.add_scores(searcher, "all", [word], candidates)
            assert added == pytest.approx(
                {d: start + expected.get(d, 0.0) for d, start in candidates.items()}, abs=1e-9
            ), word
        assert any(whoosh_scores(searcher, [w]).keys() - candidates.keys() for w in WORDS)


def test_forms_count_only_where_the_word_itself_is_not(index: Index):
    with index.searcher() as searcher:
        word, form = query_words("kafka")[0], query_words("billing")[0]
        alone = bm25.text_scores(searcher, "all", [word], None, None)
        both = bm25.with_forms(searcher, "all", alone, {word: [form]}, 0.5, None, None)
        forms = whoosh_scores(searcher, [form])
        expected = dict(alone.matches())
        for docnum, score in forms.items():
            if docnum not in expected:
                expected[docnum] = 0.5 * score
        assert both.matches() == pytest.approx(expected, abs=1e-9, rel=0)
        assert forms.keys() & alone.matches().keys()  # (a document with both: not counted)


def test_the_best_are_chosen_by_score_then_path(index: Index):
    with index.searcher() as searcher:
        scores = bm25.text_scores(searcher, "all", query_words("billing"), None, None)
        path = postings.columns(searcher)["path"]
        expected = sorted(scores.matches().items(), key=lambda i: (-i[1], path[i[0]]))
        for n in range(1, len(expected) + 2):
            assert bm25.top_scored(searcher, scores, n) == expected[:n]
            assert bm25.top_scored(searcher, scores.matches(), n) == expected[:n]


def test_postings_kept_from_a_reader_that_hid_a_document_are_read_again_without_it(
    index: Index,
):
    """The journal of recent writes hides documents by opening a segment again with more
    deletions (search/recent.py); postings read through it must not outlive the hiding."""
    import copy

    from whoosh.reading import SegmentReader

    from vault_tool.search.disk import storage

    word = query_words("billing")[0]
    with index.searcher() as searcher:
        leaf = max((leaf for leaf, _ in searcher.reader().leaf_readers()), key=len_of)
        full = list(bm25._postings(leaf, "all", word).docnums)
        masked_segment = copy.deepcopy(leaf.segment())
        masked_segment.delete_document(full[0])
        masked = SegmentReader(storage(index.dir), leaf.schema, masked_segment)
        try:
            # Read through the unmasked reader: kept, the hidden one zeroed when scored.
            assert list(bm25._postings(masked, "all", word).docnums) == full
            bm25._kept.clear()
            bm25._held[0] = 0
            # Read through the masked reader first: it lacks the hidden document...
            assert list(bm25._postings(masked, "all", word).docnums) == full[1:]
            # ... so the unmasked reader, which does not hide it, reads them again.
            assert list(bm25._postings(leaf, "all", word).docnums) == full
        finally:
            masked.close()


def len_of(leaf) -> int:
    return leaf.doc_count_all()


def test_kept_postings_are_bounded(index: Index, monkeypatch):
    monkeypatch.setattr(bm25, "KEPT_POSTINGS", 3)
    monkeypatch.setattr(bm25, "_kept", type(bm25._kept)())
    monkeypatch.setattr(bm25, "_held", [0])
    with index.searcher() as searcher:
        for word in WORDS:
            bm25.text_scores(searcher, "all", [word], None, None)
            assert bm25._held[0] == sum(len(p.docnums) for p in bm25._kept.values())
            assert bm25._held[0] <= 3 or len(bm25._kept) == 1


def test_a_segment_whose_deletions_changed_is_read_with_them(index: Index):
    word = query_words("billing")[0]
    with index.searcher() as searcher:
        victim = max(bm25.text_scores(searcher, "all", [word], None, None).matches())
        victim_path = searcher.stored_fields(victim)["path"]
    with index.writer() as writer:
        writer.delete_by_term("path", victim_path)
    with index.searcher() as searcher:
        assert victim not in bm25.text_scores(searcher, "all", [word], None, None).matches()
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


def test_warming_reads_the_common_words_and_stops_when_a_call_comes_in(
    index: Index, monkeypatch
) -> None:
    monkeypatch.setattr(bm25, "_kept", type(bm25._kept)())
    monkeypatch.setattr(bm25, "_held", [0])
    with index.searcher() as searcher:
        assert bm25.warm(searcher, lambda: True) == 0
        assert not bm25._kept
        asked = iter(range(100))
        assert bm25.warm(searcher, lambda: next(asked) >= 4) == 1  # (3 segments, 1 word)
        read = bm25.warm(searcher, lambda: False)
        assert read > 1
        assert (query_words("billing")[0], "all") in {(w, f) for _, f, w in bm25._kept}
