"""What changed in meaning between two versions of a memory. Pure: no I/O.

A reviewer reads facts, not YAML: a fact whose object or validity changed is one change,
not a line removed and a line added; an entity whose gloss changed is re-glossed, not
dropped and added. compare() takes the two parsed versions (None where the memory did not
exist) and says what changed, field by field, with the body as a short word diff.
flags_of() says what a reviewer must not miss in that change.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

from vault_tool.core.ids import is_ulid
from vault_tool.core.memory import Entity, Fact, Memory
from vault_tool.core.secret_rules import MARKER_PREFIX
from vault_tool.core.text import normalize_name
from vault_tool.core.times import valid_on

# The scalar fields a change of is shown as before -> after, in this order.
SCALARS = ("memory_type", "title", "key", "project", "status", "pinned", "expires_at")
# Clients that are a person at work: an editor (taken in by a watcher) or an operator
# command. Every other client is an agent, or a tool acting for a person (import, sample).
PERSONS = frozenset({"hand-edit", "cli"})
TOOLS = frozenset({"import", "sample"})
# The body's word diff shows at most this many changed spans, each cut to this many words
# a side, with this many words of context before it: enough to see what an edit did.
BODY_SPANS = 4
SPAN_WORDS = 12
CONTEXT_WORDS = 3
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Change:
    """What changed between two versions of one memory (empty lists: nothing)."""

    facts_added: tuple[Fact, ...] = ()
    facts_removed: tuple[Fact, ...] = ()
    facts_changed: tuple[tuple[Fact, Fact], ...] = ()  # (before, after): same subject, predicate
    entities_added: tuple[Entity, ...] = ()
    entities_dropped: tuple[Entity, ...] = ()
    entities_reglossed: tuple[tuple[Entity, Entity], ...] = ()
    tags_added: tuple[str, ...] = ()
    tags_removed: tuple[str, ...] = ()
    supersedes_added: tuple[str, ...] = ()
    supersedes_removed: tuple[str, ...] = ()
    fields: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # name -> (before, after)
    body: tuple[dict[str, str], ...] = ()  # spans: {context, removed, added}; last {more}

    def is_empty(self) -> bool:
        return not any(getattr(self, name) for name in self.__dataclass_fields__)

    def facts_touched(self) -> int:
        return len(self.facts_added) + len(self.facts_removed) + len(self.facts_changed)

    def to_dict(self) -> dict[str, Any]:
        """The change as JSON: only the parts that changed."""
        out: dict[str, Any] = {}
        facts = {
            "added": [f.to_dict() for f in self.facts_added],
            "removed": [f.to_dict() for f in self.facts_removed],
            "changed": [
                {"before": b.to_dict(), "after": a.to_dict(), "what": fact_change(b, a)}
                for b, a in self.facts_changed
            ],
        }
        entities = {
            "added": [e.to_dict() for e in self.entities_added],
            "dropped": [e.to_dict() for e in self.entities_dropped],
            "reglossed": [
                {"n": a.n, "before": b.to_dict(), "after": a.to_dict()}
                for b, a in self.entities_reglossed
            ],
        }
        tags = {"added": list(self.tags_added), "removed": list(self.tags_removed)}
        supersedes = {
            "added": list(self.supersedes_added),
            "removed": list(self.supersedes_removed),
        }
        for name, part in (
            ("facts", facts), ("entities", entities), ("tags", tags), ("supersedes", supersedes)
        ):  # fmt: skip
            kept = {k: v for k, v in part.items() if v}
            if kept:
                out[name] = kept
        if self.fields:
            out["fields"] = {k: {"before": b, "after": a} for k, (b, a) in self.fields.items()}
        if self.body:
            out["body"] = list(self.body)
        return out


def compare(before: Memory | None, after: Memory | None) -> Change:
    """What changed from before to after (None: the memory did not exist there)."""
    old_facts = before.facts if before else ()
    new_facts = after.facts if after else ()
    added, removed, changed = _facts(old_facts, new_facts)
    entities = _entities(before.entities if before else (), after.entities if after else ())
    tags = _sets(before.tags if before else (), after.tags if after else ())
    supersedes = _sets(before.supersedes if before else (), after.supersedes if after else ())
    fields = {}
    for name in SCALARS:
        was, now = _scalar(before, name), _scalar(after, name)
        # A create or a delete shows only what it set beyond its title and type (named by
        # the memory's heading): a key, an expiry, a status.
        whole = bool(before and after) or name not in ("title", "memory_type")
        if was != now and whole and ((before and after) or was or now):
            fields[name] = (was, now)
    return Change(
        added, removed, changed, *entities, *tags, *supersedes, fields,
        body_diff(before.body if before else "", after.body if after else ""),
    )  # fmt: skip


def _scalar(memory: Memory | None, name: str) -> Any:
    """A field's value, its default (active, not pinned) read as unset."""
    value = getattr(memory, name) if memory else None
    return None if value in ("active", False) else value


