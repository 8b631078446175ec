"""The history of what the vault says about one subject: each fact with both of its times.

Valid time is the fact's own valid_from / valid_until (when it holds in the world); record
time comes from git: the commit that asserted it (the oldest of the unbroken run of
versions stating it, as blame counts it) and, for a fact a later version took out, the
commit that retracted it. A fact is `current` when its memory's file states it, it holds
on the day asked about, and no other memory supersedes its memory; otherwise it is
`ended` (outside its valid time), `retracted` or `superseded`, shown only when asked.
Dismissed and expired memories are left out, as search leaves them out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vault_tool.core import redact
from vault_tool.core.text import normalize_name
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
    name = normalize_name(asked.subject)
    every = index.deltas()
    replaced_by: dict[str, list[str]] = {}
    for _, memory_id, delta in every:
        for old in delta.get("supersedes") or []:
            replaced_by.setdefault(old, []).append(memory_id)
    found: list[dict[str, Any]] = []
    for path, memory_id, delta in sorted(every):
        if not _about(delta, name) or _hidden(delta, asked.now):
            continue
        doc = index.by_path(path)
        if doc is None:
            continue
        later = replaced_by.get(memory_id, [])
        for record in _records(store, doc, delta):
            fact = record["fact"]
            if normalize_name(fact["subject"]) != name:
                continue
            if asked.predicate and fact["predicate"] != asked.predicate:
                continue
            status = _status(record, later, asked.day)
            if status == "current" or asked.include_superseded:
                shown = {**fact, "status": status, "memory_id": memory_id, "title": doc.title}
                shown.update(path=path, version_id=doc.version_id, superseded_by=later)
                shown.update(asserted=record["asserted"], retracted=record["retracted"])
                found.append(shown)
    found.sort(key=lambda f: ((f["asserted"] or {}).get("date") or "~", f["path"]))
    return found


def _about(delta: dict[str, Any], name: str) -> bool:
    """Whether a memory names the subject: as an entity, or as a fact's subject."""
    names = [e.get("n", "") for e in delta.get("entities") or []]
    names += [f.get("subject", "") for f in delta.get("facts") or []]
    return any(normalize_name(n) == name for n in names)


def _hidden(delta: dict[str, Any], now: float) -> bool:
    from vault_tool.core.times import parse_time

    if delta.get("status") == "dismissed":
        return True
    expires = delta.get("expires_at")
    return bool(expires) and parse_time(str(expires)).timestamp() <= now


def _status(record: dict[str, Any], replaced_by: list[str], day: str) -> str:
    if not record["stated"]:
        return "retracted"
    if replaced_by:
        return "superseded"
    return "current" if valid_on(record["fact"], day) else "ended"


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
        retracted = versions[start - 1][0] if not stated and start > 0 else None
        records.append(
            {
                # A fact only an earlier version stated comes from git, which may hold a
                # secret no file does now (a person's commit, history from before the vault).
                "fact": _fact(dict(key)) if stated else redact.redact_tree(_fact(dict(key))),
                "stated": stated,
                "asserted": _when(run[-1] if run else None),
                "retracted": _when(retracted),
            }
        )
    return records


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
