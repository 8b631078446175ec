"""What ranking reads of the index for its candidates, cheaply, once per index generation.

A candidate's stored fields cost ~100 us to read (the whole record is unpickled); a query
considers up to a few hundred candidates and returns five. So the few fields ranking needs
for every candidate come from columns and per-reader lookups, and the rest is read only
for the hits that are returned.
"""

from __future__ import annotations

import json
from functools import partial
from typing import TYPE_CHECKING, Any

from vault_tool.search import postings
from vault_tool.search.postings import per_reader

if TYPE_CHECKING:
    from whoosh.searching import Searcher


class Stored(dict):
    """A document's stored fields, unpickled only when a field beyond the few that ranking
    needs for every candidate (id, path, pinned, mentions) is asked for."""

    @classmethod
    def of(cls, searcher: Searcher, docnum: int) -> Stored:
        """The cheap fields of a document now, the others on first use."""
        columns = postings.columns(searcher)
        stored = cls(
            memory_id=columns["memory_id"][docnum],
            path=columns["path"][docnum],
            pinned=docnum in pinned(searcher),
            mentions=mentions(searcher, docnum),
        )
        stored._source = (searcher, docnum)
        return stored

    def _load(self) -> None:
        source = self.__dict__.pop("_source", None)
        if source is not None:
            self.update(fields(*source))

    def __missing__(self, key: str) -> Any:
        if "_source" not in self.__dict__:
            raise KeyError(key)
        self._load()
        return self[key]

    def get(self, key: str, default: Any = None) -> Any:
        """dict.get, reading the stored fields first when key is not one of the cheap ones."""
        if key not in self:
            self._load()
        return super().get(key, default)


def mentions(searcher: Searcher, docnum: int) -> list[list[str]]:
    """A document's entity mentions, read once per reader (an index generation)."""
    return _ranked_fields(searcher, docnum)[0]


def times(searcher: Searcher, docnum: int) -> dict[str, Any]:
    """A document's day of making and its facts (documents.py)."""
    return _ranked_fields(searcher, docnum)[1]


def _ranked_fields(searcher: Searcher, docnum: int) -> tuple[list[list[str]], dict[str, Any]]:
    """The stored fields ranking reads of every candidate, from one read per reader."""
    cache = per_reader(searcher.reader(), "ranked fields", dict)
    if docnum not in cache:
        found = fields(searcher, docnum)
        cache[docnum] = (found["mentions"], found.get("times") or _NO_TIMES)
    return cache[docnum]


def fields(searcher: Searcher, docnum: int) -> dict[str, Any]:
    """A document's stored fields (not to be changed), read once per reader: ranking, links
    and the hits returned read the same candidates' fields, ~30 us an unpickling each."""
    cache = per_reader(searcher.reader(), "stored fields", dict)
    found = cache.get(docnum)
    if found is None:
        if len(cache) >= FIELDS_KEPT:
            cache.clear()
        found = cache[docnum] = searcher.stored_fields(docnum)
    return found


_NO_TIMES: dict[str, Any] = {"created": "", "facts": []}
# Documents whose stored fields a reader keeps (a generation's queries share candidates).
FIELDS_KEPT = 512


def pinned(searcher: Searcher) -> frozenset[int]:
    """Docnums of pinned memories, per reader."""
    return per_reader(searcher.reader(), "pinned", partial(_pinned, searcher))


def _pinned(searcher: Searcher) -> frozenset[int]:
    from whoosh import query as q

    return frozenset(searcher.docs_for_query(q.Term("pinned", True)))


def hidden_parts(searcher: Searcher) -> tuple[set[int], list[tuple[int, int]]]:
    """Dismissed docnums, and (docnum, expiry) of memories that expire: read per segment
    and put together per reader. (A range query over expiries costs ~50 ms at 10k, and a
    write makes a new reader; its segments but the new one are the old ones, which never
    change: a document deleted since is in no match, so still listing it hides nothing.)"""

    def read() -> tuple[set[int], list[tuple[int, int]]]:
        dismissed: set[int] = set()
        expiring: list[tuple[int, int]] = []
        for leaf, offset in searcher.leaf_searchers():
            here = per_reader(leaf.reader(), "hidden here", partial(_hidden_in, leaf))
            dismissed.update(docnum + offset for docnum in here[0])
            expiring += [(docnum + offset, at) for docnum, at in here[1]]
        return dismissed, expiring

    return per_reader(searcher.reader(), "hidden", read)


def expiring_query(until: int | None = None) -> Any:
    """The query for memories that expire at or before until (None: ever). expires_ts is
    0 for none, so a time before 1970 (negative) is looked for as well as one after."""
    from whoosh import query as q

    return q.Or([q.NumericRange("expires_ts", None, -1), q.NumericRange("expires_ts", 1, until)])


def _hidden_in(searcher: Searcher) -> tuple[list[int], list[tuple[int, int]]]:
    from whoosh import query as q

    dismissed = list(searcher.docs_for_query(q.Term("status", "dismissed")))
    expiring = [
        (docnum, searcher.stored_fields(docnum)["expires_ts"])
        for docnum in searcher.docs_for_query(expiring_query())
    ]
    return dismissed, expiring


def replacing(searcher: Searcher, memory_id: str) -> list[int]:
    """Docnums of the memories that list memory_id in supersedes, kept per reader.

    Plain postings, remembered: following whole chains looks up several per hit, and the
    same chains come back query after query.
    """
    cache = per_reader(searcher.reader(), "replacing", dict)
    if memory_id not in cache:
        cache[memory_id] = postings.docnums_with(searcher, "supersedes", memory_id)
    return cache[memory_id]


def mentioning(searcher: Searcher, entity_key: str) -> list[int]:
    """Docnums of the memories that mention an entity (its `name|kind` key), kept per
    reader: the entity bonus looks up the same few entities query after query."""
    cache = per_reader(searcher.reader(), "mentioning", dict)
    if entity_key not in cache:
        cache[entity_key] = postings.docnums_with(searcher, "entity_keys", entity_key)
    return cache[entity_key]


def superseded_ids(searcher: Searcher) -> frozenset[str]:
    """Ids that some memory lists in supersedes (cached per index generation)."""
    return per_reader(
        searcher.reader(),
        "superseded",
        lambda: frozenset(
            t.decode() if isinstance(t, bytes) else t
            for t in searcher.reader().lexicon("supersedes")
        ),
    )


def facts_of_subjects(searcher: Searcher, names: set[str]) -> list[tuple[str, str, dict[str, Any]]]:
    """(memory_id, path, semantic delta) of every memory that declares an entity with one of
    these names (normalised, as entity_keys holds them: `name|kind`), whatever its kind."""
    keys = per_reader(searcher.reader(), "entity_keys_by_name", lambda: _keys_by_name(searcher))
    docnums: set[int] = set()
    for name in names:
        for key in keys.get(name, ()):
            docnums.update(mentioning(searcher, key))
    found = []
    for docnum in sorted(docnums):
        fields = searcher.stored_fields(docnum)
        delta = json.loads(fields["record"])["semantic_delta"]
        found.append((fields["memory_id"], fields["path"], delta))
    return found


def _keys_by_name(searcher: Searcher) -> dict[str, list[str]]:
    """name -> its `name|kind` keys, from one read of the lexicon (a prefix lookup a name
    costs ~2 ms at 10k memories; a session asks of hundreds)."""
    found: dict[str, list[str]] = {}
    for term in searcher.reader().lexicon("entity_keys"):
        key = term.decode() if isinstance(term, bytes) else term
        found.setdefault(key.rpartition("|")[0], []).append(key)
    return found
