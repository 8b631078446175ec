"""A new segment's terms written whole: each term's postings handed to Whoosh's W3 postings
writer a block at a time (bulk_segment.py gathers them), where Whoosh's segment writer
adds them one posting at a time.

The blocks are the ones Whoosh writes (their postings, statistics and term infos), with
two differences in how a block is stored, both read by Whoosh's reader as they are (it
takes each block's compression from the block):

- a block whose pickled postings are under COMPRESS_FROM bytes is stored uncompressed.
  Whoosh's writer means to leave blocks under 20 bytes so, but compresses every one; most
  of a note's terms are its own (its path, id, names) and hold one posting, and zlib made
  each of those larger, at a call that cost more than the rest of the block;
- the lists are made small (docnums as deltas, weights as one value when they are) in C
  calls, not a generator step per posting.

Pinned by tests/integration/test_bulk_segment.py: a segment written here holds, term for
term and block for block, what Whoosh's writer makes of the same documents.
"""

from __future__ import annotations

import sys
import zlib
from array import array
from collections.abc import Iterable
from operator import sub
from pickle import dumps
from typing import Any

from whoosh.codec.whoosh3 import (
    LENGTHS_COLUMN,
    WHOOSH3_HEADER_MAGIC,
    W3PostingsWriter,
    _lenfield,
)
from whoosh.util.numeric import byte_to_length, length_to_byte

# A block's pickled postings are compressed from this size on (bytes): below it zlib's
# header and checksum take back what it saves (the 5,000 notes of bench.notes: 7.3 MB of
# postings with every block compressed, 6.9 MB with this).
COMPRESS_FROM = 64

# A count as Whoosh's Frequency format packs it (whoosh.system.pack_uint: 4 bytes, big-endian).
COUNT_BYTES = 4
assert array("I").itemsize == COUNT_BYTES  # (what packed_counts packs them as)


def packed_counts(counts: array) -> bytes:
    """Counts packed one after another, as a counted field's posting values."""
    packed = array("I", counts)
    if sys.byteorder == "little":
        packed.byteswap()
    return packed.tobytes()


def write_terms(
    fields: Any,
    schema: Any,
    terms: Iterable[tuple[tuple[str, bytes], tuple[array, array, Any]]],
    lengths: Any,
    doc_count: int,
) -> None:
    """Every term's postings (in Whoosh's order) through the field writer, block by block.

    A term's postings are (docnums, weights, values): values of a fixed size in one
    bytearray, else a list; None for a counted field, whose weights are its counts."""
    field_name = None
    field_lengths: list[int] = []
    for (name, text), postings in terms:
        if name != field_name:
            if field_name is not None:
                fields.finish_field()
            field_name = name
            fields.start_field(name, schema[name])
            fields._postwriter = BlockWriter.like(fields._postwriter)
            field_lengths = _lengths_of(lengths, name, doc_count)
        fields.start_term(text)
        _write_postings(fields._postwriter, postings, field_lengths)
        fields.finish_term()
    if field_name is not None:
        fields.finish_field()


def _lengths_of(lengths: Any, name: str, doc_count: int) -> list[int]:
    """Each document's length of a field, as the postings writer is given it (0: none)."""
    table = None if lengths is None else lengths_in_column(lengths, name, doc_count, 0)
    return [0] * doc_count if table is None else table


def lengths_in_column(perdoc: Any, field_name: str, doc_count: int, missing: Any) -> Any:
    """Each document's length of a field, from a segment's per-document reader, its length
    column read in one piece (a byte a document: Whoosh's doc_field_length reads one a
    call, and looks for the column's file each time); `missing` for a document without
    one; None if the field has no length column."""
    column = perdoc._cached_reader(_lenfield(field_name), LENGTHS_COLUMN)
    if column is None:
        return None
    raw = column._dbfile.get(column._basepos, column._count * column._fixedlen)
    found = [byte_to_length(byte) if byte else missing for byte in raw]
    return found + [missing] * (doc_count - len(found))


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
        if values is None:  # (counted: each count packed, one piece as below)
            writer._values = [packed_counts(block_weights)]
        elif isinstance(values, list):  # (W3PostingsWriter keeps only the values not empty)
            writer._values = [value for value in values[start : start + limit] if value]
        else:  # (W3PostingsWriter joins values of a fixed size: one piece joins the same)
            size = len(values) // len(docnums)
            writer._values = [bytes(values[start * size : (start + limit) * size])]
        top = max(block_weights)  # (a float, as Whoosh's: the block's statistics are pickled)
        writer._maxweight = float(top) if top > 0 else 0
        writer._minlength = min(block_lengths) if block_lengths else None
        writer._maxlength = max(block_lengths) if block_lengths else 0


class BlockWriter(W3PostingsWriter):
    """Whoosh's W3 postings writer, storing small blocks uncompressed and making its lists
    small in C (see the module)."""

    @classmethod
    def like(cls, writer: W3PostingsWriter) -> BlockWriter:
        """One writing where and as the given writer does."""
        return cls(
            writer._postfile,
            writer._blocklimit,
            byteids=writer._byteids,
            compression=writer._compression,
            inlinelimit=writer._inlinelimit,
        )

    def _write_block(self, last: bool = False) -> None:  # (as W3PostingsWriter's, but below)
        if not self._blockcount:
            self._postfile.write(WHOOSH3_HEADER_MAGIC)
        self._terminfo.add_block(self)
        data = dumps((self._mini_ids(), self._mini_weights(), self._mini_values()), 2)
        compression = self._compression if len(data) >= COMPRESS_FROM else 0
        if compression:
            data = zlib.compress(data, compression)
        ids = self._ids
        info = dumps(
            (
                len(ids),
                ids[-1],
                self._maxweight,
                compression,
                length_to_byte(self._minlength),
                length_to_byte(self._maxlength),
            ),
            2,
        )
        length = len(info) + len(data)
        self._postfile.write_int(-length if last else length)  # (negative: the last block)
        self._postfile.write(info)
        self._postfile.write(data)
        self._blockcount += 1
        self._new_block()

    def _mini_ids(self) -> tuple:
        ids = self._ids
        if self._byteids or not ids:
            return tuple(ids)
        return (ids[0], *map(sub, ids[1:], ids[:-1]))  # (each after the first as a delta)

    def _mini_weights(self) -> Any:
        weights, count = self._weights, len(self._weights)
        if weights.count(1.0) == count:
            return None
        if weights.count(weights[0]) == count:
            return weights[0]
        return tuple(weights)
