"""JSON Lines sources: the MCP memory server's knowledge graph, and our own export."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vault_tool.core import ids, schema
from vault_tool.core.memory import KEY_ORDER, Entity, Fact, Memory, first_h1
from vault_tool.errors import InvalidInput
from vault_tool.ops.importers.items import (
    ENTITIES_MAX,
    FACTS_MAX,
    GLOSS_MAX,
    NAME_MAX,
    TITLE_MAX,
    Item,
    Progress,
    Skipped,
    Source,
    Unusable,
    kind_of,
    shorten,
    snake_case,
    text_field,
)

# --- the MCP memory server's knowledge graph ---------------------------------------------


def read_kg_jsonl(
    lines: list[tuple[int, str]], file_name: str, progress: Progress | None = None
) -> Source:
    """The official MCP memory server's memory.jsonl: one memory per entity, its observations
    as the body, its outgoing relations as facts."""
    source = Source()
    graph: dict[str, dict[str, Any]] = {}
    relations: list[tuple[str, dict[str, str]]] = []
    for number, text in lines:
        label = f"{file_name}:{number}"
        try:
            record = _json_object(text)
            kind = record.get("type")
            if kind == "entity":
                name = _required_text(record, "name")
                if name in graph:
                    raise Unusable(f"entity {name!r} already appears at {graph[name]['label']}")
                observations = record.get("observations", [])
                if not isinstance(observations, list):
                    raise Unusable("observations is not a list")
                graph[name] = {
                    "label": f"{label} (entity {name})",
                    "entity_type": text_field(record.get("entityType")) or "thing",
                    "observations": observations,
                    "relations": [],
                }
            elif kind == "relation":
                triple = {k: _required_text(record, k) for k in ("from", "to", "relationType")}
                relations.append((label, triple))
            else:
                raise Unusable(f"type {kind!r} is neither entity nor relation")
        except Unusable as problem:
            source.skipped.append(Skipped(label, str(problem)))
    first: dict[tuple[str, ...], str] = {}
    for label, triple in relations:
        owner = graph.get(triple["from"])
        key = tuple(triple.values())
        if owner is None:
            reason = f"relation {triple['from']} -> {triple['to']}: no entity named "
            source.skipped.append(Skipped(label, reason + f"{triple['from']!r} in the graph"))
        elif key in first:
            source.skipped.append(Skipped(label, f"same relation as {first[key]}"))
        else:
            first[key] = label
            owner["relations"].append(triple)
    source.skipped.sort(key=lambda s: int(s.label.rsplit(":", 1)[1]))
    for done, (name, entity) in enumerate(graph.items(), 1):
        source.items.append(_kg_item(name, entity, graph))
        if progress:
            progress(done, len(graph))
    return source


def _kg_identity(name: str, graph: dict[str, dict[str, Any]]) -> dict[str, str]:
    entity = graph.get(name)
    if entity is None:
        return {
            "n": shorten(name, NAME_MAX),
            "kind": "thing",
            "is": "named in the MCP memory graph",
        }
    gloss = shorten(f"{entity['entity_type']} in the MCP memory graph", GLOSS_MAX)
    return {
        "n": shorten(name, NAME_MAX),
        "kind": kind_of(entity["entity_type"], "thing"),
        "is": gloss,
    }


def _kg_item(name: str, entity: dict[str, Any], graph: dict[str, dict[str, Any]]) -> Item:
    notes: list[str] = []
    lines = []
    for observation in entity["observations"]:
        if isinstance(observation, str) and observation.strip():
            lines.append("- " + "\n  ".join(observation.strip().splitlines()))
        else:
            notes.append(f"observation {observation!r} is not text; left out")
    me = _kg_identity(name, graph)
    entities = {me["n"]: me}
    facts: list[dict[str, str]] = []
    for relation in entity["relations"]:
        target = _kg_identity(relation["to"], graph)
        full = target["n"] not in entities and len(entities) >= ENTITIES_MAX
        if full or len(facts) >= FACTS_MAX:
            notes.append(f"relation to {relation['to']!r} past the limits; left out")
            continue
        entities.setdefault(target["n"], target)
        predicate = snake_case(relation["relationType"], "relates_to")
        facts.append({"subject": me["n"], "predicate": predicate, "object": target["n"]})
    title = shorten(name, TITLE_MAX)
    body = f"# {title}\n\n" + "\n".join(lines) if lines else f"# {title}\n"
    memory = Memory(
        memory_type="fact",
        title=title,
        body=body,
        entities=tuple(Entity(e["n"], e["kind"], e["is"]) for e in entities.values()),
        facts=tuple(Fact(f["subject"], f["predicate"], f["object"]) for f in facts),
    )
    return Item(entity["label"], memory, notes=notes)


# --- our own export ----------------------------------------------------------------------


def read_export_jsonl(
    lines: list[tuple[int, str]], file_name: str, progress: Progress | None = None
) -> Source:
    """Lines written by `vault-tool export --format jsonl`: the same memories, ids and dates."""
    source = Source()
    for done, (number, text) in enumerate(lines, 1):
        label = f"{file_name}:{number}"
        try:
            source.items.append(_export_item(label, _json_object(text)))
        except Unusable as problem:
            source.skipped.append(Skipped(label, str(problem)))
        if progress:
            progress(done, len(lines))
    return source


def _export_item(label: str, record: dict[str, Any]) -> Item:
    delta = record.get("semantic_delta")
    content = record.get("content_md")
    if not isinstance(delta, dict) or not isinstance(content, str):
        raise Unusable("needs semantic_delta (an object) and content_md (a string)")
    memory_id = record.get("memory_id")
    if memory_id is not None:
        try:
            ids.check_memory_id(memory_id)
        except InvalidInput as problem:
            raise Unusable(problem.message) from None
    label = f"{label} ({memory_id})" if memory_id else label
    front = dict(delta)
    for name in ("created", "updated", "source"):
        if record.get(name) is not None:
            front[name] = record[name]
    try:
        schema.validate(front, "memory.schema.json", prefix="semantic_delta")
    except InvalidInput as problem:
        raise Unusable(f"{problem.message} ({problem.hint})") from None
    extra = record.get("front_matter_extra") or {}
    if not isinstance(extra, dict):
        raise Unusable("front_matter_extra is not an object")
    title = front.get("title") or first_h1(content) or "Untitled"
    tool_made = bool(memory_id and ids.is_ulid(memory_id))
    # Dates stay as written (the schema checked their shape), so files come back byte for byte.
    # A person's note may hold a key of ours with a value of its own (`status: in-progress`),
    # kept as written; a file of the tool's holds none.
    memory = Memory.from_mapping(
        front,
        content,
        id=memory_id if tool_made else None,
        title=title,
        extra={str(k): v for k, v in extra.items() if not (tool_made and k in KEY_ORDER)},
    )
    path = record.get("path")
    return Item(label, memory, path_hint=path if isinstance(path, str) else None)


def read_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, text) of each non-blank line of a UTF-8 JSON Lines file."""
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidInput(f"PATH: {path} is not UTF-8 text", hint="give a .jsonl file") from None
    return [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def _json_object(text: str) -> dict[str, Any]:
    try:
        record = json.loads(text)
    except json.JSONDecodeError as problem:
        raise Unusable(f"not valid JSON ({problem.msg} at column {problem.colno})") from None
    if not isinstance(record, dict):
        raise Unusable("not a JSON object")
    return record


def _required_text(record: dict[str, Any], name: str) -> str:
    value = record.get(name)
    if not isinstance(value, str) or not value.strip():
        raise Unusable(f"{name} is missing or not text")
    return value.strip()
