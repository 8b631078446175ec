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

import heapq
import itertools
import pickle
from array import array
from collections.abc import Iterable, Iterator
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


# What a term and a posting cost in memory (bytes, roughly): the pool writes its terms
# to a sorted run on disk past its limit, as Whoosh's pool does with its postings.
TERM_BYTES = 400
POSTING_BYTES = 16
VALUE_BYTES = 48  # (a value of a size that varies: a bytes object in a list)


class TermPool(PostingPool):
    """A posting pool that keeps each (field, term)'s postings together, in arrays."""

    def __init__(self, schema: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.schema = schema
        # (field name, term bytes) -> (docnums, weights, values), in the order added; values
        # of a fixed size (a count) one after another, else a list
        self.terms: dict[tuple[str, bytes], tuple[array, array, Any]] = {}
        self._adders: dict[tuple[str, bytes], tuple[Any, Any, Any, int]] = {}  # (their appends)
        self._fixed: dict[str, int] = {}  # field name -> its values' size (0: they vary)
        self._bytes = 0

    def add(self, item: tuple[str, bytes, int, float, bytes | None]) -> None:
        fieldname, text, docnum, weight, value = item
        if docnum < 0:
            return  # (a spelling word: Whoosh's postings writer skips those too)
        adders = self._adders.get((fieldname, text))
        if adders is None:
            adders = self._new_term(fieldname, text)
        adders[0](docnum)
        adders[1](weight)
        adders[2](value or b"")  # (a list: one a posting, the empty ones too)
        self._bytes += adders[3]
        if self._bytes > self.limit:
            self._write_run()

    def _new_term(self, fieldname: str, text: bytes) -> tuple[Any, Any, Any, int]:
        if fieldname not in self._fixed:
            self.fieldnames.add(fieldname)
            size = self.schema[fieldname].format.fixed_value_size()
            self._fixed[fieldname] = size if size and size > 0 else 0
        fixed = self._fixed[fieldname]
        docnums, weights = array("I"), array("d")
        values: bytearray | list[bytes] = bytearray() if fixed else []
        self.terms[(fieldname, text)] = (docnums, weights, values)
        add_value = values.extend if isinstance(values, bytearray) else values.append
        cost = POSTING_BYTES + (0 if fixed else VALUE_BYTES)
        adders = self._adders[(fieldname, text)] = (docnums.append, weights.append, add_value, cost)
        self._bytes += TERM_BYTES + len(text)
        return adders

    def _write_run(self) -> None:
        path, out = self._new_run()
        with out:
            for key, postings in sorted(self.terms.items()):
                pickle.dump((key, postings), out, pickle.HIGHEST_PROTOCOL)
        self.runs.append(path)
        self.terms, self._adders, self._bytes = {}, {}, 0

    def _read_terms(self, path: str) -> Iterator[tuple[tuple[str, bytes], tuple]]:
        with self._open_run(path) as run:
            while True:
                try:
                    yield pickle.load(run)
                except EOFError:
                    break
        self._remove_run(path)

    def sorted_terms(self) -> Iterator[tuple[tuple[str, bytes], tuple]]:
        """Every term in Whoosh's order, with its postings in docnum order (its runs, in
        the order written, then what is held)."""
        if not self.runs:
            yield from sorted(self.terms.items())
            return
        self._write_run()
        merged = heapq.merge(*(self._read_terms(path) for path in self.runs), key=_key)
        for key, parts in itertools.groupby(merged, key=_key):
            (_, (docnums, weights, values)), *more = parts
            for _, (more_docnums, more_weights, more_values) in more:
                docnums += more_docnums
                weights += more_weights
                values += more_values
            yield key, (docnums, weights, values)
        self.runs = []

    def iter_postings(self) -> Any:
        """Every posting as Whoosh's pool gives them: sorted (field, term, docnum, ...)."""
        for (fieldname, text), (docnums, weights, values) in self.sorted_terms():
            size = self._fixed[fieldname]
            for n, (docnum, weight) in enumerate(zip(docnums, weights, strict=True)):
                value = bytes(values[n * size : (n + 1) * size]) if size else values[n]
                yield fieldname, text, docnum, weight, value


def _key(item: tuple) -> tuple[str, bytes]:
    return item[0]


class BulkSegmentWriter(SegmentWriter):
    """Whoosh's segment writer, with its postings written term by term (see the module)."""

    def __init__(self, ix: Any, **kwargs: Any) -> None:
        super().__init__(ix, **kwargs)
        limitmb = self.pool.limit >> 20
        self.pool = TermPool(self.schema, self._tempstorage, self.newsegment, limitmb=limitmb)

    def _flush_segment(self) -> None:
        self.perdocwriter.close()
        lengths = self.per_document_reader() if self.codec.length_stats else None
        try:
            terms = self.pool.sorted_terms()
            write_terms(self.fieldwriter, self.schema, terms, lengths, self.docnum)
        finally:
            self.fieldwriter.close()
            if lengths is not None:
                lengths.close()


def write_terms(
    fields: Any,
    schema: Any,
    terms: Iterable[tuple[tuple[str, bytes], tuple[array, array, Any]]],
    lengths: Any,
    doc_count: int,
) -> None:
    """Every term's postings (in Whoosh's order) through the field writer, block by block."""
    field_name = None
    field_lengths: list[int] = []
    for (name, text), postings in terms:
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
        if isinstance(values, list):  # (W3PostingsWriter keeps only the values not empty)
            writer._values = [value for value in values[start : start + limit] if value]
        else:  # (W3PostingsWriter joins values of a fixed size: one piece joins the same)
            size = len(values) // len(docnums)
            writer._values = [bytes(values[start * size : (start + limit) * size])]
        writer._maxweight = max(0, *block_weights)
        writer._minlength = min(block_lengths) if block_lengths else None
        writer._maxlength = max(block_lengths) if block_lengths else 0
