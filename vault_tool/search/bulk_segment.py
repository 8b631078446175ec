"""A segment written term by term in whole blocks: the indexing processes of a reindex.

Whoosh's segment writer pools every posting as a tuple, sorts them all, and then hands
them to the postings writer one call at a time, asking the length column on disk for
each posting's field length (a seek and a read per posting). At 10,000 notes that is
~840,000 postings in each of the two indexing processes, and most of a reindex. Here
the postings of each (field, term) are gathered in lists as documents are added (a
term's documents arrive in docnum order), the terms are sorted once, every document's
field lengths are read from the column once, and each block of a term is handed to
Whoosh's own W3 postings writer whole: the same block contents, statistics and bytes
it would have written posting by posting, at a fraction of the calls.

Used by the processes a bulk writer (BulkWriter, Whoosh's multiprocessing writer) starts,
which only add documents to a new segment each. Pinned by
tests/integration/test_bulk_segment.py: a segment written here is byte for byte the one
Whoosh's writer makes from the same documents.
"""

from __future__ import annotations

from array import array
from typing import Any

import whoosh.multiproc
from whoosh.multiproc import MpWriter, SubWriterTask
from whoosh.writing import PostingPool, SegmentWriter


class BulkWriter(MpWriter):
    """Whoosh's multiprocessing writer whose indexing processes write BulkSegmentWriter's
    segments (a bulk writer: see Index.writer)."""

    def _new_task(self) -> Any:  # (as MpWriter's, with the task below)
        task = _BulkTask(
            self.storage,
            self.indexname,
            self.jobqueue,
            self.resultqueue,
            self.subargs,
            self.multisegment,
        )
        self.tasks.append(task)
        task.start()
        return task


class _BulkTask(SubWriterTask):
    def run(self) -> None:
        # In the indexing process only: SubWriterTask.run makes its writer from this name.
        whoosh.multiproc.SegmentWriter = BulkSegmentWriter
        super().run()


class TermPool(PostingPool):
    """A posting pool that keeps each (field, term)'s postings together in lists."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # (field name, term bytes) -> (docnums, weights, values), in the order added
        self.terms: dict[tuple[str, bytes], tuple[list[int], list[float], list[bytes]]] = {}

    def add(self, item: tuple[str, bytes, int, float, bytes | None]) -> None:
        fieldname, text, docnum, weight, value = item
        if docnum < 0:
            return  # (a spelling word: Whoosh's postings writer skips those too)
        postings = self.terms.get((fieldname, text))
        if postings is None:
            self.fieldnames.add(fieldname)
            postings = self.terms[(fieldname, text)] = ([], [], [])
        postings[0].append(docnum)
        postings[1].append(weight)
        postings[2].append(value or b"")

    def iter_postings(self) -> Any:
        """Every posting as Whoosh's pool gives them: sorted (field, term, docnum, ...)."""
        for (fieldname, text), (docnums, weights, values) in sorted(self.terms.items()):
            for docnum, weight, value in zip(docnums, weights, values, strict=True):
                yield fieldname, text, docnum, weight, value


class BulkSegmentWriter(SegmentWriter):
    """Whoosh's segment writer, with its postings written term by term (see the module)."""

    def __init__(self, ix: Any, **kwargs: Any) -> None:
        super().__init__(ix, **kwargs)
        self.pool = TermPool(self._tempstorage, self.newsegment, limitmb=self.pool.limit >> 20)

    def _flush_segment(self) -> None:
        self.perdocwriter.close()
        lengths = self.per_document_reader() if self.codec.length_stats else None
        try:
            write_terms(self.fieldwriter, self.schema, self.pool.terms, lengths, self.docnum)
        finally:
            self.fieldwriter.close()
            if lengths is not None:
                lengths.close()


def write_terms(
    fields: Any,
    schema: Any,
    terms: dict[tuple[str, bytes], tuple[list[int], list[float], list[bytes]]],
    lengths: Any,
    doc_count: int,
) -> None:
    """Every term's postings through the field writer, in Whoosh's order, block by block."""
    field_name = None
    field_lengths: list[int] = []
    for (name, text), postings in sorted(terms.items()):
        if name != field_name:
            if field_name is not None:
                fields.finish_field()
            field_name = name
            fields.start_field(name, schema[name])
            field_lengths = _lengths_of(lengths, name, doc_count)
        fields.start_term(text)
        _write_postings(fields._postwriter, postings, field_lengths)
        fields.finish_term()
    if field_name is not None:
        fields.finish_field()


def _lengths_of(lengths: Any, name: str, doc_count: int) -> list[int]:
    """Each document's length of a field, as the postings writer is given it (0: none)."""
    if lengths is None:
        return [0] * doc_count
    return [lengths.doc_field_length(docnum, name) or 0 for docnum in range(doc_count)]


def _write_postings(writer: Any, postings: tuple, field_lengths: list[int]) -> None:
    """One term's postings, each block set whole where W3PostingsWriter.add_posting would
    have built it one posting at a time; the last one left for finish_postings."""
    docnums, weights, values = postings
    limit = writer._blocklimit
    for start in range(0, len(docnums), limit):
        if start:
            writer._write_block()
        ids = docnums[start : start + limit]
        block_weights = weights[start : start + limit]
        block_lengths = [n for n in (field_lengths[d] for d in ids) if n]
        writer._ids = array("I", ids)
        writer._weights = array("f", block_weights)
        writer._values = [v for v in values[start : start + limit] if v]
        writer._maxweight = max(0, *block_weights)
        writer._minlength = min(block_lengths) if block_lengths else None
        writer._maxlength = max(block_lengths) if block_lengths else 0
