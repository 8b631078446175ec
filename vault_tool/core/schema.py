"""The JSON Schemas in schema/ are the single source of truth for files, tool inputs and outputs.

This module loads them, validates against them, and turns a schema failure into an
InvalidInput that names the field and the fix: the first problem (`validate`, for files), or
every problem of a tool call at once (`problems` and `refusal`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from vault_tool.core.schema_words import article, choices, json_type
from vault_tool.core.times import MOMENT_FORMS
from vault_tool.errors import InvalidInput, LimitExceeded

BATCH_LIMIT = 20
# A refusal lists at most this many problems (a batch of bad items could have hundreds).
LISTED_PROBLEMS = 40


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a call: where, what, how to fix it; limit: too large or too many."""

    field: str
    message: str
    hint: str
    limit: bool = False


def refusal(found: list[Problem]) -> InvalidInput:
    """One error for every problem of a call: the first alone as it is, several listed.

    The first problem gives the code and the field (the order puts the shallowest and the
    limits first); the list keeps the call's own order, so a batch reads item by item.
    """
    # One problem a field: the first (a pattern the schema refuses is not a date as well).
    by_field: dict[str, Problem] = {}
    for problem in found:
        by_field.setdefault(problem.field, problem)
    found = list(by_field.values())
    first = found[0]
    kind = LimitExceeded if first.limit else InvalidInput
    if len(found) == 1:
        return kind(first.message, hint=first.hint, field=first.field)
    listed = sorted(found[:LISTED_PROBLEMS], key=lambda p: _item_index(p.field))
    more = len(found) - len(listed)
    tail = f"; and {more} more" if more else ""
    error = kind(
        f"{len(found)} problems: " + "; ".join(p.message for p in listed) + tail,
        hint="nothing was written; fix every one, then send the call again: "
        + "; ".join(f"{p.field}: {p.hint}" for p in listed),
        field=first.field,
    )
    error.problems = tuple({"field": p.field, "message": p.message, "hint": p.hint} for p in listed)
    return error


def _item_index(field: str) -> int:
    """items[3].content_md -> 3; a field outside items comes first."""
    if field.startswith("items["):
        number = field[len("items[") :].split("]", 1)[0]
        if number.isdigit():
            return int(number)
    return -1


# Hints for fields whose pattern alone does not say how to fix a value.
_PATTERN_HINTS = {
    "predicate": "use snake_case: lowercase words joined by _ (owns, runs_in, depends_on)",
    "memory_id": "use an id returned by search or remember (a 26-character ULID, or a "
    "path-derived id such as notes/wombat)",
    "supersedes": "list ids returned by search or remember",
    "expected_version_id": "send the full 40-character version_id from your last search "
    "or remember of this memory",
    "kind": "use a lowercase word such as person, service, team, tool",
    "key": "use lowercase dotted words such as staging.region",
    "tags": "use lowercase tags: letters, digits, -, _ or /",
    "title": "use one line of text",
    "n": "use one line of text",
    "is": "use one line of text",
    "since": f"use {MOMENT_FORMS}",
    "until": f"use {MOMENT_FORMS}",
    "project": "use lowercase letters, digits, '.', '_' or '-' (at most 64), such as billing-api",
    "name": "use lowercase letters, digits, '.', '_' or '-' (at most 64), such as todo",
    "id": "use a rule's id from list_rules",
}
_DATE_FIELDS = {"since", "until", "expires_at", "created", "updated", "valid_from", "valid_until"}


def schema_dir() -> Path:
    """Where the schema files live: inside the installed package, or at the repo's top level."""
    package = Path(__file__).parents[1]
    packaged = package / "schema"
    return packaged if packaged.is_dir() else package.parent / "schema"


@cache
def load(name: str) -> dict[str, Any]:
    """One schema file, parsed."""
    return json.loads((schema_dir() / name).read_text(encoding="utf-8"))


@cache
def memory_types() -> dict[str, str]:
    """The memory types of the schema's enum, each with its one-line description."""
    return {
        o["const"]: o["description"]
        for o in load("memory.schema.json")["$defs"]["memory_type"]["oneOf"]
    }


def bundled(name: str) -> dict[str, Any]:
    """A self-contained copy of a schema: references to the other files are inlined as $defs.

    MCP hosts receive tool schemas without access to our other files, so every
    reference must resolve inside the one document.
    """
    schema = copy.deepcopy(load(name))
    error = {k: v for k, v in load("error.schema.json").items() if k not in ("$schema", "$id")}
    defs = {**copy.deepcopy(load("memory.schema.json")["$defs"]), "error_result": error}

    def rewrite(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: (local_ref(v) if k == "$ref" else rewrite(v)) for k, v in node.items()}
        if isinstance(node, list):
            return [rewrite(v) for v in node]
        return node

    schema = rewrite(schema)
    schema.pop("$id", None)
    schema["$defs"] = {**defs, **schema.get("$defs", {})}
    return schema


