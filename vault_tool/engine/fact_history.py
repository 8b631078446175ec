"""The history of what the vault says about one subject: each fact with both of its times.

Valid time is the fact's own valid_from / valid_until (when it holds in the world); record
time comes from git: the commit that asserted it (the oldest of the unbroken run of
versions stating it, as blame counts it) and, for a fact a later version took out, the
commit that retracted it. A fact is `current` when its memory's file states it, it holds
on the day asked about, and no other memory supersedes its memory; otherwise it is
`ended` (outside its valid time), `retracted` or `superseded`, shown only when asked.
A fact a later version took out is not always a mistake taken back: when that version
states the same subject and predicate with another object from a later valid_from, the
world changed (staging moved region), so the fact held until the day before, and is
`current` on the days before that (`ended` after). Dismissed and expired memories are
left out, as search leaves them out.

The subject asked about is matched as an entity is (core/entities.py): its name in any
case and accents, or one name the other with words of the entity's gloss (`staging
cluster` asks for `staging` glossed "the staging cluster", and `Staging` for `staging
cluster` glossed "the cluster staging runs on").
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from vault_tool.core import redact
from vault_tool.core.text import gloss_words, normalize_name
from vault_tool.core.times import valid_on
from vault_tool.engine import history
from vault_tool.search.documents import Indexed
from vault_tool.search.index import Index
from vault_tool.storage.git import Commit
from vault_tool.storage.store import Store

STATUSES = ("current", "ended", "retracted", "superseded")

FactKey = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Asked:
    """What a fact_history call asks for."""

    subject: str
    predicate: str | None
    day: str  # YYYY-MM-DD: the day whose valid facts are current
    include_superseded: bool
    now: float  # epoch seconds: what has expired


def facts_about(store: Store, index: Index, asked: Asked) -> list[dict[str, Any]]:
    """Every fact about the subject the call asks for, oldest asserted first."""
    every = index.deltas()
    replaced_by: dict[str, list[str]] = {}
    for _, memory_id, delta in every:
        for old in delta.get("supersedes") or []:
            replaced_by.setdefault(old, []).append(memory_id)
    found: list[dict[str, Any]] = []
    for path, memory_id, delta in sorted(every):
        names = _subject_names(delta, asked.subject)
        if not names or _hidden(delta, asked.now):
            continue
        doc = index.by_path(path)
        if doc is None:
            continue
        later = replaced_by.get(memory_id, [])
        for record in _records(store, doc, delta):
            fact = record["fact"]
            if normalize_name(fact["subject"]) not in names:
                continue
            if asked.predicate and fact["predicate"] != asked.predicate:
                continue
            status = _status(record, later, asked.day)
            if status == "current" or asked.include_superseded:
                shown = {**fact, "status": status, "memory_id": memory_id, "title": doc.title}
                if record["until"]:
                    shown.update(valid_until=record["until"], replaced_on=record["replaced_on"])
                shown.update(path=path, version_id=doc.version_id, superseded_by=later)
                shown.update(asserted=record["asserted"], retracted=record["retracted"])
                found.append(shown)
    found.sort(key=lambda f: ((f["asserted"] or {}).get("date") or "~", f["path"]))
    return found


def _subject_names(delta: dict[str, Any], asked: str) -> set[str]:
    """The names (normalised) a memory's facts may give the subject asked about: its
    entities that are it (by name, or by name and gloss), and its facts' subjects of the
    very name."""
    names = {
        normalize_name(e.get("n", ""))
        for e in delta.get("entities") or []
        if names_entity(asked, e.get("n", ""), e.get("is", ""))
    }
    name = normalize_name(asked)
    facts = delta.get("facts") or []
    names |= {name for f in facts if normalize_name(f.get("subject", "")) == name}
    return names


def names_entity(asked: str, name: str, gloss: str) -> bool:
    """Whether a subject asked about names an entity: the same name in any case and
    accents, or one of the two names with words the entity's gloss holds added."""
    one, other = normalize_name(asked).split(), normalize_name(name).split()
    if one == other:
        return True
    shorter, longer = sorted((one, other), key=len)
    if not shorter or not set(shorter) <= set(longer):
        return False
    added = gloss_words(" ".join(w for w in longer if w not in shorter))
    return added <= gloss_words(gloss)


