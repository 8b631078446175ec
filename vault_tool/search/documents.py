"""What the index holds of one memory file: the Whoosh schema and the one index document.

One document per memory file, keyed by its path; it also keeps what search needs without
touching git or the disk: the version_id, the blob id and stat of the indexed bytes, and
the memory's content and semantic delta. Every writer of the index (indexing after a
write, catch-up, hand edits, an as-of search's scratch index) builds it with document_for.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from vault_tool.core import hand_made, ids, projects
from vault_tool.core.links import aliases_of
from vault_tool.core.memory import Memory, fingerprint
from vault_tool.core.text import normalize_name, shared_analyzer, text_analyzer
from vault_tool.core.times import parse_time, stamp_time
from vault_tool.search import links

# Bump when the fields, the analyzers or what is indexed change: an older index is then
# rebuilt on open (11: a committed file holding a secret is no longer indexed; 12: a
# person's note is titled by an H1 or its file name, dated by Obsidian's `date`, and what
# the folder's rules leave out is not indexed; 13: changed_ts, when a file last changed;
# 14: Chinese, Japanese and Korean runs indexed as their pairs of characters, version_id
# indexed and kept with the ranked fields, for a memory's batch neighbours; 15: irregular
# forms indexed as their base: taught as teach).
INDEX_SCHEMA_VERSION = 15


@dataclass(frozen=True)
class Indexed:
    """What the index holds for one file."""

    path: str
    memory_id: str
    version_id: str
    blob: str
    mtime_ns: int
    size: int
    memory_type: str
    title: str
    status: str
    record: dict[str, Any]

    @classmethod
    def from_stored(cls, fields: dict[str, Any]) -> Indexed:
        """The value of a document's stored fields."""
        return cls(
            path=fields["path"],
            memory_id=fields["memory_id"],
            version_id=fields["version_id"],
            blob=fields["blob"],
            mtime_ns=fields["mtime_ns"],
            size=fields["size"],
            memory_type=fields["memory_type"],
            title=fields["title"],
            status=fields.get("status", "active"),
            record=json.loads(fields["record"]),
        )


def whoosh_schema() -> Any:
    """Field layout of the index."""
    from whoosh import fields

    text = text_analyzer()
    return fields.Schema(
        # Columns (sortable) let catch-up read path, stat and blob of every document
        # without unpickling each document's stored fields.
        path=fields.ID(stored=True, unique=True, sortable=True),
        # A column too: ranking reads the id of every candidate without unpickling its
        # stored fields (~0.5 us against ~100 us a document).
        memory_id=fields.ID(stored=True, sortable=True),
        fingerprint=fields.ID(stored=True),
        key=fields.ID(stored=True),
        # What a file says of its project, and its top-level folder: a project's memories
        # are asked for by both (core/projects.py), so a new folder mapping needs no rebuild.
        project=fields.ID(),
        folder=fields.ID(),
        memory_type=fields.ID(stored=True),
        status=fields.ID(stored=True),
        title=fields.STORED(),
        # Every field in one, the weightier ones repeated: one postings list per query word
        # keeps pure-Python matching fast (a field per part made queries 5-10x slower), and
        # repetition is the field boost.
        all=_counted_text(text),
        glosses=_counted_text(text),
        tags=fields.KEYWORD(lowercase=True, commas=True),
        entity_keys=fields.KEYWORD(commas=True),
        supersedes=fields.KEYWORD(commas=True),
        # Dates in tiers of 16 bits: 4 terms a value keep range queries short. Whoosh's
        # default tiers of 4 bits make 16 a value; with the file's stat indexed alike, the
        # numbers were a third of a hand-made note's postings and half of a tool-made one's.
        updated_ts=fields.NUMERIC(int, bits=64, signed=True, stored=True, shift_step=16),
        # When the file last changed (since/until filter on it): its front matter's
        # `updated`, or its last commit's time when that is later and the commit did not
        # state it (a hand edit, a restore), or an uncommitted edit's mtime.
        changed_ts=fields.NUMERIC(int, bits=64, signed=True, shift_step=16),
        expires_ts=fields.NUMERIC(int, bits=64, signed=True, stored=True, shift_step=16),
        pinned=fields.BOOLEAN(stored=True),
        # Indexed too: the memories of one commit are one batch (search/candidates.py).
        version_id=fields.ID(stored=True),
        blob=fields.ID(stored=True, sortable=True),
        mtime_ns=_column_number(),
        size=_column_number(),
        mentions=fields.STORED(),
        times=fields.STORED(),
        record=fields.STORED(),
        # Links (search/links.py): the names this note is found by, the names its links
        # use, one per line (a name may hold spaces and commas), and its links as written.
        names=fields.IDLIST(stored=True, expression=links.ONE_PER_LINE),
        link_keys=fields.IDLIST(expression=links.ONE_PER_LINE),
        links=fields.STORED(),
    )


def _counted_text(analyzer: Any) -> Any:
    """A text field of term counts (no positions), counted in one pass (core/words.py)."""
    from whoosh import fields

    from vault_tool.core.words import Counted

    field = fields.TEXT(analyzer=analyzer, phrase=False)
    field.format = Counted(field_boost=field.format.field_boost)
    return field