def local_ref(ref: str) -> str:
    """memory.schema.json#/$defs/x -> #/$defs/x; error.schema.json -> #/$defs/error_result."""
    if ref == "error.schema.json":
        return "#/$defs/error_result"
    return ref.replace("memory.schema.json#", "#")


@cache
def _validator(name: str) -> Any:
    from vault_tool.core.schema_check import Validator

    # Validating against a copy with every $ref inlined is ~40% faster (resolving a
    # reference is the costly step), which matters when a reindex parses 10k files.
    return Validator(_inline_refs(bundled(name)))


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with each local `#/$defs/x` reference replaced by the definition itself."""
    definitions = schema.get("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if ref.startswith("#/$defs/"):
                rest = {k: inline(v) for k, v in node.items() if k != "$ref"}
                return {**inline(definitions[ref.removeprefix("#/$defs/")]), **rest}
            return {k: inline(v) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    return inline(schema)


def validate(instance: Any, name: str, *, prefix: str = "") -> None:
    """Raise InvalidInput (or LimitExceeded) for the first problem of instance against a schema:
    the first of `problems`, the others never described (nor walked, for a valid instance)."""
    found: list[Problem] = []
    _check_text(instance, [], prefix, found)
    if not found and not _is_valid(name)(instance):
        first = min(_validator(name).iter_errors(instance), key=_severity)
        found = _described(first, prefix)
    if found:
        raise refusal(found[:1])


def problems(instance: Any, name: str, *, prefix: str = "") -> list[Problem]:
    """Every problem of instance against a schema, the one to fix first first (a valid
    instance costs one compiled check: the errors are only walked when there are some)."""
    found: list[Problem] = []
    _check_text(instance, [], prefix, found)
    if not _is_valid(name)(instance):
        for error in sorted(_validator(name).iter_errors(instance), key=_severity):
            found.extend(_described(error, prefix))
    return found


@cache
def _is_valid(name: str) -> Callable[[Any], bool]:
    """Whether an instance is valid against a schema: compiled, or jsonschema's own check."""
    from vault_tool.core.schema_check import compiled

    validator = _validator(name)
    return compiled(validator.schema) or validator.is_valid


