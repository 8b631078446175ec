"""Whether a value is valid against a JSON Schema, decided by a check compiled once.

jsonschema builds a validator object for every subschema it descends into, on every call:
most of a reindex's parse time when every file carries entities and facts. The schemas in
schema/ use a small set of keywords, so each (with its references inlined) compiles into
nested closures that answer only "valid or not", with jsonschema's meaning of each keyword
(its type checker, its equality for enum, const and uniqueItems). A schema using any other
keyword does not compile (None): jsonschema then decides. The errors of an invalid value
are always jsonschema's own (schema.py), so every message stays the same.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator, ValidationError, validators
from jsonschema._utils import equal, uniq

Check = Callable[[Any], bool]

# Keywords that say nothing about validity.
_ANNOTATIONS = frozenset(
    {"$schema", "$id", "$comment", "title", "description", "examples", "default"}
    | {"deprecated", "readOnly", "writeOnly"}
)
_IS_TYPE = Draft202012Validator.TYPE_CHECKER.is_type
_FAST_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


class _Unsupported(Exception):
    """A keyword this compiler does not know: jsonschema must decide."""


def compiled(schema: Any) -> Check | None:
    """A function telling whether a value is valid against schema, or None if it cannot."""
    try:
        return _compile(schema)
    except _Unsupported:
        return None


def _compile(schema: Any) -> Check:
    if schema is True or schema == {}:
        return lambda value: True
    if schema is False:
        return lambda value: False
    if not isinstance(schema, dict):
        raise _Unsupported(repr(schema))
    checks: list[Check] = []
    for keyword, argument in schema.items():
        if keyword in _ANNOTATIONS or keyword == "properties":
            continue
        make = _KEYWORDS.get(keyword)
        if make is None:
            raise _Unsupported(keyword)
        checks.append(make(argument, schema))
    if "properties" in schema:  # after the cheap checks: type first refuses a wrong shape
        checks.append(_properties(schema["properties"], schema))
    if len(checks) == 1:
        return checks[0]
    return lambda value: all(check(value) for check in checks)


def _type(types: Any, schema: dict[str, Any]) -> Check:
    names = [types] if isinstance(types, str) else list(types)
    tests = [_FAST_TYPES.get(name) or _type_test(name) for name in names]
    if len(tests) == 1:
        return tests[0]
    return lambda value: any(test(value) for test in tests)


def _type_test(name: str) -> Callable[[Any], bool]:
    try:
        _IS_TYPE(None, name)  # an unknown type name raises here, once, not on every value
    except Exception as unknown:
        raise _Unsupported(name) from unknown
    return lambda value: _IS_TYPE(value, name)


def _properties(properties: dict[str, Any], schema: dict[str, Any]) -> Check:
    subchecks = {name: _compile(sub) for name, sub in properties.items()}

    def check(value: Any) -> bool:
        if not isinstance(value, dict):
            return True
        for name, subcheck in subchecks.items():
            if name in value and not subcheck(value[name]):
                return False
        return True

    return check


def _additional(argument: Any, schema: dict[str, Any]) -> Check:
    if "patternProperties" in schema:
        raise _Unsupported("patternProperties")
    known = frozenset(schema.get("properties", {}))
    extra = _compile(argument)

    def check(value: Any) -> bool:
        if not isinstance(value, dict):
            return True
        return all(extra(value[key]) for key in value if key not in known)

    return check


def _required(names: list[str], schema: dict[str, Any]) -> Check:
    return lambda value: not isinstance(value, dict) or all(n in value for n in names)


def _items(argument: Any, schema: dict[str, Any]) -> Check:
    if "prefixItems" in schema:
        raise _Unsupported("prefixItems")
    item = _compile(argument)
    return lambda value: not isinstance(value, list) or all(item(v) for v in value)


def _pattern(pattern: str, schema: dict[str, Any]) -> Check:
    search = text_pattern(pattern).search
    return lambda value: not isinstance(value, str) or search(value) is not None


@cache
def text_pattern(pattern: str) -> re.Pattern[str]:
    """A schema's pattern as JSON Schema means it (ECMA-262): there `$` ends the text, where
    Python's also matches before a final newline, which would let "name\\n" pass."""
    return re.compile(re.sub(r"(?<!\\)\$", r"\\Z", pattern))


def _pattern_keyword(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    if validator.is_type(instance, "string") and not text_pattern(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


# jsonschema's own validator, with `pattern` as the compiled checks read it.
Validator = validators.extend(Draft202012Validator, {"pattern": _pattern_keyword})


def _of_arrays(test: Callable[[list[Any], Any], bool]) -> Callable[[Any, Any], Check]:
    def make(argument: Any, schema: dict[str, Any]) -> Check:
        return lambda value: not isinstance(value, list) or test(value, argument)

    return make


def _of_strings(test: Callable[[str, Any], bool]) -> Callable[[Any, Any], Check]:
    def make(argument: Any, schema: dict[str, Any]) -> Check:
        return lambda value: not isinstance(value, str) or test(value, argument)

    return make


def _of_numbers(test: Callable[[Any, Any], bool]) -> Callable[[Any, Any], Check]:
    def make(argument: Any, schema: dict[str, Any]) -> Check:
        return lambda value: not _IS_TYPE(value, "number") or test(value, argument)

    return make


def _enum(choices: list[Any], schema: dict[str, Any]) -> Check:
    if all(isinstance(c, str) for c in choices):
        allowed = frozenset(choices)  # equal() of a string is ==, and only a str equals one
        return lambda value: isinstance(value, str) and value in allowed
    return lambda value: any(equal(choice, value) for choice in choices)


def _const(constant: Any, schema: dict[str, Any]) -> Check:
    return lambda value: equal(value, constant)


def _one_of(subschemas: list[Any], schema: dict[str, Any]) -> Check:
    subchecks = [_compile(sub) for sub in subschemas]
    return lambda value: sum(1 for check in subchecks if check(value)) == 1


def _any_of(subschemas: list[Any], schema: dict[str, Any]) -> Check:
    subchecks = [_compile(sub) for sub in subschemas]
    return lambda value: any(check(value) for check in subchecks)


def _all_of(subschemas: list[Any], schema: dict[str, Any]) -> Check:
    subchecks = [_compile(sub) for sub in subschemas]
    return lambda value: all(check(value) for check in subchecks)


def _unique(argument: Any, schema: dict[str, Any]) -> Check:
    if not argument:
        return lambda value: True
    return lambda value: not isinstance(value, list) or uniq(value)


_KEYWORDS: dict[str, Callable[[Any, dict[str, Any]], Check]] = {
    "type": _type,
    "additionalProperties": _additional,
    "required": _required,
    "items": _items,
    "pattern": _pattern,
    "maxLength": _of_strings(lambda v, n: len(v) <= n),
    "minLength": _of_strings(lambda v, n: len(v) >= n),
    "maxItems": _of_arrays(lambda v, n: len(v) <= n),
    "minItems": _of_arrays(lambda v, n: len(v) >= n),
    "minimum": _of_numbers(lambda v, n: v >= n),
    "maximum": _of_numbers(lambda v, n: v <= n),
    "uniqueItems": _unique,
    "enum": _enum,
    "const": _const,
    "oneOf": _one_of,
    "anyOf": _any_of,
    "allOf": _all_of,
}
