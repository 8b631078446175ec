"""What search hides (dismissed memories, expired ones) is read per segment and put
together per index generation: the same docnums as a query over the whole index, in every
generation, as writes add segments and replace documents."""

from __future__ import annotations

from pathlib import Path

from vault_tool.core.memory import Memory
from vault_tool.search import stored
from vault_tool.search.documents import document_for
from vault_tool.search.index import Index


def add(index: Index, name: str, **kept) -> None:
    memory = Memory(memory_type="note", title=name, body=f"# {name}\n\nwords\n", **kept)
    fields = document_for(memory, f"notes/{name}.md", version_id="v", blob="b", mtime_ns=1, size=1)
    with index.writer() as writer:
        writer.delete_by_term("path", f"notes/{name}.md")
        writer.add_document(**fields)


def whole_index(searcher) -> tuple[set[int], list[tuple[int, int]]]:
    """As hidden_parts read them before: one query of the whole index each."""
    from whoosh import query as q

    dismissed = set(searcher.docs_for_query(q.Term("status", "dismissed")))
    expiring = [
        (docnum, searcher.stored_fields(docnum)["expires_ts"])
        for docnum in searcher.docs_for_query(q.NumericRange("expires_ts", 1, None))
    ]
    return dismissed, expiring


def live(searcher, parts: tuple[set[int], list]) -> tuple[set[int], list]:
    alive = set(searcher.reader().all_doc_ids())
    return {d for d in parts[0] if d in alive}, sorted(e for e in parts[1] if e[0] in alive)


def test_hidden_parts_match_the_whole_index_in_every_generation(tmp_path: Path) -> None:
    index = Index(tmp_path).open()
    steps = [
        ("a", {"status": "dismissed"}),
        ("b", {"expires_at": "2020-01-01T00:00:00Z"}),
        ("c", {}),
        ("a", {}),  # a is taken back: its new version is not dismissed
        ("c", {"status": "dismissed"}),
        ("d", {"expires_at": "2030-01-01T00:00:00Z"}),
    ]
    try:
        for name, kept in steps:  # a segment each
            add(index, name, **kept)

            def check(searcher) -> None:
                expected = whole_index(searcher)
                assert live(searcher, stored.hidden_parts(searcher)) == live(searcher, expected)
                # only documents deleted since may be listed beside the live ones
                assert stored.hidden_parts(searcher)[0] >= expected[0]

            index.read(check)
        found = index.read(lambda s: live(s, stored.hidden_parts(s)))
        paths = index.read(lambda s: {s.stored_fields(d)["path"] for d in found[0]})
        assert paths == {"notes/c.md"}
        assert len(found[1]) == 2
    finally:
        index.close()