def _check_text(value: Any, path: list[Any], prefix: str, found: list[Problem]) -> None:
    """Find strings that are not valid Unicode (lone surrogates from escaped JSON)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            where = field_path(path, prefix)
            found.append(
                Problem(
                    where,
                    f"{where}: is not valid Unicode text (a lone surrogate)",
                    "send UTF-8 text; escape sequences like \\ud800 must come in valid pairs",
                )
            )
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_text(key, path, prefix, found)
            _check_text(item, [*path, key], prefix, found)
    elif isinstance(value, list):
        for n, item in enumerate(value):
            _check_text(item, [*path, n], prefix, found)


def errors_of(instance: Any, name: str) -> list[str]:
    """Every problem of instance against schema name, as readable lines (for output checks)."""
    if _is_valid(name)(instance):
        return []
    return [_describe(e, "")[0] for e in _validator(name).iter_errors(instance)]


def invalid_keys(instance: dict[str, Any], name: str, keys: tuple[str, ...]) -> set[str]:
    """Which of these top-level keys of instance hold a value the schema refuses."""
    return {k for k in keys if k in instance and not _property_is_valid(name, k)(instance[k])}


@cache
def _property_is_valid(name: str, key: str) -> Callable[[Any], bool]:
    from vault_tool.core.schema_check import Validator, compiled

    subschema = _validator(name).schema["properties"][key]
    return compiled(subschema) or Validator(subschema).is_valid


def field_path(parts: Any, prefix: str = "") -> str:
    """['semantic_delta', 'facts', 1, 'object'] -> 'semantic_delta.facts[1].object'."""
    out = prefix
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(arguments)"


def _described(error: Any, prefix: str) -> list[Problem]:
    """The problems one jsonschema error stands for: each missing or unknown field its own."""
    path = list(error.absolute_path)
    value = error.instance
    if error.validator == "required" and isinstance(value, dict):
        names = [n for n in error.validator_value if n not in value]
    elif error.validator == "additionalProperties" and isinstance(value, dict):
        names = sorted(set(value) - set(error.schema.get("properties", {})))
    else:
        names = []
    if len(names) <= 1:
        message, hint, limit = _describe(error, prefix)
        return [Problem(message.split(":", 1)[0], message, hint, limit)]
    found = []
    for name in names:
        where = field_path([*path, name], prefix)
        if error.validator == "required":
            found.append(Problem(where, f"{where}: is required but missing", _missing_hint(name)))
        else:
            allowed = ", ".join(sorted(error.schema.get("properties", {})))
            hint = f"remove it; allowed fields here: {allowed}"
            found.append(Problem(where, f"{where}: unknown field", hint))
    return found


def _severity(error: Any) -> tuple[int, int]:
    # The shallowest problem first (a batch that is too large before its items' details),
    # then unknown or missing fields before values: the order in which a caller fixes a call.
    rank = {"additionalProperties": 0, "required": 1, "type": 2}.get(error.validator, 3)
    return (len(error.absolute_path), rank)


def _describe(error: Any, prefix: str) -> tuple[str, str, bool]:
    """(message, hint, is_limit) for one jsonschema error."""
    path = list(error.absolute_path)
    field = field_path(path, prefix)
    leaf = next((p for p in reversed(path) if isinstance(p, str)), "")
    kind = error.validator
    value = error.instance
    if kind == "required":
        missing = [n for n in error.validator_value if not (isinstance(value, dict) and n in value)]
        name = missing[0] if missing else "?"
        target = field_path([*path, name], prefix)
        return f"{target}: is required but missing", _missing_hint(name), False
    if kind == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(value) - set(allowed)) if isinstance(value, dict) else []
        target = field_path([*path, extra[0]], prefix) if extra else field
        return (
            f"{target}: unknown field",
            f"remove it; allowed fields here: {', '.join(allowed)}",
            False,
        )
    if kind == "type":
        return (
            f"{field}: must be {article(error.validator_value)}, got {json_type(value)}",
            f"send {article(error.validator_value)}",
            False,
        )
    allowed = choices(kind, error.validator_value)
    if allowed is not None:
        if leaf == "ledger":
            return f"{field}: only true is accepted", "omit ledger or send true", False
        if set(allowed) == set(memory_types()):  # wherever a memory type is asked for
            return (
                f"{field}: unknown memory type {value!r}",
                f"use one of: {', '.join(allowed)}",
                False,
            )
        return (
            f"{field}: {value!r} is not allowed",
            f"use one of: {', '.join(json.dumps(c) for c in allowed)}",
            False,
        )
    if kind == "pattern":
        shown = value if len(str(value)) <= 80 else str(value)[:77] + "..."
        hint = _PATTERN_HINTS.get(leaf) or (
            "use YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ" if leaf in _DATE_FIELDS else "fix the value"
        )
        if isinstance(path[-1] if path else None, int) and leaf in _PATTERN_HINTS:
            hint = _PATTERN_HINTS[leaf]
        return f"{field}: {shown!r} is not valid", hint, False
    if kind == "maxLength":
        size = len(value)
        if leaf == "content_md":
            return (
                f"{field}: content too large ({size} characters, at most {error.validator_value})",
                "keep one memory to one point; split long material into several memories",
                True,
            )
        return (
            f"{field}: too long ({size} characters, at most {error.validator_value})",
            "shorten it",
            True,
        )
    if kind == "minLength":
        return f"{field}: must not be empty", "send some text", False
    if kind == "maxItems":
        if leaf == "items":
            return (
                f"{field}: batch too large ({len(value)} items, at most {BATCH_LIMIT})",
                f"split the batch into calls of at most {BATCH_LIMIT} items",
                True,
            )
        return (
            f"{field}: too many ({len(value)}, at most {error.validator_value})",
            "keep the most important ones or split the memory",
            True,
        )
    if kind == "minItems":
        return f"{field}: must not be empty", "add at least one item", False
    if kind == "uniqueItems":
        return f"{field}: has duplicate entries", "list each value once", False
    if kind in ("minimum", "maximum"):
        bounds = error.schema
        return (
            f"{field}: {value} is out of range",
            f"use a value from {bounds.get('minimum', '')} to {bounds.get('maximum', '')}",
            False,
        )
    return f"{field}: {error.message}", "fix the value to match the tool's input schema", False


FACT_HINT = 'add {"subject": ..., "predicate": ..., "object": ...} naming declared entities'


def _missing_hint(name: str) -> str:
    hints = {
        "facts": 'add at least one fact {"subject", "predicate", "object"} naming declared '
        "entities",
        "entities": 'declare each thing the facts name: {"n": ..., "kind": ..., "is": ...}',
        "is": "add a short gloss that tells this entity apart (for example: backend engineer "
        "on the platform team)",
        "mode": "send mode: create, update or delete",
        "memory_type": f"use one of: {', '.join(memory_types())}",
    }
    return hints.get(name, f"add {name}")
