"""The index's number fields: what each is indexed as, and that every reader of them still
finds what it did.

A file's stat (mtime_ns, size) is read only as columns by catch-up, so it has no postings;
dates keep a few precision tiers for range queries. Range queries on dates, expiry lookups,
the newest-first list and catch-up's states must answer exactly as a brute force over the
documents says.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

import pytest
from whoosh import query as q

from vault_tool.core.memory import Memory
from vault_tool.search.documents import document_for
from vault_tool.search.index import Index
from vault_tool.search.listing import _updated

BASE = int(datetime(2020, 1, 1, tzinfo=UTC).timestamp())


def stamp(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def made(tmp_path: Path):
    """80 notes dated over six years (some at the same second), a third expiring."""
    rng = random.Random(11)
    index = Index(tmp_path).open()
    dates: dict[str, tuple[int, int, int, int]] = {}  # path -> updated, expires, mtime, size
    with index.writer() as writer:
        for n in range(80):
            updated = BASE + rng.randrange(0, 6 * 365 * 86400) if n % 9 else BASE
            expires = updated + rng.randrange(1, 400 * 86400) if n % 3 == 0 else 0
            memory = Memory(
                memory_type="note",
                title=f"Note {n}",
                body=f"# Note {n}\n\nwords {n}\n",
                updated=stamp(updated),
                expires_at=stamp(expires) if expires else None,
            )
            path = f"notes/n{n:03d}.md"
            mtime, size = 1_700_000_000_000_000_000 + n * 7919, 100 + n
            fields = document_for(
                memory, path, version_id="v", blob=f"b{n}", mtime_ns=mtime, size=size
            )
            writer.add_document(**fields)
            dates[path] = (updated, expires, mtime, size)
    yield index, dates
    index.close()


def test_a_files_stat_is_columns_only_and_dates_have_four_tiers(made):
    index, dates = made

    def terms(searcher):
        reader = searcher.reader()
        fields = set(reader.indexed_field_names())
        return fields, {f: len(list(reader.lexicon(f))) for f in ("updated_ts", "expires_ts")}

    fields, counts = index.read(terms)
    assert "mtime_ns" not in fields and "size" not in fields
    distinct_updated = len({u for u, _, _, _ in dates.values()})
    distinct_expires = len({e for _, e, _, _ in dates.values()})
    # Each distinct value is at most four terms (64 bits in tiers of 16), at least one.
    assert distinct_updated <= counts["updated_ts"] <= 4 * distinct_updated
    assert distinct_expires <= counts["expires_ts"] <= 4 * distinct_expires


def test_catch_up_reads_every_files_stat_and_blob(made):
    index, dates = made
    states = index.states()
    assert states == {p: (m, s, f"b{int(p[7:10])}") for p, (_, _, m, s) in dates.items()}
    stored = index.by_path("notes/n005.md")
    assert (stored.mtime_ns, stored.size) == dates["notes/n005.md"][2:]


@pytest.mark.parametrize("seed", range(6))
def test_date_ranges_find_exactly_the_documents_in_them(made, seed: int):
    index, dates = made
    rng = random.Random(seed)
    start = BASE + rng.randrange(-86400, 6 * 365 * 86400)
    end = start + rng.choice([0, 1, 3600, 86400 * 30, 86400 * 800])
    for low, high in [(start, end), (start, None), (None, end), (BASE, BASE)]:
        found = index.read(
            lambda s, lo=low, hi=high: {
                s.stored_fields(d)["path"]
                for d in s.docs_for_query(q.NumericRange("updated_ts", lo, hi))
            }
        )
        expected = {
            p
            for p, (u, _, _, _) in dates.items()
            if (low is None or u >= low) and (high is None or u <= high)
        }
        assert found == expected
    expired = {m.path for m in index.expired_by(end)}
    assert expired == {p for p, (_, e, _, _) in dates.items() if 1 <= e <= end}


def test_the_newest_first_list_reads_every_documents_date(made):
    index, dates = made
    by_doc = index.read(lambda s: {s.stored_fields(d)["path"]: t for d, t in _updated(s).items()})
    assert by_doc == {p: u for p, (u, _, _, _) in dates.items()}
