"""Which memories a search's filters and its query's syntax leave, and those memories listed
newest first (`vault-tool list`, and a query of filters alone).

The filters of a call (memory_types, tags, since, until) and of its query (type:, tag:) all
hold; a phrase must be in a memory's title or content with its words adjacent; a memory
holding an excluded word or phrase is hidden, as dismissed and expired ones are. The index
keeps no word positions (search/documents.py: phrase=False keeps its postings small), so a
phrase is looked for in the stored content of the memories that hold all of its words.
"""

from __future__ import annotations

import heapq
import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

from vault_tool.core.projects import UNDECLARED, Scope
from vault_tool.core.query import Query, holds_phrase, word_sequence
from vault_tool.core.search_call import Controls
from vault_tool.core.text import query_words
from vault_tool.core.times import end_of, parse_time
from vault_tool.search import stored
from vault_tool.search.postings import columns, docnums_with, per_reader

if TYPE_CHECKING:
    from whoosh.searching import Searcher


def narrowed(
    searcher: Searcher, controls: Controls, query: Query, now: datetime
) -> tuple[set | None, set | None]:
    """(allowed docnums or None for all, hidden docnums or None for none)."""
    from whoosh import query as q

    types = controls.memory_types or query.memory_types
    if controls.memory_types and query.memory_types:  # both hold: the types in both
        types = tuple(t for t in controls.memory_types if t in query.memory_types)
        if not types:
            return set(), None
    required = []
    if types:
        required.append(q.Or([q.Term("memory_type", t) for t in types]))
    tags = dict.fromkeys([*(t.lower() for t in controls.tags), *query.tags])
    required.extend(q.Term("tags", t) for t in tags)
    if controls.since or controls.until:
        start = int(parse_time(controls.since).timestamp()) if controls.since else None
        end = int(end_of(controls.until).timestamp()) if controls.until else None
        # When it last changed, not its `updated` alone: a hand edit or a restore leaves
        # that as it was (search/documents.py's changed_ts).
        required.append(q.NumericRange("changed_ts", start, end))
    allow = set(searcher.docs_for_query(q.And(required))) if required else None
    if controls.project is not None:
        of_project = _of_project_docnums(searcher, controls.project)
        allow = set(of_project) if allow is None else allow & of_project
    if query.phrases:
        allow = holding_phrases(searcher, query.phrases, allow)
    dismissed, expiring = stored.hidden_parts(searcher)
    moment = now.timestamp()
    # A new set: the dismissed set is kept for the reader's lifetime and must not grow.
    hidden = dismissed | {docnum for docnum, at in expiring if at <= moment}
    for word in query.excluded_words:
        hidden |= _holding_words(searcher, query_words(word), None)
    for phrase in query.excluded_phrases:
        hidden |= holding_phrases(searcher, (phrase,), None)
    # Plain sets: Whoosh tests a filter's truth once per document, and a BitSet's truth
    # test scans every byte of it.
    return allow, hidden or None


def _of_project_docnums(searcher: Searcher, scope: Scope) -> frozenset[int]:
    """The docnums of one project's memories, kept per reader: every search and every check
    of a new memory for one it repeats asks for them (a batch of 20, 40 times), and a walk
    of a large project's postings costs milliseconds."""
    kept = per_reader(searcher.reader(), "of project", dict)
    if scope not in kept:
        kept[scope] = frozenset(searcher.docs_for_query(_of_project(scope)))
    return kept[scope]


def _of_project(scope: Scope) -> Any:
    """The memories of one project: those declaring it, and the undeclared ones of its
    folders (of every unmapped folder too, for the vault's default project)."""
    from whoosh import query as q

    undeclared = q.Term("project", UNDECLARED)
    either = [q.Term("project", scope.name)]
    if scope.folders:
        either.append(q.And([undeclared, q.Or([q.Term("folder", f) for f in scope.folders])]))
    if scope.unmapped:
        mapped = q.Or([q.Term("folder", f) for f in scope.mapped])
        either.append(q.AndNot(undeclared, mapped) if scope.mapped else undeclared)
    return q.Or(either)


def holding_phrases(searcher: Searcher, phrases: tuple[str, ...], allow: set | None) -> set[int]:
    """Docnums (of allow, if given) whose title or content holds every phrase."""
    wanted = [word_sequence(phrase) for phrase in phrases]
    candidates = _holding_words(searcher, [w for p in wanted for w in p], allow)
    wanted = [phrase for phrase in wanted if len(phrase) > 1]
    if not wanted:  # a phrase of one word (small words aside) is that word: no order to check
        return candidates
    found = set()
    for docnum in candidates:
        fields = searcher.stored_fields(docnum)
        content = json.loads(fields["record"])["content_md"]
        words = word_sequence(f"{fields['title']}\n{content}")
        if all(holds_phrase(words, phrase) for phrase in wanted):
            found.add(docnum)
    return found


def _holding_words(searcher: Searcher, words: list[str], allow: set | None) -> set[int]:
    """Docnums (of allow, if given) that hold every one of the analysed words."""
    held = None if allow is None else set(allow)
    for word in dict.fromkeys(words):
        if held is not None and not held:
            break
        docnums = docnums_with(searcher, "all", word)
        held = set(docnums) if held is None else held.intersection(docnums)
    return held or set()


