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

A counted text field (core/words.py's Counted: `all`, `glosses`, most of a note's postings)
is added in one call a document: its words' counts go straight into per-field tables of
arrays, where Whoosh makes, per posting, a tuple, a generator step, its bytes and a call
to the pool (a fifth of what an indexing process spent). A count is the posting's weight
and, packed, its value, so only the counts are kept until the blocks are written.

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
from collections.abc import Iterator
from typing import Any

import whoosh.multiproc
from whoosh.multiproc import MpWriter, SubWriterTask
from whoosh.writing import PostingPool, SegmentWriter

from vault_tool.core.words import Counted, Words
from vault_tool.search.posting_blocks import COUNT_BYTES, packed_counts, write_terms


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
        # field name -> term -> (docnums, counts): a counted text field's postings
        self.counted: dict[str, dict[str, tuple[array, array]]] = {}
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

    def add_counts(self, fieldname: str, docnum: int, counts: dict[str, int]) -> None:
        """A document's postings of a counted text field: term -> its count (a count is the
        posting's weight and its value; the field's boost is 1)."""
        table = self.counted.get(fieldname)
        if table is None:
            table = self.counted[fieldname] = {}
            self.fieldnames.add(fieldname)
            self._fixed[fieldname] = COUNT_BYTES
        added = POSTING_BYTES * len(counts)
        for term, count in counts.items():
            postings = table.get(term)
            if postings is None:
                postings = table[term] = (array("I"), array("I"))
                added += TERM_BYTES + len(term)
            postings[0].append(docnum)
            postings[1].append(count)
        self._bytes += added
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

    def _held(self) -> list[tuple[tuple[str, bytes], tuple]]:
        """Every term held, in Whoosh's order (a term's text is sorted as its UTF-8 bytes);
        a counted term's postings as (docnums, counts, None)."""
        counted = [
            ((fieldname, term.encode("utf-8")), (docnums, counts, None))
            for fieldname, table in self.counted.items()
            for term, (docnums, counts) in table.items()
        ]
        return sorted([*self.terms.items(), *counted], key=_key)

    def _write_run(self) -> None:
        path, out = self._new_run()
        with out:
            for item in self._held():
                pickle.dump(item, out, pickle.HIGHEST_PROTOCOL)
        self.runs.append(path)
        self.terms, self._adders, self.counted, self._bytes = {}, {}, {}, 0

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
            yield from self._held()
            return
        self._write_run()
        merged = heapq.merge(*(self._read_terms(path) for path in self.runs), key=_key)
        for key, parts in itertools.groupby(merged, key=_key):
            (_, postings), *more = parts
            for _, later in more:
                for held, added in zip(postings, later, strict=True):
                    if held is not None:  # (a counted term's values: its counts)
                        held += added
            yield key, postings
        self.runs = []

    def iter_postings(self) -> Any:
        """Every posting as Whoosh's pool gives them: sorted (field, term, docnum, ...)."""
        for (fieldname, text), (docnums, weights, values) in self.sorted_terms():
            if values is None:  # (counted: the weights are the counts)
                values = packed_counts(weights)
                weights = array("d", weights)
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
        # field name -> its analyser, for the fields whose postings are added as counts
        self._counted = {
            name: field.analyzer
            for name, field in self.schema.items()
            if isinstance(field.format, Counted)
            and isinstance(field.analyzer, Words)
            and field.format.field_boost == 1.0
        }
        # Whoosh's add_document, for what this one leaves out (all indexes run without)
        self._whole = any(f.separate_spelling() or f.vector for _, f in self.schema.items())

    def add_document(self, **fields: Any) -> None:
        """What SegmentWriter.add_document adds, with a counted field's postings added in
        one call. Boosts and custom stored values (Whoosh's `_...` keywords) are not taken:
        index documents have none (they are refused as unknown fields)."""
        if self._whole:
            super().add_document(**fields)
            return
        self._check_state()
        schema, pool, perdoc, docnum = self.schema, self.pool, self.perdocwriter, self.docnum
        names = sorted(fields)
        self._check_fields(schema, names)
        perdoc.start_doc(docnum)
        try:
            for name in names:
                value = fields[name]
                if value is None:
                    continue
                field = schema[name]
                length = 0
                analyzer = self._counted.get(name) if field.indexed else None
                if analyzer is not None:
                    counts = analyzer.counts(value)
                    pool.add_counts(name, docnum, counts)
                    length = sum(counts.values()) if field.scorable else 0
                elif field.indexed:
                    for text, count, weight, value_bytes in field.index(value):
                        length += count if field.scorable else 0
                        pool.add((name, text, docnum, weight, value_bytes))
                perdoc.add_field(name, field, value if field.stored else None, length)
                if field.column_type:
                    perdoc.add_column_value(name, field.column_type, field.to_column_value(value))
        except Exception:
            perdoc.cancel_doc()
            raise
        perdoc.finish_doc()
        self._added = True
        self.docnum += 1

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
