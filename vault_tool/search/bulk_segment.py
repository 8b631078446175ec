"""A segment written term by term in whole blocks: the indexing processes of a reindex.

Whoosh's segment writer pools every posting as a tuple, sorts them all, and then hands
them to the postings writer one call at a time, asking the length column on disk for
each posting's field length (a seek and a read per posting). At 10,000 notes that is
~840,000 postings in each of the two indexing processes, and most of a reindex. Here
the postings of each (field, term) are gathered in arrays as documents are added (a
term's documents arrive in docnum order), the terms are sorted once, every field's
lengths are read from its column once, and each block of a term is handed to Whoosh's
own W3 postings writer whole (posting_blocks.py).

A term of one posting (most terms: a note's own path, id, fingerprint and names) is held
as the posting it came as, in arrays only from its second: with arrays for each such term
the pool took 118 MB for 10,000 notes, 49 MB without, and past the pool's limit every term
goes to a sorted run on disk to be read back (twice in each indexing process at 100,000
notes, 5.6 s of writing alone; no longer).

A counted text field (core/words.py's Counted: `all`, `glosses`, most of a note's postings)
is added in one call a document: its words' counts go straight into per-field tables of
arrays, where Whoosh makes, per posting, a tuple, a generator step, its bytes and a call
to the pool (a fifth of what an indexing process spent). A count is the posting's weight
and, packed, its value, so only the counts are kept until the blocks are written.

Used by the processes a bulk writer (BulkWriter, Whoosh's multiprocessing writer) starts,
which only add documents to a new segment each. Pinned by
tests/integration/test_bulk_segment.py: a segment written here holds what Whoosh's writer
makes from the same documents (byte for byte, with every block compressed as it does).
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
from vault_tool.search.posting_blocks import packed_counts, write_terms


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


# What a term and a posting cost in memory (bytes; with these, what the pool counts was at
# most a fifth over what tracemalloc measured, 10-30k notes of bench.notes): the pool writes its
# terms to a sorted run on disk past its limit, as Whoosh's pool does with its postings.
ONE_POSTING_TERM_BYTES = 190  # (a term of one posting: most are, a note's own path, id, names)
TERM_BYTES = 320  # (a term's arrays, from its second posting; a counted term's from its first)
POSTING_BYTES = 16  # (a docnum and a weight, as the arrays grow)
COUNT_BYTES_HELD = 9  # (a counted posting: a docnum and a count)
VALUE_BYTES = 48  # (a value of a size that varies: a bytes object in a list)


class TermPool(PostingPool):
    """A posting pool that keeps each (field, term)'s postings together, in arrays."""

    def __init__(self, schema: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.schema = schema
        # field name -> term bytes -> its postings in the order added: one as it came
        # (docnum, weight, value), more as [docnums, weights, values] (values of a fixed
        # size one after another, else a list)
        self.terms: dict[str, dict[bytes, Any]] = {}
        # field name -> term -> (docnums, counts): a counted text field's postings
        self.counted: dict[str, dict[str, tuple[array, array]]] = {}
        self._fixed: dict[str, int] = {}  # field name -> its values' size (0: they vary)
        self._bytes = 0

    def add(self, item: tuple[str, bytes, int, float, bytes | None]) -> None:
        fieldname, text, docnum, weight, value = item
        if docnum < 0:
            return  # (a spelling word: Whoosh's postings writer skips those too)
        table = self.terms.get(fieldname)
        if table is None:
            table = self.terms[fieldname] = {}
            self._new_field(fieldname)
        held = table.get(text)
        if held is None:
            table[text] = (docnum, weight, value or b"")
            self._bytes += ONE_POSTING_TERM_BYTES + len(text)
        else:
            fixed = self._fixed[fieldname]
            if type(held) is tuple:  # (its second posting: its postings go into arrays)
                held = table[text] = _arrays(held, fixed)
                self._bytes += TERM_BYTES
            held[0].append(docnum)
            held[1].append(weight)
            if fixed:
                held[2].extend(value or b"")
            else:
                held[2].append(value or b"")  # (a list: one a posting, the empty ones too)
            self._bytes += POSTING_BYTES + (0 if fixed else VALUE_BYTES)
        if self._bytes > self.limit:
            self._write_run()

    def add_counts(self, fieldname: str, docnum: int, counts: dict[str, int]) -> None:
        """A document's postings of a counted text field: term -> its count (a count is the
        posting's weight and its value; the field's boost is 1)."""
        table = self.counted.get(fieldname)
        if table is None:
            table = self.counted[fieldname] = {}
            self._new_field(fieldname)
        added = COUNT_BYTES_HELD * len(counts)
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

    def _new_field(self, fieldname: str) -> None:
        self.fieldnames.add(fieldname)
        size = self.schema[fieldname].format.fixed_value_size()
        self._fixed[fieldname] = size if size and size > 0 else 0

    def _held(self) -> Iterator[tuple[tuple[str, bytes], tuple]]:
        """Every term held, in Whoosh's order (a term's text is sorted as its UTF-8 bytes),
        with its postings as (docnums, weights, values); a counted term's values None (its
        weights are its counts). Made as they are written: a list of them all, made at
        once, took as much memory again as the pool (a tuple a term)."""
        for fieldname in sorted({*self.terms, *self.counted}):
            counted = self.counted.get(fieldname)
            if counted is not None:  # (a field's postings are all counted, or none are)
                assert fieldname not in self.terms
                for term in sorted(counted):  # (a str sorts as its UTF-8 bytes)
                    yield (fieldname, term.encode("utf-8")), (*counted[term], None)
                continue
            table, fixed = self.terms[fieldname], self._fixed[fieldname]
            for text in sorted(table):
                yield (fieldname, text), _postings(table[text], fixed)

    def _write_run(self) -> None:
        path, out = self._new_run()
        with out:
            for item in self._held():
                pickle.dump(item, out, pickle.HIGHEST_PROTOCOL)
        self.runs.append(path)
        self.terms, self.counted, self._bytes = {}, {}, 0

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
            postings = [postings for _, postings in parts]
            yield key, postings[0] if len(postings) == 1 else _joined(postings)
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


def _arrays(one: tuple[int, float, bytes], fixed: int) -> list:
    """A term's one posting as the arrays its next ones are added to."""
    docnum, weight, value = one
    return [array("I", (docnum,)), array("d", (weight,)), bytearray(value) if fixed else [value]]


def _postings(held: Any, fixed: int) -> tuple:
    """A term's postings as (docnums, weights, values), however they are held."""
    if type(held) is tuple:  # (one posting)
        docnum, weight, value = held
        return (docnum,), (weight,), value if fixed else [value]
    return tuple(held)


def _joined(parts: list[tuple]) -> tuple:
    """A term's postings from several runs (in the order written: docnum order) as one."""
    counted = parts[0][2] is None
    docnums, weights = array("I"), array("I" if counted else "d")
    values: Any = None if counted else [] if isinstance(parts[0][2], list) else bytearray()
    for more_docnums, more_weights, more_values in parts:
        docnums.extend(more_docnums)
        weights.extend(more_weights)
        if values is not None:
            values += more_values
    return docnums, weights, values


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
