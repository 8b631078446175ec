"""Links resolved against the index: a note's outgoing links, its backlinks, broken links.

Each document keeps its links as written (`links`), the names they may find their notes
by (`link_keys`, indexed) and the names the note itself can be found by (`names`,
indexed; core/links.py says which). A link is resolved when it is read, against the
index as it is then, so a link to a note written later resolves without the linking note
being indexed again. Backlinks are term queries on `link_keys` for the note's names;
only a link whose note depends on where it is written (a name two notes share, a
relative link's fallback) is resolved again. Lookups are remembered per reader (one
index generation): the next write makes new ones.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from vault_tool.core import links
from vault_tool.core.links import Link
from vault_tool.core.memory import Memory
from vault_tool.core.text import gloss_words
from vault_tool.search import postings, stored
from vault_tool.search.postings import docnums_with, per_reader

if TYPE_CHECKING:
    from whoosh.searching import Searcher

# The tokenizer of the name fields: a name may hold spaces and commas, never a line break.
ONE_PER_LINE = re.compile(r"[^\n]+")
# A backlink list longer than this is cut in an addressed read (backlink_count says all).
SHOWN_BACKLINKS = 100
# Notes whose titles match the query best lend their backlinks a bonus (ranking.py's
# MATCHED_ENTITIES and EXPANSION_LIMIT for entities: the same numbers, the same reasons).
MATCHED_TITLES = 3
# Memories the text did not match are added for a note with at most this many backlinks.
EXPANSION_LIMIT = 100
# Titles whose words warm_titles analyses ahead: half of what core/text.py keeps of
# analysed titles and glosses, so a large vault's warm leaves room for the glosses.
TITLES_WARMED = 32_768


def index_fields(memory: Memory, path: str) -> dict[str, Any]:
    """The link fields of a memory's index document (documents.py's document_for)."""
    found = links.extract(memory.body)
    keys = dict.fromkeys(k for link in found for k in links.link_keys(link, path))
    names = links.names_of(path, memory.title, links.aliases_of(memory.extra))
    return {
        "names": "\n".join(names),
        "link_keys": "\n".join(keys),
        "links": [link.stored() for link in found],
    }


def of_note(searcher: Searcher, path: str) -> dict[str, Any]:
    """A note's outgoing links (each resolved, or not) and the notes that link to it."""
    docnum = searcher.document_number(path=path)
    if docnum is None:
        return {"links": [], "backlinks": [], "backlink_count": 0}
    lookup = _lookup(searcher)
    outgoing = []
    for link in _links(searcher, docnum):
        found = links.resolve(link, path, lookup)
        if found is not None:
            outgoing.append({"link": link.text, **_note(searcher, found)})
        elif not link.looks_like_file:  # (an attachment is no note's link)
            outgoing.append({"link": link.text})
    linking = sorted(_path(searcher, d) for d in backlinks(searcher, docnum))
    return {
        "links": outgoing,
        "backlinks": [_note(searcher, p) for p in linking[:SHOWN_BACKLINKS]],
        "backlink_count": len(linking),
    }


def backlinks(searcher: Searcher, docnum: int) -> list[int]:
    """Docnums of the notes with a link that resolves to this one (itself left out).

    Term queries on `link_keys` for each name of the note. A link by a name that finds
    this note alone, or by a path only this note has, resolves to it wherever it is
    written: those need no more. Where the name finds several notes, or a relative link
    may fall back to a name, the linking note's folder decides: those are resolved again.
    """
    cache = per_reader(searcher.reader(), "backlinks", dict)
    if docnum in cache:
        return cache[docnum]
    target = _path(searcher, docnum)
    names = {k.split(":", 1)[1] for k in (_stored(searcher, docnum)["names"] or "").split("\n")}
    lookup = _lookup(searcher)
    found: set[int] = set()
    again: set[int] = set()
    # The links first: most notes have none, and then no name needs looking up.
    for name in filter(None, names):
        linking = docnums_with(searcher, "link_keys", links.WIKI + name)
        if linking:
            answer = links.by_name(name, lookup)
            if target in answer:
                (found if answer == [target] else again).update(linking)
        again.update(docnums_with(searcher, "link_keys", links.FALLBACK + name))
    here = links.path_key(target)
    at_path = docnums_with(searcher, "link_keys", links.MARKDOWN + here)
    if at_path:
        alone = [p for p in lookup(links.PATH + here) if links.path_key(p) == here] == [target]
        (found if alone else again).update(at_path)
    for candidate in sorted(again - found - {docnum}):
        source = _path(searcher, candidate)
        if any(
            links.resolve(link, source, lookup) == target for link in _links(searcher, candidate)
        ):
            found.add(candidate)
    found.discard(docnum)
    cache[docnum] = sorted(found)
    return cache[docnum]