def fact_change(before: Fact, after: Fact) -> list[str]:
    """What differs between two facts with one subject and predicate: object, validity."""
    what = ["object"] if before.object != after.object else []
    if (before.valid_from, before.valid_until) != (after.valid_from, after.valid_until):
        what.append("validity")
    return what


def _facts(
    old: tuple[Fact, ...], new: tuple[Fact, ...]
) -> tuple[tuple[Fact, ...], tuple[Fact, ...], tuple[tuple[Fact, Fact], ...]]:
    """(added, removed, changed): a removed fact and an added one with the same subject and
    predicate are one change, paired first by object (a new validity), then in order."""
    removed = [f for f in old if f not in new]
    added = [f for f in new if f not in old]
    changed: list[tuple[Fact, Fact]] = []
    for same_object in (True, False):
        for was in list(removed):
            match = next(
                (
                    now for now in added
                    if _same_slot(was, now) and (not same_object or now.object == was.object)
                ),
                None,
            )  # fmt: skip
            if match is not None:
                changed.append((was, match))
                removed.remove(was)
                added.remove(match)
    return tuple(added), tuple(removed), tuple(changed)


def _same_slot(one: Fact, other: Fact) -> bool:
    return one.predicate == other.predicate and normalize_name(one.subject) == normalize_name(
        other.subject
    )


def _entities(old: tuple[Entity, ...], new: tuple[Entity, ...]) -> tuple[tuple, tuple, tuple]:
    """(added, dropped, reglossed), an entity known by its name in any case."""
    was = {normalize_name(e.n): e for e in old}
    now = {normalize_name(e.n): e for e in new}
    added = tuple(e for k, e in now.items() if k not in was)
    dropped = tuple(e for k, e in was.items() if k not in now)
    reglossed = tuple((was[k], e) for k, e in now.items() if k in was and was[k] != e)
    return added, dropped, reglossed


def _sets(old: tuple[str, ...], new: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return tuple(t for t in new if t not in old), tuple(t for t in old if t not in new)


def body_diff(old: str, new: str) -> tuple[dict[str, str], ...]:
    """The body's changed words: a few spans, each with the words before it as context."""
    if old == new:
        return ()
    was, now = _WORD.findall(old), _WORD.findall(new)
    matcher = difflib.SequenceMatcher(None, was, now, autojunk=False)
    edits = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    spans: list[dict[str, str]] = [
        {
            "context": " ".join(was[max(0, i1 - CONTEXT_WORDS) : i1]),
            "removed": _cut(was[i1:i2]),
            "added": _cut(now[j1:j2]),
        }
        for _, i1, i2, j1, j2 in edits[:BODY_SPANS]
    ]
    if len(edits) > BODY_SPANS:
        spans.append({"more": str(len(edits) - BODY_SPANS)})
    return tuple(spans)


def _cut(words: list[str]) -> str:
    if len(words) <= SPAN_WORDS:
        return " ".join(words)
    return " ".join(words[:SPAN_WORDS]) + f" … (+{len(words) - SPAN_WORDS} words)"


# --- flags -----------------------------------------------------------------------------------


def is_persons(memory: Memory, client: str) -> bool:
    """Whether a memory is a person's (or another writer's) note, from where client stands:
    it has no ULID id (written by hand), or its source is not client."""
    return not (memory.id and is_ulid(memory.id)) or memory.source != client


def is_agent(client: str | None) -> bool:
    """Whether a commit's client is an agent (not a person's edit or command, not a tool)."""
    return bool(client) and client not in PERSONS | TOOLS


def redactions(memory: Memory | None) -> int:
    """How many redaction markers a memory holds (a secret removed on the way in)."""
    if memory is None:
        return 0
    texts = [memory.title, memory.body, *(f.as_text() for f in memory.facts)]
    texts += [f"{e.n} {e.gloss}" for e in memory.entities]
    found = sum(t.count(MARKER_PREFIX) for t in texts)
    return found + sum(1 for t in memory.tags if t.startswith("redacted-"))


def slot(fact: Fact) -> tuple[str, str]:
    """A fact's subject (normalised) and predicate: what two facts contradict on."""
    return normalize_name(fact.subject), fact.predicate


def contradictions(
    facts: tuple[Fact, ...], current: dict[tuple[str, str], list[tuple[Fact, str]]], day: str
) -> list[tuple[Fact, Fact, str]]:
    """(fact, the current fact it contradicts, where that one is) for each fact holding on day
    whose subject and predicate a current fact (current: by slot()) states with another
    object."""
    found = []
    for fact in facts:
        if not valid_on(fact.to_dict(), day):
            continue
        for other, where in current.get(slot(fact), ()):
            differs = normalize_name(other.object) != normalize_name(fact.object)
            if differs and valid_on(other.to_dict(), day):
                found.append((fact, other, where))
    return found
