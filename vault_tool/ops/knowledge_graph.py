"""The vault as the MCP memory server's knowledge graph: what `export --format kg-jsonl` writes.

Entities are resolved as `vault-tool entities` and search resolve them (core/entities.py:
the same normalised name, the same kind, glosses that share words), so one person described
three ways is one graph entity with three glosses among its observations. Names in the
graph are unique: a name that two resolved entities share is written `name (gloss)`.
"""

from __future__ import annotations

from typing import Any

from vault_tool.core.entities import Entity, Mention, resolve
from vault_tool.core.text import normalize_name

Record = dict[str, Any]


def kg_graph(records: list[Record]) -> tuple[list[Record], list[Record]]:
    """(entities, relations) of the graph for export records, in a stable order.

    An entity's observations are its glosses (most used first), then one line per memory
    that mentions it; relations are the facts, each (from, to, predicate) once.
    """
    mentions = [
        Mention(record["memory_id"], e["n"], e["kind"], e["is"])
        for record in records
        for e in record["semantic_delta"]["entities"]
    ]
    resolved = resolve(mentions)
    names = _unique_names(resolved)
    # (name key, gloss) -> the entity's graph name: each gloss of a name key is in one cluster
    name_of = {
        (f"{normalize_name(entity.name)}|{entity.kind}", gloss): names[index]
        for index, entity in enumerate(resolved)
        for gloss in entity.glosses
    }
    by_name: dict[str, list[str]] = {}
    for index, entity in enumerate(resolved):
        by_name.setdefault(normalize_name(entity.name), []).append(names[index])
    titles = {record["memory_id"]: record["semantic_delta"]["title"] for record in records}
    entities = [
        {
            "type": "entity",
            "name": names[index],
            "entityType": entity.kind,
            "observations": [
                *(gloss for gloss in _glosses(entity) if gloss),
                *(
                    f"mentioned in memory {memory_id}: {titles[memory_id]}"
                    for memory_id in _in_record_order(entity, records)
                ),
            ],
        }
        for index, entity in sorted(enumerate(resolved), key=lambda item: names[item[0]])
    ]
    undeclared: dict[str, Record] = {}
    relations: dict[tuple[str, str, str], Record] = {}
    for record in records:
        declared = {
            e["n"]: name_of[(Mention("", e["n"], e["kind"], e["is"]).name_key, e["is"])]
            for e in record["semantic_delta"]["entities"]
        }
        for fact in record["semantic_delta"]["facts"]:
            ends = []
            for end in (fact["subject"], fact["object"]):
                candidates = by_name.get(normalize_name(end), [])
                if end in declared:
                    ends.append(declared[end])
                elif len(candidates) == 1:
                    ends.append(candidates[0])
                else:  # named by a fact, declared nowhere (a hand-made file may do that)
                    undeclared.setdefault(
                        end,
                        {"type": "entity", "name": end, "entityType": "unknown",
                         "observations": []},
                    )  # fmt: skip
                    ends.append(end)
            key = (ends[0], ends[1], fact["predicate"])
            relations.setdefault(
                key, {"type": "relation", "from": ends[0], "to": ends[1], "relationType": key[2]}
            )
    return entities + list(undeclared.values()), list(relations.values())


def _glosses(entity: Entity) -> list[str]:
    """The entity's glosses, most used first (as `vault-tool entities` lists them)."""
    return [g for g, _ in sorted(entity.glosses.items(), key=lambda g: (-g[1], g[0]))]


def _in_record_order(entity: Entity, records: list[Record]) -> list[str]:
    return [r["memory_id"] for r in records if r["memory_id"] in entity.memory_ids]


def _unique_names(resolved: list[Entity]) -> list[str]:
    """Each entity's graph name: its name, or `name (gloss)` / `name (kind: gloss)` when
    another entity goes by the same name."""
    sharing: dict[str, list[Entity]] = {}
    for entity in resolved:
        sharing.setdefault(normalize_name(entity.name), []).append(entity)
    names = []
    for entity in resolved:
        others = sharing[normalize_name(entity.name)]
        if len(others) == 1:
            names.append(entity.name)
            continue
        gloss = _glosses(entity)[0]
        same_gloss = sum(1 for other in others if _glosses(other)[0] == gloss)
        names.append(f"{entity.name} ({gloss})" if same_gloss == 1 else
                     f"{entity.name} ({entity.kind}: {gloss})")  # fmt: skip
    return names
