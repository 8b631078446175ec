"""The tool schemas as tools/list sends them: each file of schema/, self-contained and lean.

An agent pays for every character of tools/list, in every session, so the listing keeps
only what a caller needs: references into memory.schema.json and error.schema.json become
local, only the definitions a tool reaches are kept, and a definition reached once is put
where it is used. The top-level `$schema`, `$id` and `title` of a file describe the file,
not the value (MCP's default dialect is 2020-12, and a tool has its own name and title).

Input schemas are listed without their `pattern`s: every field's description says its
form in words, and the server checks the full schema file on every call, refusing with a
message that names the field and the fix (a host validating a regex answers with neither).
Everything else a file accepts or refuses is listed as it is.

Pure: files in, dicts out; no `mcp` import.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from typing import Any

from vault_tool.core.schema import load, local_ref

ERROR_DEF = "error_result"
# Keys of a schema file that describe the file, not the value it validates.
_FILE_KEYS = ("$schema", "$id", "title")
# Keys a reference may carry beside itself that say nothing about what is valid.
_NOTES = ("description", "title")
_REF = "#/$defs/"


def tool_schema(name: str, *, patterns: bool = True) -> dict[str, Any]:
    """schema/<name>, self-contained, with only what it reaches (and patterns if asked).

    Every property the server accepts is listed: a host that checks a call against the
    listing before sending it would otherwise refuse a call the server takes.
    """
    document = {k: v for k, v in copy.deepcopy(load(name)).items() if k not in _FILE_KEYS}
    pool = {**_shared_defs(), **_localised(document.pop("$defs", {}))}
    body = _localised(document)
    if not patterns:
        body, pool = _without_patterns(body), _without_patterns(pool)
    uses = _uses(body, pool)
    kept = {
        key for key, count in uses.items() if count > 1 and not _cheaper_placed(key, pool, count)
    }
    body = _placed(body, pool, kept)
    definitions: dict[str, Any] = {}
    waiting = set(_refs(body))
    while waiting:  # what is still referred to: the kept ones (and any that could not be placed)
        key = waiting.pop()
        if key not in definitions:
            definitions[key] = _placed(pool[key], pool, kept)
            waiting |= set(_refs(definitions[key]))
    if definitions:
        body["$defs"] = dict(sorted(definitions.items()))
    return body


def _cheaper_placed(key: str, pool: dict[str, Any], count: int) -> bool:
    """Whether a copy at each of count places is no longer than one definition and references.

    Validators pay for every reference they follow, so a short definition is put in place.
    """
    size = len(json.dumps(pool[key], separators=(",", ":")))
    reference = len(json.dumps({"$ref": _REF + key}, separators=(",", ":")))
    return size * count <= reference * count + len(key) + 3 + size


def _shared_defs() -> dict[str, Any]:
    """The definitions other files may point at: memory.schema.json's, and the error shape."""
    shared = copy.deepcopy(load("memory.schema.json")["$defs"])
    error = load("error.schema.json")
    shared[ERROR_DEF] = {k: copy.deepcopy(v) for k, v in error.items() if k not in _FILE_KEYS}
    return {key: _localised(value) for key, value in shared.items()}


def _localised(node: Any) -> Any:
    """Every `$ref` rewritten to point inside the one document."""
    if isinstance(node, dict):
        return {k: (local_ref(v) if k == "$ref" else _localised(v)) for k, v in node.items()}
    if isinstance(node, list):
        return [_localised(v) for v in node]
    return node


def _without_patterns(node: Any, *, naming: bool = False) -> Any:
    """The schema without `pattern` keywords (a property named pattern stays)."""
    if isinstance(node, dict):
        return {
            k: _without_patterns(v, naming=k in ("properties", "$defs") and not naming)
            for k, v in node.items()
            if naming or k != "pattern"
        }
    if isinstance(node, list):
        return [_without_patterns(v) for v in node]
    return node


def _uses(body: Any, pool: dict[str, Any]) -> Counter[str]:
    """How many places refer to each definition body reaches (counting through definitions)."""
    uses: Counter[str] = Counter()
    waiting = list(_refs(body))
    seen: set[str] = set()
    while waiting:
        key = waiting.pop()
        uses[key] += 1
        if key not in seen:
            seen.add(key)
            waiting.extend(_refs(pool[key]))
    return uses


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = node.get("$ref")
        found = [own.removeprefix(_REF)] if isinstance(own, str) and own.startswith(_REF) else []
        return found + [r for k, v in node.items() if k != "$ref" for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def _placed(node: Any, pool: dict[str, Any], kept: set[str]) -> Any:
    """node with each reference to a definition used once replaced by the definition.

    Beside a reference, only notes may repeat a key of the definition (the place's own
    description wins); any other clash keeps the reference, whose meaning is then an allOf.
    """
    if isinstance(node, list):
        return [_placed(v, pool, kept) for v in node]
    if not isinstance(node, dict):
        return node
    placed = {k: _placed(v, pool, kept) for k, v in node.items()}
    ref = placed.get("$ref")
    if not isinstance(ref, str) or not ref.startswith(_REF) or ref.removeprefix(_REF) in kept:
        return placed
    target = _placed(pool[ref.removeprefix(_REF)], pool, kept)
    beside = {k: v for k, v in placed.items() if k != "$ref"}
    if any(k in target and k not in _NOTES for k in beside):
        return placed
    return {**target, **beside}
