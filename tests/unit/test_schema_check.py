"""The compiled validity check (core/schema_check.py) decides exactly as jsonschema does,
and a valid file or call is checked without walking jsonschema's errors.

Valid values (the sample vault's front matter, remember and search calls) are mutated at
random places (a value replaced, a key dropped or added) and each schema's compiled check
must say valid or invalid as jsonschema's own validator says. The messages of an invalid
value are jsonschema's, described as before: validate reports the first of problems.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import create_args
from vault_tool.core import schema, schema_check
from vault_tool.core.memory import parse
from vault_tool.core.schema_check import Validator, compiled
from vault_tool.core.yaml_safe import load_yaml
from vault_tool.errors import InvalidInput

SAMPLE_VAULT = Path(__file__).resolve().parents[2] / "sample-vault"


def _front_matters() -> list[dict[str, Any]]:
    found = []
    for path in sorted(SAMPLE_VAULT.rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        if text.startswith("---\n"):
            found.append(load_yaml(text.split("---\n", 2)[1], path.name))
    return found


SEEDS: dict[str, list[Any]] = {
    "memory.schema.json": _front_matters(),
    "remember.input.schema.json": [
        create_args(),
        {"mode": "delete", "memory_id": "01JDXK3M6Q8W1J4T0P9R7V2B5C"},
        {
            "mode": "create",
            "items": [
                {k: v for k, v in create_args(title).items() if k != "mode"}
                for title in ("Ana owns the billing service", "Bo runs the docs")
            ],
        },
    ],
    "search.input.schema.json": [
        {"query": "billing owner"},
        {"query": "who owns billing", "top_k": 3, "memory_types": ["decision", "fact"]},
        {"query": "x", "maximum_context_bytes": 2000, "ledger": True},
    ],
}
# Values a mutation puts in: of every JSON type, and near the schemas' edges.
ODD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 300),
    st.sampled_from([1.0, 2.5, 0.0, -1.0, 1e300, float("nan")]),
    st.sampled_from(
        [
            *("", "note", "decision", "wish", "Ana", "a" * 201, "x\ny", "2026-01-02"),
            *("last spring", "01JDXK3M6Q8W1J4T0P9R7V2B5C", "owns", "Owns It", "staging.region"),
            *("#tag", "tag"),
        ]
    ),
    st.lists(st.sampled_from(["a", "a", "b", 1, True, None]), max_size=4),
    st.fixed_dictionaries({}, optional={"n": st.just("Ana"), "kind": st.just("person")}),
    st.lists(
        st.fixed_dictionaries(
            {"n": st.just("Ana"), "kind": st.just("person"), "is": st.just("an engineer")}
        ),
        min_size=0,
        max_size=2,
    ),
)


def _places(value: Any, path: tuple = ()) -> list[tuple]:
    """Every path into value (keys and indexes), the root included."""
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _places(item, (*path, key))
    elif isinstance(value, list):
        for n, item in enumerate(value):
            found += _places(item, (*path, n))
    return found


@st.composite
def mutated(draw: st.DrawFn, name: str) -> Any:
    value = copy.deepcopy(draw(st.sampled_from(SEEDS[name])))
    for _ in range(draw(st.integers(0, 3))):
        path = draw(st.sampled_from(_places(value)))
        if not path:
            continue
        parent = value
        for part in path[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "drop", "add"]))
        if action == "replace":
            parent[path[-1]] = draw(ODD_VALUES)
        elif action == "drop":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.sampled_from(["extra", "title", "tags", "pinned"]))] = draw(ODD_VALUES)
        else:
            parent.append(draw(ODD_VALUES))
    return value


@pytest.mark.parametrize("name", sorted(SEEDS))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_compiled_check_decides_as_jsonschema(name: str, data: st.DataObject):
    inlined = schema._validator(name).schema
    check = schema._is_valid(name)  # compiled once, as the vault uses it
    assert schema_check._compilable(inlined)  # (compiled, not left to jsonschema)
    value = data.draw(mutated(name))
    assert check(value) == Validator(inlined).is_valid(value)


def test_every_seed_is_valid():
    for name, seeds in SEEDS.items():
        for seed in seeds:
            assert schema.problems(seed, name) == [], (name, seed)


@pytest.mark.parametrize(
    ("subschema", "value", "valid"),
    [
        ({"type": "integer"}, 1.0, True),  # 2020-12: a float without a fraction is an integer
        ({"type": "integer"}, True, False),
        ({"type": "number"}, False, False),
        ({"enum": [1, "a"]}, True, False),  # jsonschema's equality: True is not 1
        ({"const": False}, 0, False),
        ({"uniqueItems": True}, [1, True], True),
        ({"uniqueItems": True}, [{"a": 1}, {"a": 1}], False),
        ({"oneOf": [{"type": "string"}, {"maxLength": 3}]}, "ab", False),
        ({"maximum": 3}, "a long string", True),
        ({"properties": {"a": False}}, {"b": 1}, True),
        ({"additionalProperties": {"type": "string"}}, {"b": 1}, False),
    ],
)
def test_keywords_mean_what_jsonschema_says(subschema: Any, value: Any, valid: bool):
    assert Validator(subschema).is_valid(value) is valid
    assert compiled(subschema)(value) is valid


@pytest.mark.parametrize(
    "subschema",
    [
        {"format": "date"},
        {"$ref": "#/x"},
        {"prefixItems": [{}], "items": {}},
        {"type": "thing"},
        {"patternProperties": {"^a": {}}, "additionalProperties": False},
    ],
)
def test_a_keyword_it_does_not_know_is_left_to_jsonschema(subschema: Any):
    assert compiled(subschema) is None


def test_a_valid_file_is_checked_without_walking_jsonschemas_errors(monkeypatch):
    walked = []
    original = Validator.iter_errors

    def spying(self: Any, *args: Any, **kwargs: Any) -> Any:
        walked.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Validator, "iter_errors", spying)
    text = (SAMPLE_VAULT / "decision").rglob("*.md").__next__().read_text(encoding="utf-8")
    parse(text, "decision/x.md")
    schema.validate(create_args()["semantic_delta"], "memory.schema.json")
    assert schema.problems(create_args(), "remember.input.schema.json") == []
    assert schema.errors_of({"query": "billing"}, "search.input.schema.json") == []
    assert walked == []
    with pytest.raises(InvalidInput):
        schema.validate({"memory_type": "wish"}, "memory.schema.json")
    assert walked  # an invalid value's errors are jsonschema's own


@pytest.mark.parametrize("name", sorted(SEEDS))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_validate_reports_the_first_of_problems_word_for_word(name: str, data: st.DataObject):
    value = data.draw(mutated(name))
    found = schema.problems(value, name, prefix="p")
    try:
        schema.validate(value, name, prefix="p")
    except InvalidInput as error:
        expected = schema.refusal(found[:1])
        assert (type(error), error.message, error.hint, error.field) == (
            type(expected),
            expected.message,
            expected.hint,
            expected.field,
        )
    else:
        assert found == []
