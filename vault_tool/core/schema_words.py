"""The words of a schema refusal that need no schema: a value's JSON type, a type with its
article, the values a rule allows. Pure."""

from __future__ import annotations

from typing import Any


def choices(kind: str, rule: Any) -> list[Any] | None:
    """The values a rule allows when it lists them (an enum, a const, a oneOf of consts)."""
    if kind == "enum":
        return list(rule)
    if kind == "const":
        return [rule]
    if kind == "oneOf" and rule and all(isinstance(b, dict) and "const" in b for b in rule):
        return [b["const"] for b in rule]
    return None


def json_type(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "a number"
    return names.get(type(value), type(value).__name__)


def article(type_name: Any) -> str:
    if isinstance(type_name, list):
        return " or ".join(article(t) for t in type_name)
    return {"object": "an object", "array": "an array", "integer": "an integer"}.get(
        type_name, f"a {type_name}"
    )
