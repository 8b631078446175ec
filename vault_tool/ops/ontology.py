"""The vault's ontology: which entities and predicates its memories use, and rewriting them.

Entities are listed as search resolves them (entities.resolve: same normalised name, same
kind, compatible glosses), from what the index holds. A rename or merge reads every file
that mentions the target from disk, changes only its front matter (entity names, kinds and
glosses, and the facts' endpoints or predicates; never the title or the body a person
wrote) and writes them all as one commit through Vault.apply_plan. Files that do not
mention the target are never touched. A rewrite is editorial: it keeps each memory's
`updated` and `source`, so recency ranking and `since` filters are not disturbed; git
records when and by whom (`Client: cli`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from vault_tool.core import changelog, schema
from vault_tool.core.entities import Entity, Mention, mentions_of, resolve
from vault_tool.core.memory import Entity as Declared
from vault_tool.core.memory import Fact, Memory, parse
from vault_tool.core.text import normalize_name
from vault_tool.engine.vault import Vault
from vault_tool.engine.writer import Planned
from vault_tool.errors import InvalidInput, NotFound

Progress = Callable[[int, int], None]


@dataclass
class Rewrite:
    """A planned ontology change: the commit subject, the files it rewrites, and the bytes
    of each file as it was read (a file that changes before the write refuses it)."""

    subject: str
    plan: list[Planned]
    read: dict[str, bytes]


# --- listing -------------------------------------------------------------------------------


def _resolved(vault: Vault) -> tuple[list[Entity], list[Mention], dict[str, list[str]]]:
    """Entities of the whole vault, the mentions they come from, and memory id -> paths."""
    mentions: list[Mention] = []
    paths: dict[str, list[str]] = {}
    for path, memory_id, delta in vault.indexed():
        mentions.extend(mentions_of(memory_id, delta))
        paths.setdefault(memory_id, []).append(path)
    return resolve(mentions), mentions, paths


def entity_dict(entity: Entity) -> dict[str, Any]:
    """An entity as the CLI shows it (most used gloss first)."""
    glosses = sorted(entity.glosses.items(), key=lambda g: (-g[1], g[0]))
    return {
        "name": entity.name,
        "kind": entity.kind,
        "mentions": entity.mentions,
        "memories": len(entity.memory_ids),
        "glosses": [{"gloss": g, "mentions": n} for g, n in glosses],
        "memory_ids": sorted(entity.memory_ids),
    }


def list_entities(
    vault: Vault, *, kind: str | None = None, homonyms: bool = False
) -> list[dict[str, Any]]:
    """Every entity (optionally of one kind), most mentioned first.

    With homonyms, only names that resolve to more than one entity (another gloss or
    another kind), grouped by name.
    """
    found, _, _ = _resolved(vault)
    if kind:
        found = [e for e in found if e.kind == kind]
    if homonyms:
        by_name: dict[str, list[Entity]] = {}
        for entity in found:
            by_name.setdefault(normalize_name(entity.name), []).append(entity)
        found = [e for name in sorted(by_name) if len(by_name[name]) > 1 for e in by_name[name]]
    return [entity_dict(e) for e in found]


def list_predicates(vault: Vault) -> list[dict[str, Any]]:
    """Every predicate the facts use, with how many facts and memories use it."""
    facts: Counter[str] = Counter()
    memories: Counter[str] = Counter()
    for _, _, delta in vault.indexed():
        used = [f["predicate"] for f in delta.get("facts", ())]
        facts.update(used)
        memories.update(set(used))
    return [
        {"predicate": p, "facts": n, "memories": memories[p]}
        for p, n in sorted(facts.items(), key=lambda item: (-item[1], item[0]))
    ]


# --- choosing an entity --------------------------------------------------------------------


def find_entity(
    entities: list[Entity],
    name: str,
    *,
    kind: str | None = None,
    gloss_contains: str | None = None,
    option_prefix: str = "",
) -> Entity:
    """The one entity called name (narrowed by kind and gloss); refuse none or several."""
    key = normalize_name(name)
    named = [e for e in entities if normalize_name(e.name) == key]
    chosen = [e for e in named if kind is None or e.kind == kind]
    if gloss_contains:
        wanted = gloss_contains.casefold()
        chosen = [e for e in chosen if any(wanted in g.casefold() for g in e.glosses)]
    if not chosen:
        known = "; ".join(_describe(e) for e in named)
        raise NotFound(
            f"no entity named {name!r}"
            + (f" of kind {kind}" if kind else "")
            + (f" with a gloss containing {gloss_contains!r}" if gloss_contains else "")
            + (f" (there is: {known})" if known else ""),
            hint="list them with `vault-tool entities`",
        )
    if len(chosen) > 1:
        raise InvalidInput(
            f"{name!r} names {len(chosen)} entities: " + "; ".join(_describe(e) for e in chosen),
            hint=f"pick one with --{option_prefix}kind or --{option_prefix}gloss-contains TEXT",
        )
    return chosen[0]


def _describe(entity: Entity) -> str:
    gloss = max(entity.glosses, key=lambda g: entity.glosses[g])
    count = len(entity.memory_ids)
    return f"{entity.kind} {gloss!r} ({count} memor{'y' if count == 1 else 'ies'})"


def _same_entity(declared: Declared, entity: Entity) -> bool:
    return (
        normalize_name(declared.n) == normalize_name(entity.name)
        and declared.kind == entity.kind
        and declared.gloss in entity.glosses
    )


# --- planning rewrites ---------------------------------------------------------------------


def plan_rename_entity(
    vault: Vault,
    old: str,
    new: str,
    *,
    kind: str | None = None,
    gloss_contains: str | None = None,
    progress: Progress | None = None,
) -> Rewrite:
    """Rename one entity in every memory that mentions it (facts follow the new name)."""
    new = _checked_name(new)
    entities, mentions, paths = _resolved(vault)
    target = find_entity(entities, old, kind=kind, gloss_contains=gloss_contains)
    spelled = _usual_spelling(target, mentions)

    def rewrite(memory: Memory, path: str) -> Memory:
        renamed: dict[str, str] = {}
        kept: list[Declared] = []
        for declared in memory.entities:
            if _same_entity(declared, target):
                renamed[declared.n] = new
                kept.append(Declared(new, declared.kind, declared.gloss))
            else:
                kept.append(declared)
        clash = [d for d in memory.entities if d.n not in renamed and _names_clash(d.n, new)]
        if renamed and clash:
            raise InvalidInput(
                f"{path} already declares {clash[0].n!r} ({clash[0].kind}, {clash[0].gloss!r}): "
                f"renaming {old!r} to {new!r} would name two entities alike",
                hint=f"fold one into the other with `vault-tool merge-entity {old!r} "
                f"--into {clash[0].n!r}`",
            )
        return _with_entities(memory, kept, renamed)

    plan, read = _plan(vault, _paths_of(target, paths), rewrite, progress)
    return Rewrite(_subject("rename_entity", spelled, new, plan), plan, read)


def plan_merge_entity(
    vault: Vault,
    source: str,
    into: str,
    *,
    kind: str | None = None,
    gloss_contains: str | None = None,
    into_kind: str | None = None,
    into_gloss_contains: str | None = None,
    progress: Progress | None = None,
) -> Rewrite:
    """Merge entity `source` into `into`: its mentions take the target's name, kind and gloss.

    A memory that mentions both keeps the target's declaration and drops the source's;
    facts that named the source name the target.
    """
    entities, mentions, paths = _resolved(vault)
    gone = find_entity(entities, source, kind=kind, gloss_contains=gloss_contains)
    kept = find_entity(
        entities, into, kind=into_kind, gloss_contains=into_gloss_contains, option_prefix="into-"
    )
    if gone is kept:
        raise InvalidInput(
            f"{source!r} and {into!r} are the same entity",
            hint="name two different entities (see `vault-tool entities --homonyms`)",
        )
    name = _usual_spelling(kept, mentions)
    gloss = max(kept.glosses, key=lambda g: kept.glosses[g])
    target = Declared(name, kept.kind, gloss)

    def rewrite(memory: Memory, path: str) -> Memory:
        own = next((d for d in memory.entities if _same_entity(d, kept)), None)
        renamed: dict[str, str] = {}
        out: list[Declared] = []
        for declared in memory.entities:
            if not _same_entity(declared, gone):
                out.append(declared)
                continue
            renamed[declared.n] = own.n if own else target.n
            if own is None and target not in out:
                out.append(target)
        others = [d for d in out if d is not own and d != target]
        clash = [d for d in others if _names_clash(d.n, target.n)] if own is None else []
        if renamed and clash:
            raise InvalidInput(
                f"{path} already declares another {clash[0].n!r} ({clash[0].kind}, "
                f"{clash[0].gloss!r}): merging would name two entities alike",
                hint="rename that one first with `vault-tool rename-entity ... --gloss-contains`",
            )
        return _with_entities(memory, out, renamed)

    plan, read = _plan(vault, _paths_of(gone, paths), rewrite, progress)
    subject = _subject("merge_entity", _usual_spelling(gone, mentions), name, plan)
    return Rewrite(subject, plan, read)


def plan_rename_predicate(
    vault: Vault, old: str, new: str, *, progress: Progress | None = None
) -> Rewrite:
    """Rename a predicate in every fact that uses it."""
    if not re.fullmatch(_predicate_pattern(), new) or len(new) > 64:
        raise InvalidInput(
            f"NEW: {new!r} is not a snake_case predicate",
            hint="use lowercase words joined by _ (owns, runs_in, depends_on)",
            field="new",
        )
    if new == old:
        raise InvalidInput(f"{old!r} and {new!r} are the same predicate", hint="name a new one")
    targets = sorted(
        path
        for path, _, delta in vault.indexed()
        if any(f["predicate"] == old for f in delta.get("facts", ()))
    )
    if not targets:
        raise NotFound(
            f"no fact uses the predicate {old!r}", hint="list them with `vault-tool predicates`"
        )

    def rewrite(memory: Memory, path: str) -> Memory:
        facts = [
            Fact(f.subject, new, f.object, f.valid_from, f.valid_until) if f.predicate == old else f
            for f in memory.facts
        ]
        return memory.with_changes(facts=_unique(facts))

    plan, read = _plan(vault, targets, rewrite, progress)
    return Rewrite(_subject("rename_predicate", old, new, plan), plan, read)


def apply(vault: Vault, rewrite: Rewrite, *, dry_run: bool = False) -> dict[str, Any]:
    """Write a planned rewrite as one commit (client "cli"); with dry_run, only its diff.

    A file that changed since it was read for the plan (an agent's update, a hand edit)
    refuses the whole rewrite: writing the plan would undo that change.
    """
    result = vault.apply_plan(
        rewrite.plan, rewrite.subject, client="cli", dry_run=dry_run, read=rewrite.read
    )
    ids = {p.path: (p.memory.id if p.memory and p.memory.id else p.path) for p in rewrite.plan}
    return {
        "subject": rewrite.subject,
        "dry_run": dry_run,
        "version_id": result.version_id,
        "paths": result.paths,
        "memory_ids": [ids[path] for path in result.paths],
        "diff": result.diff,
    }


# --- helpers -------------------------------------------------------------------------------


def _plan(
    vault: Vault,
    paths: list[str],
    rewrite: Callable[[Memory, str], Memory],
    progress: Progress | None,
) -> tuple[list[Planned], dict[str, bytes]]:
    """Read each file from disk, rewrite it, keep those whose content changes."""
    plan: list[Planned] = []
    read: dict[str, bytes] = {}
    for n, path in enumerate(paths, 1):
        if progress:
            progress(n, len(paths))
        # Refused as apply_plan would refuse it, before the unfinished edit is even parsed.
        data = vault.committed_file(path)
        if data is None:
            continue  # deleted since it was indexed: nothing left to rename
        memory = parse(data.decode("utf-8"), path)
        changed = rewrite(memory, path)
        if changed != memory:
            # (a person's own values, kept as written, are theirs: not held to the schema)
            ours = {k: v for k, v in changed.front_matter().items() if k not in changed.extra}
            schema.validate(ours, "memory.schema.json", prefix=f"{path}: ")
            plan.append(Planned(path, changed))
            read[path] = data
    return plan, read


def _paths_of(entity: Entity, paths: dict[str, list[str]]) -> list[str]:
    return sorted({p for memory_id in entity.memory_ids for p in paths.get(memory_id, ())})


def _with_entities(memory: Memory, entities: list[Declared], renamed: dict[str, str]) -> Memory:
    """The memory with these entities, its facts' endpoints renamed, duplicates dropped."""
    if not renamed:
        return memory
    facts = [
        Fact(
            renamed.get(f.subject, f.subject),
            f.predicate,
            renamed.get(f.object, f.object),
            f.valid_from,
            f.valid_until,
        )
        for f in memory.facts
    ]
    return memory.with_changes(entities=_unique(entities), facts=_unique(facts))


def _unique(items: list[Any]) -> tuple[Any, ...]:
    return tuple(dict.fromkeys(items))


def _names_clash(a: str, b: str) -> bool:
    return a == b or normalize_name(a) == normalize_name(b)


def _usual_spelling(entity: Entity, mentions: list[Mention]) -> str:
    """The spelling most mentions of an entity use ('Ana Lima' over 'ana lima')."""
    key = normalize_name(entity.name)
    spellings = Counter(
        m.n
        for m in mentions
        if normalize_name(m.n) == key and m.kind == entity.kind and m.gloss in entity.glosses
    )
    return spellings.most_common(1)[0][0] if spellings else entity.name


def _subject(template: str, old: str, new: str, plan: list[Planned]) -> str:
    return changelog.subject(template, old=old, new=new, memories=changelog.memories(len(plan)))


@cache
def _name_def() -> dict[str, Any]:
    return schema.load("memory.schema.json")["$defs"]["name"]


@cache
def _predicate_pattern() -> str:
    fact = schema.load("memory.schema.json")["$defs"]["fact"]
    return fact["properties"]["predicate"]["pattern"]


def _checked_name(name: str) -> str:
    """A new entity name, trimmed; refused unless the schema allows it."""
    name = name.strip()
    rule = _name_def()
    if not name or len(name) > rule["maxLength"] or not re.fullmatch(rule["pattern"], name):
        raise InvalidInput(
            f"NEW: {name!r} is not a valid entity name",
            hint=f"use one line of text, at most {rule['maxLength']} characters",
            field="new",
        )
    return name