def title_bonus(
    searcher: Searcher,
    words: list[str],
    allowed: Callable[[int], bool],
    hits: dict[int, Any],
    notes: Callable[[], Iterable[int]],
) -> dict[int, float]:
    """docnum -> share of the query words that the title of a note it links to holds.

    A link counts as a mention of the note it names, by that note's title: a query that
    names the title finds the notes linking to it the way it finds the memories that
    mention an entity its gloss describes. The notes whose titles are compared are the
    query's best text matches (notes()), the filters' or not, as an entity's gloss may be
    any memory's; memories the text did not reach (not in hits) are added for a note few
    others link to, when allowed.
    """
    if not _any_links(searcher.reader()):
        return {}
    wanted = set(words)
    strengths = []
    for docnum in notes():
        shared = gloss_words(_stored(searcher, docnum)["title"]) & wanted
        if shared:
            strengths.append((len(shared) / len(wanted), docnum))
    strengths.sort(key=lambda item: (-item[0], _path(searcher, item[1])))
    bonus: dict[int, float] = {}
    for strength, docnum in strengths[:MATCHED_TITLES]:
        linking = backlinks(searcher, docnum)
        if len(linking) > EXPANSION_LIMIT:
            linking = [d for d in linking if d in hits]
        for source in linking:
            if source in hits or allowed(source):
                bonus[source] = max(bonus.get(source, 0.0), strength)
    return bonus


def warm_titles(searcher: Searcher, busy: Callable[[], bool]) -> int:
    """Analyse the words of the notes' titles before the queries that compare them: a
    first-asked query compares ~15 (title_bonus), and each word never seen before costs
    ~25 us to stem. The analysed titles are kept across index generations (core/text.py),
    unlike this reader's stored fields. At most TITLES_WARMED, stopping as soon as busy();
    how many titles were read."""
    reader = searcher.reader()
    if not _any_links(reader):
        return 0  # (title_bonus compares no title)
    read = 0
    for leaf, _ in reader.leaf_readers():
        for docnum in leaf.all_doc_ids():
            if read >= TITLES_WARMED or busy():
                return read
            gloss_words(leaf.stored_fields(docnum).get("title") or "")
            read += 1
    return read


def _any_links(reader: Any) -> bool:
    """Whether any note links to another (else no note's title lends a bonus)."""
    return reader.doc_count_all() > 0 and per_reader(
        reader, "any_links", lambda: any(True for _ in reader.lexicon("link_keys"))
    )


def unresolved(searcher: Searcher) -> Iterator[tuple[str, str]]:
    """(path, link as written) of every link that names no note (attachments left out)."""
    lookup = _lookup(searcher)
    reader = searcher.reader()
    for docnum in reader.all_doc_ids():
        fields = _stored(searcher, docnum)
        for link in _links(searcher, docnum):
            found = links.resolve(link, fields["path"], lookup)
            if found is None and not link.looks_like_file:
                yield fields["path"], link.text


def paths_named(searcher: Searcher, name: str) -> list[str]:
    """The paths of the notes a prefixed name (core/links.py's keys) finds."""
    return _lookup(searcher)(name)


def _lookup(searcher: Searcher) -> Callable[[str], list[str]]:
    """prefixed key -> paths of the notes with that name, remembered per reader."""
    cache = per_reader(searcher.reader(), "link_lookup", dict)

    def lookup(name: str) -> list[str]:
        if name not in cache:
            cache[name] = [_path(searcher, d) for d in docnums_with(searcher, "names", name)]
        return cache[name]

    return lookup


def _note(searcher: Searcher, path: str) -> dict[str, str]:
    fields = _stored(searcher, searcher.document_number(path=path))
    return {"memory_id": fields["memory_id"], "title": fields["title"], "path": path}


def _links(searcher: Searcher, docnum: int) -> list[Link]:
    return [Link.from_stored(row) for row in _stored(searcher, docnum).get("links") or ()]


def _path(searcher: Searcher, docnum: int) -> str:
    return postings.columns(searcher)["path"][docnum]


def _stored(searcher: Searcher, docnum: int) -> dict[str, Any]:
    """The fields links need of a document (path, id, title, names, links), per reader."""
    cache = per_reader(searcher.reader(), "link_fields", dict)
    if docnum not in cache:
        fields = stored.fields(searcher, docnum)
        cache[docnum] = {
            name: fields.get(name) for name in ("path", "memory_id", "title", "names", "links")
        }
    return cache[docnum]


def linking_to(searcher: Searcher, path: str, title: str, aliases: list[str]) -> list[str]:
    """Paths of the notes with a link that named the note at path, now that no note there
    answers to it: a deleted note's links left broken. (A name another note still has
    finds that one, and is left out.)"""
    lookup = _lookup(searcher)
    found: set[int] = set()
    for key in links.names_of(path, title, aliases):
        name = key.split(":", 1)[1]
        if name and not links.by_name(name, lookup):
            found.update(docnums_with(searcher, "link_keys", links.WIKI + name))
    here = links.path_key(path)
    if not lookup(links.PATH + here):
        found.update(docnums_with(searcher, "link_keys", links.MARKDOWN + here))
    return sorted(_path(searcher, d) for d in found)