def newest(
    searcher: Searcher,
    allow: set | None,
    hidden: set | None,
    offset: int,
    limit: int,
    *,
    oldest: bool = False,
) -> tuple[list[int], int]:
    """The docnums of allow (None: every memory) not hidden, newest first by updated (equal
    times by path; oldest: that order reversed), limit of them from offset; and how many
    there are in all."""
    reader = searcher.reader()
    if reader.doc_count() == 0:
        return [], 0  # (an empty index's reader has no columns)
    kept = reader.all_doc_ids() if allow is None else allow
    chosen = [d for d in kept if not (hidden and d in hidden)]
    updated, path = _updated(searcher), columns(searcher)["path"]
    pick = heapq.nlargest if oldest else heapq.nsmallest  # (oldest: newest's exact reverse)
    page = pick(offset + limit, chosen, key=lambda d: (-updated.get(d, 0), path[d]))
    return page[offset:], len(chosen)


def entries(searcher: Searcher, docnums: list[int]) -> list[dict[str, Any]]:
    """What `vault-tool list` shows of each memory: id, version, type, title, path, tags and
    dates."""
    shown = []
    for docnum in docnums:
        fields = searcher.stored_fields(docnum)
        record = json.loads(fields["record"])
        shown.append(
            {
                "memory_id": fields["memory_id"],
                "version_id": fields["version_id"],
                "memory_type": fields["memory_type"],
                "title": fields["title"],
                "path": fields["path"],
                "tags": record["semantic_delta"].get("tags", []),
                "created": record["created"],
                "updated": record["updated"],
            }
        )
    return shown


def listed(
    searcher: Searcher, controls: Controls, now: datetime, *, offset: int, limit: int
) -> tuple[list[dict[str, Any]], int]:
    """The memories the filters leave, newest first (limit of them from offset), and how
    many there are: dismissed and expired ones left out, as search leaves them out."""
    allow, hidden = narrowed(searcher, controls, Query(), now)
    if allow is not None and not allow:
        return [], 0  # (Whoosh reads an empty filter as no filter at all)
    docnums, total = newest(searcher, allow, hidden, offset, limit)
    return entries(searcher, docnums), total


def around(
    searcher: Searcher, path: str, before: int, after: int, now: datetime
) -> tuple[list[dict[str, Any]], int, int]:
    """The memories around the one at path, oldest first by updated (equal times by path):
    before of them, it, after of them; and how many more are earlier and later. Dismissed
    and expired ones are left out (the anchor itself never is)."""
    from whoosh import query as q

    anchor = next(iter(searcher.docs_for_query(q.Term("path", path))), None)
    if anchor is None:
        return [], 0, 0
    _, hidden = narrowed(searcher, Controls(), Query(), now)
    kept = [d for d in searcher.reader().all_doc_ids() if not (hidden and d in hidden)]
    kept = kept if anchor in kept else [*kept, anchor]
    updated, paths = _updated(searcher), columns(searcher)["path"]
    kept.sort(key=lambda d: (updated.get(d, 0), paths[d]))
    at = kept.index(anchor)
    start, end = max(0, at - before), min(len(kept), at + after + 1)
    return entries(searcher, kept[start:end]), start, len(kept) - end


def session_parts(
    searcher: Searcher,
    now: datetime,
    since: int,
    limit: int,
    scope: Scope | None = None,
    rule_ids: set[str] | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """What a session starts from: the pinned memories, the rules (memories of type rule),
    and the memories changed at or after since (epoch seconds), newest first; at most limit
    of each, dismissed and expired ones left out, and with scope, the pinned and recent
    ones of that project only (a rule says itself where it applies: rule_ids, when given,
    are the rules that apply, kept before the cut). Each entry carries
    its facts, and whether another memory supersedes it."""
    from whoosh import query as q

    allow, hidden = narrowed(searcher, Controls(project=scope), Query(), now)

    def kept(found: Any, mine: set[int] | None = allow) -> set[int]:
        docs = {d for d in searcher.docs_for_query(found) if not (hidden and d in hidden)}
        return docs if mine is None else docs & mine

    parts = {
        "pinned": kept(q.Term("pinned", True)),
        "rules": kept(q.Term("memory_type", "rule"), None),
        "recent": kept(q.NumericRange("changed_ts", since, None)),
    }
    if rule_ids is not None:
        ids = columns(searcher)["memory_id"]
        parts["rules"] = {d for d in parts["rules"] if ids[d] in rule_ids}
    superseded = stored.superseded_ids(searcher)
    shown = {}
    for name, docnums in parts.items():
        page, _ = newest(searcher, docnums, None, 0, limit)
        listed = entries(searcher, page)
        for entry, docnum in zip(listed, page, strict=True):
            delta = json.loads(searcher.stored_fields(docnum)["record"])["semantic_delta"]
            entry["facts"] = delta.get("facts") or []
            entry["superseded"] = entry["memory_id"] in superseded
        shown[name] = listed
    return shown


def _updated(searcher: Searcher) -> dict[int, int]:
    """docnum -> updated (epoch seconds) of every document, read once per index generation
    from the numeric field's full-precision terms (the field has no column)."""
    reader = searcher.reader()

    def read() -> dict[int, int]:
        field = searcher.schema["updated_ts"]
        times: dict[int, int] = {}
        for term in field.sortable_terms(reader, "updated_ts"):
            moment = field.from_bytes(term)
            for docnum in reader.postings("updated_ts", term).all_ids():
                times[docnum] = moment
        return times

    return per_reader(reader, "updated", read)
