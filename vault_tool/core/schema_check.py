"""Whether a value is valid against a JSON Schema, decided by a check compiled once.

jsonschema builds a validator object for every subschema it descends into, on every call:
most of a reindex's parse time when every file carries entities and facts. fastjsonschema
compiles a schema into one Python function instead; it answers "valid or not", and
jsonschema describes the errors of an invalid value (schema.py), so every message stays
jsonschema's. The schemas in schema/ (their references inlined) use only keywords that
mean the same in draft 7, which fastjsonschema compiles, and in 2020-12, which the schemas
declare; a schema using any other keyword is not compiled (None) and jsonschema decides.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import Any

import fastjsonschema
from jsonschema import Draft202012Validator, ValidationError, validators

Check = Callable[[Any], bool]

_DRAFT7 = "http://json-schema.org/draft-07/schema#"
# Keywords that say nothing about validity.
_ANNOTATIONS = frozenset(
    {"$schema", "$id", "$comment", "title", "description", "examples", "default"}
    | {"deprecated", "readOnly", "writeOnly"}
)
# Keywords whose meaning is the same in draft 7 and 2020-12 (2020-12's `items` differs
# only beside `prefixItems`, which is not among them).
_SAME_IN_BOTH = frozenset(
    {"type", "properties", "additionalProperties", "required", "items", "pattern"}
    | {"maxLength", "minLength", "maxItems", "minItems", "minimum", "maximum"}
    | {"uniqueItems", "enum", "const", "oneOf", "anyOf", "allOf"}
)
_TYPES = frozenset({"string", "object", "array", "boolean", "null", "integer", "number"})
# Keywords whose argument is a schema, a list of schemas or a mapping of names to schemas.
_ONE_SCHEMA = ("additionalProperties", "items")
_SCHEMAS = ("oneOf", "anyOf", "allOf")


def compiled(schema: Any) -> Check | None:
    """A function telling whether a value is valid against schema, or None if it cannot."""
    if not _compilable(schema):
        return None
    if isinstance(schema, dict):
        schema = {**schema, "$schema": _DRAFT7}
    # use_default: a `default` must never be written into the value checked.
    validate = fastjsonschema.compile(schema, use_default=False)

    def check(value: Any) -> bool:
        try:
            validate(value)
        except fastjsonschema.JsonSchemaValueException:
            return False
        return True

    return check


def _compilable(schema: Any) -> bool:
    """Whether every keyword of schema, at every depth, means the same in both drafts."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict):
        return False
    for keyword, argument in schema.items():
        if keyword in _ANNOTATIONS:
            continue
        if keyword not in _SAME_IN_BOTH:
            return False
        if keyword == "type":
            names = [argument] if isinstance(argument, str) else argument
            if not isinstance(names, list) or not set(names) <= _TYPES:
                return False
        elif keyword == "properties":
            if not all(_compilable(sub) for sub in argument.values()):
                return False
        elif keyword in _ONE_SCHEMA:
            if not _compilable(argument):
                return False
        elif keyword in _SCHEMAS and not all(_compilable(sub) for sub in argument):
            return False
    return True


@cache
def text_pattern(pattern: str) -> re.Pattern[str]:
    """A schema's pattern as JSON Schema means it (ECMA-262): there `$` ends the text, where
    Python's also matches before a final newline, which would let "name\\n" pass."""
    return re.compile(re.sub(r"(?<!\\)\$", r"\\Z", pattern))


def _pattern_keyword(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    if validator.is_type(instance, "string") and not text_pattern(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


# jsonschema's own validator, with `pattern` as JSON Schema means it (and as the compiled
# checks read it).
Validator = validators.extend(Draft202012Validator, {"pattern": _pattern_keyword})