def _column_number() -> Any:
    """A number read only from its column and stored fields (a file's stat: catch-up
    compares it), never searched: no postings to write."""
    from whoosh import fields

    field = fields.NUMERIC(int, bits=64, signed=False, stored=True, sortable=True)
    field.indexed = False
    return field


def document_for(
    memory: Memory,
    path: str,
    *,
    version_id: str,
    blob: str,
    mtime_ns: int,
    size: int,
    changed: int | None = None,
) -> dict[str, Any]:
    """The index document of one memory file, parsed from bytes with this blob id and stat.

    A file without an id in its front matter (made by hand) is known by its path's id.
    changed: when these bytes were made (epoch seconds), if not by a change that stated
    its own `updated`: a hand edit's or a restore's commit, an uncommitted edit's mtime.
    """
    memory_id = memory.id or ids.path_id(path)
    # A hand-made file without dates is dated by its modification time; one made in
    # Obsidian may say the day it was made as `date`, or as a link to its daily note.
    modified = stamp_time(mtime_ns / 1e9)
    made = memory.created or hand_made.created_of(memory.extra)
    updated = memory.updated or made or modified
    created = made or updated
    record = {
        "semantic_delta": memory.semantic_delta(),
        "content_md": memory.body,
        "created": created,
        "updated": updated,
        "source": memory.source,
        "has_id": memory.id is not None,
    }
    return {
        "path": path,
        "memory_id": memory_id,
        "fingerprint": fingerprint(memory.memory_type, memory.title, memory.body),
        "key": memory.key or "",
        "project": memory.project or projects.UNDECLARED,
        "folder": projects.top_folder(path),
        "memory_type": memory.memory_type,
        "status": memory.status,
        "title": memory.title,
        "all": _weighted_text(memory),
        "glosses": " . ".join(e.gloss for e in memory.entities),
        "tags": ",".join(_all_tags(memory)),
        "entity_keys": ",".join(f"{normalize_name(e.n)}|{e.kind}" for e in memory.entities),
        "supersedes": ",".join(memory.supersedes),
        "updated_ts": _epoch(updated),
        "changed_ts": max(_epoch(updated), changed or 0),
        "expires_ts": _expiry(memory.expires_at),
        "pinned": memory.pinned,
        "version_id": version_id,
        "blob": blob,
        "mtime_ns": mtime_ns,
        "size": size,
        "mentions": [[e.n, e.kind, e.gloss] for e in memory.entities],
        # What ranking reads of every candidate, beside its mentions (one unpickling): the
        # day it was made, its facts, and its commit (its batch: search/candidates.py).
        "times": {
            "created": created[:10],
            "type": memory.memory_type,
            "facts": [f.to_dict() for f in memory.facts],
            "commit": version_id,
        },
        "record": json.dumps(record, ensure_ascii=False),
        **links.index_fields(memory, path),
    }


# How many times each part of a memory is repeated in the `all` field (its weight).
FIELD_WEIGHTS = {"title": 2, "entities": 2, "tags": 2, "glosses": 1, "facts": 1}


def _weighted_text(memory: Memory) -> str:
    """The `all` field: the body as written, then each word of the other parts repeated by
    the sum of the weights of the parts it is in, each part counted once.

    Once per part: a title restated by every fact ("X tagged a", "X tagged b", ...) was a
    title word once per fact, so one title word outranked a note holding every word of the
    query in its body (bench/rare_words.py). Summed over parts: a name that is an entity
    and a fact's subject says more than a word in one part (the question set's facts).
    """
    # An entity that is the note itself (named as its title) restates it: it adds nothing.
    named = [e for e in memory.entities if normalize_name(e.n) != normalize_name(memory.title)]
    parts = {
        # A note's aliases are other names for it (Obsidian's): they weigh as its title.
        "title": " . ".join([memory.title, *aliases_of(memory.extra)]),
        "entities": " . ".join(e.n for e in named),
        "tags": " . ".join(_all_tags(memory)),
        "glosses": " . ".join(e.gloss for e in named),
        "facts": " . ".join(f.as_text() for f in memory.facts),
    }
    weights: dict[str, int] = {}  # the word as first written -> its weight
    written: dict[str, str] = {}  # analysed word -> the word as first written
    analyzer = shared_analyzer()
    for name, text in parts.items():
        for word in {
            t.text: text[t.startchar : t.endchar] for t in analyzer(text, chars=True)
        }.items():
            first = written.setdefault(word[0], word[1])
            weights[first] = weights.get(first, 0) + FIELD_WEIGHTS[name]
    repeated = " ".join(" ".join([word] * weight) for word, weight in weights.items())
    return f"{memory.body}\n{repeated}"


def _all_tags(memory: Memory) -> list[str]:
    """Front matter tags, then the body's `#tags`: searchable alike; only the first are ever
    written back into a file."""
    return list(dict.fromkeys(memory.tags + memory.inline_tags))


def _expiry(value: str | None) -> int:
    """expires_ts: 0 means none, so an expiry at the epoch's very second is one before it."""
    return (_epoch(value) or -1) if value else 0


def _epoch(value: str | None) -> int:
    if not value:
        return 0
    try:
        return int(parse_time(value).timestamp())
    except ValueError:
        return 0