def _hidden(delta: dict[str, Any], now: float) -> bool:
    from vault_tool.core.times import parse_time

    if delta.get("status") == "dismissed":
        return True
    expires = delta.get("expires_at")
    return bool(expires) and parse_time(str(expires)).timestamp() <= now


def _status(record: dict[str, Any], replaced_by: list[str], day: str) -> str:
    if not record["stated"] and not record["until"]:
        return "retracted"
    if replaced_by:
        return "superseded"
    held = {**record["fact"], **({"valid_until": record["until"]} if record["until"] else {})}
    return "current" if valid_on(held, day) else "ended"


def _records(store: Store, doc: Indexed, delta: dict[str, Any]) -> list[dict[str, Any]]:
    """Each fact the memory states now or ever stated, with the commits that asserted it
    (and retracted it, if a later version took it out)."""
    now = {_key(f) for f in delta.get("facts") or []}
    versions: list[tuple[Commit, set[FactKey]]] = []
    for commit in history.commits_of(store, doc):  # newest first
        memory = history.version_memory(store, commit)
        if memory is not None:  # (a delete, later undone, keeps the run unbroken)
            versions.append((commit, {_key(f.to_dict()) for f in memory.facts}))
    ever = dict.fromkeys([*sorted(now), *(k for _, keys in versions for k in sorted(keys))])
    records = []
    for key in ever:
        stated = key in now
        # Its last run of versions: from now back (a fact stated now: none if the newest
        # commit lacks it, an uncommitted edit's); else from the newest version stating it.
        start = 0 if stated else next(i for i, (_, keys) in enumerate(versions) if key in keys)
        run = []
        for commit, keys in versions[start:]:
            if key not in keys:
                break
            run.append(commit)
        retracted = versions[start - 1] if not stated and start > 0 else None
        replaced_on = _replaced_on(dict(key), retracted[1]) if retracted else None
        records.append(
            {
                # A fact only an earlier version stated comes from git, which may hold a
                # secret no file does now (a person's commit, history from before the vault).
                "fact": _fact(dict(key)) if stated else redact.redact_tree(_fact(dict(key))),
                "stated": stated,
                "asserted": _when(run[-1] if run else None),
                "retracted": _when(retracted[0] if retracted else None),
                "replaced_on": replaced_on,
                "until": _day_before(dict(key), replaced_on) if replaced_on else None,
            }
        )
    return records


def _replaced_on(fact: dict[str, str], then: set[FactKey]) -> str | None:
    """The day a fact taken out stopped holding: the earliest valid_from, later than its
    own, of the facts the version that took it out states with its subject and predicate
    and another object. None when that version states none (taken back), or states the
    same object again (its dates changed: that fact speaks for it)."""
    same = (normalize_name(fact["subject"]), fact["predicate"])
    starts = []
    for other in map(dict, then):
        if (normalize_name(other["subject"]), other["predicate"]) != same:
            continue
        if normalize_name(other["object"]) == normalize_name(fact["object"]):
            return None
        if other.get("valid_from", "") > fact.get("valid_from", ""):
            starts.append(other["valid_from"])
    return min(starts) if starts else None


def _day_before(fact: dict[str, str], replaced_on: str) -> str:
    """The last day a replaced fact held: its own valid_until, if earlier."""
    day = (date.fromisoformat(replaced_on[:10]) - timedelta(days=1)).isoformat()
    own = fact.get("valid_until")
    return own if own and own < day else day


def _fact(fields: dict[str, str]) -> dict[str, str]:
    """A fact's fields in the order its files write them."""
    order = ("subject", "predicate", "object", "valid_from", "valid_until")
    return {name: fields[name] for name in order if name in fields}


def _key(fact: dict[str, Any]) -> FactKey:
    return tuple(sorted((k, str(v)) for k, v in fact.items()))


def _when(commit: Commit | None) -> dict[str, Any] | None:
    if commit is None:
        return None
    return {"version_id": commit.sha, "date": commit.date, "client": commit.client}
