"""The tools an agent sees are pinned byte for byte; their error codes are the errors table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from vault_tool import errors
from vault_tool.core import schema
from vault_tool.server import app, tools

SNAPSHOT = Path(__file__).parents[1] / "fixtures" / "tools-list.json"
# What tools/list may weigh in the default profile: an agent reads it on every turn. (It
# lists every field the server accepts: a host that checks a call against it must not
# refuse one the server takes.)
TOOLS_LIST_BUDGET = 8150
TOOL_FILES = [
    f"{t}.{side}.schema.json" for t in ("search", "remember") for side in ("input", "output")
]


def listed() -> str:
    entries = [
        app.listed_tool(spec).model_dump(mode="json", by_alias=True, exclude_none=True)
        for spec in tools.tool_specs()
    ]
    return json.dumps(entries, indent=2) + "\n"


def wire_tools_list() -> str:
    """The tools/list result exactly as the server writes it (compact JSON, after the SDK)."""
    from mcp.types import ListToolsResult, methods

    result = ListToolsResult(tools=[app.listed_tool(spec) for spec in tools.tool_specs()])
    dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    served = methods.serialize_server_result("tools/list", "2025-11-25", dumped)
    return json.dumps(served, ensure_ascii=False, separators=(",", ":"))


def test_tools_list_is_byte_for_byte_the_snapshot() -> None:
    # A deliberate change to a tool's description or schema regenerates the snapshot:
    #   python -c "from tests.unit.test_tool_list import listed; print(listed(), end='')" \
    #     > tests/fixtures/tools-list.json
    assert listed() == SNAPSHOT.read_text(encoding="utf-8")


def test_tools_list_fits_its_budget_in_the_default_profile() -> None:
    assert len(wire_tools_list()) <= TOOLS_LIST_BUDGET


def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        own = {node["$ref"]} if isinstance(node.get("$ref"), str) else set()
        return own.union(*(_refs(v) for k, v in node.items() if k != "$defs"))
    if isinstance(node, list):
        return set().union(*(_refs(v) for v in node))
    return set()


@pytest.mark.parametrize("side", ["input_schema", "output_schema"])
@pytest.mark.parametrize("tool", ["search", "remember"])
def test_a_listed_schema_holds_only_the_definitions_it_reaches(tool: str, side: str) -> None:
    listed_schema = getattr(tools.spec(tool), side)
    definitions = listed_schema.get("$defs", {})
    reached: set[str] = set()
    waiting = {r.removeprefix("#/$defs/") for r in _refs(listed_schema)}
    while waiting:
        name = waiting.pop()
        assert name in definitions, f"{tool} {side}: #/$defs/{name} does not resolve"
        if name not in reached:
            reached.add(name)
            waiting |= {r.removeprefix("#/$defs/") for r in _refs(definitions[name])}
    assert set(definitions) == reached
    assert all(r.startswith("#/$defs/") for r in _refs(listed_schema) | _refs(definitions))


_ANNOTATIONS = ("$schema", "$id", "title", "description")


def _validating(node: Any, *, naming: bool = False) -> Any:
    """A schema without its annotations: what is left decides what it accepts."""
    if isinstance(node, dict):
        return {
            k: _validating(v, naming=k in ("properties", "$defs") and not naming)
            for k, v in node.items()
            if naming or k not in _ANNOTATIONS
        }
    if isinstance(node, list):
        return [_validating(v) for v in node]
    return node


def _without(node: Any, key: str, *, naming: bool = False) -> Any:
    if isinstance(node, dict):
        return {
            k: _without(v, key, naming=k in ("properties", "$defs") and not naming)
            for k, v in node.items()
            if naming or k != key
        }
    if isinstance(node, list):
        return [_without(v, key) for v in node]
    return node


@pytest.mark.parametrize("name", TOOL_FILES)
def test_a_listed_schema_accepts_and_refuses_exactly_what_its_file_does(name: str) -> None:
    # Both with every reference replaced by what it names: the same tree, the same verdicts;
    # input schemas are listed without their patterns (the server checks those itself).
    # (The extended profile lists every field the server accepts; core hides a few.)
    side = "input" if ".input." in name else "output"
    listed_schema = getattr(tools.spec(name.split(".")[0], "extended"), f"{side}_schema")
    file = schema._inline_refs(schema.bundled(name))
    if side == "input":
        file = _without(file, "pattern")
    assert _validating(schema._inline_refs(listed_schema)) == _validating(file)


@pytest.mark.parametrize("tool", ["search", "remember"])
def test_the_core_listing_takes_every_field_the_server_accepts(tool: str) -> None:
    # A host may check a call against the listing before it sends it.
    core = tools.spec(tool).input_schema
    assert core == tools.spec(tool, "extended").input_schema
    assert set(core["properties"]) == set(schema.load(f"{tool}.input.schema.json")["properties"])
    if tool == "remember":
        delta = core["$defs"]["semantic_delta"]["properties"]
        assert "ttl_seconds" in core["properties"] and "project" in delta


def test_mode_and_ledger_say_what_they_do() -> None:
    mode = tools.spec("remember").input_schema["properties"]["mode"]["description"]
    assert all(f"{name}:" in mode for name in ("create", "update", "delete"))
    ledger = tools.spec("search").input_schema["properties"]["ledger"]["description"]
    assert "logged" in ledger and "anyway" in ledger


def test_the_server_still_checks_the_patterns_the_listing_leaves_out() -> None:
    from vault_tool.core import calls, search_call

    with pytest.raises(errors.InvalidInput, match="predicate"):
        bad = {
            "mode": "create",
            "content_md": "# Ana owns billing\n\nAna owns it.",
            "semantic_delta": {
                "memory_type": "fact",
                "title": "Ana owns billing",
                "entities": [
                    {"n": "Ana", "kind": "person", "is": "engineer"},
                    {"n": "billing", "kind": "service", "is": "the billing service"},
                ],
                "facts": [{"subject": "Ana", "predicate": "Owns It", "object": "billing"}],
            },
        }
        calls.check_call(bad)
    with pytest.raises(errors.InvalidInput, match="since"):
        search_call.check_search({"query": "billing", "since": "last spring"})


# The one-line rule of titles, names and glosses, as it was first written; the schema now
# says it shorter (a lookahead for the one non-space character) and must mean the same.
_LONG_ONE_LINE = (
    r"^[^\x00-\x1f\x7f\x85\u2028\u2029]*[^\s\x00-\x1f\x7f\x85\u2028\u2029]"
    r"[^\x00-\x1f\x7f\x85\u2028\u2029]*$"
)


def test_the_one_line_pattern_accepts_exactly_what_its_longer_form_did() -> None:
    import re

    rule = schema.load("memory.schema.json")["$defs"]
    patterns = {rule["title"]["pattern"], rule["name"]["pattern"]}
    patterns.add(rule["entity"]["properties"]["is"]["pattern"])
    assert len(patterns) == 1
    short, long = re.compile(patterns.pop()), re.compile(_LONG_ONE_LINE)
    singles = [chr(c) for c in range(0x3100)] + ["\ufeff", "\U0001f600"]
    words = ["", "a", " ", "  a  ", "a\n", "\na", " \n", "a b", "\u3000", "\u3000x", "x\x85"]
    samples = singles + words + [a + b for a in singles[:300:7] for b in words]
    for sample in samples:
        assert bool(short.search(sample)) == bool(long.search(sample)), repr(sample)
    assert short.search("Ana owns billing") and not short.search("   ")


def test_search_lists_exactly_the_memory_types_of_the_schema() -> None:
    listed_schema = tools.spec("search").input_schema
    assert listed_schema["properties"]["memory_types"]["items"]["enum"] == list(
        schema.memory_types()
    )


def test_the_error_schema_enumerates_exactly_the_codes_of_the_table() -> None:
    error = schema.load("error.schema.json")["properties"]["error"]
    assert error["properties"]["code"]["enum"] == list(errors.CODES)


def test_every_error_class_has_a_row_in_the_table() -> None:
    def subclasses(cls: type) -> list[type]:
        return [cls] + [s for sub in cls.__subclasses__() for s in subclasses(sub)]

    for cls in subclasses(errors.VaultError):
        assert cls.code in errors.CODES, cls.__name__
    assert {cls.code for cls in subclasses(errors.VaultError)} == set(errors.CODES)
