"""A refused call lists every problem it has, each with its field path and its fix."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import create_args
from vault_tool.core import calls, schema
from vault_tool.core.calls import check_call
from vault_tool.core.search_call import check_search
from vault_tool.errors import InvalidInput, LimitExceeded
from vault_tool.server import render

SHA = "0123456789abcdef0123456789abcdef01234567"


def _refusal(check: Any, args: Any) -> InvalidInput:
    with pytest.raises(InvalidInput) as caught:
        check(args)
    return caught.value


def _three_mistakes() -> dict[str, Any]:
    args = create_args()
    args["content_md"] = "Ana owns the billing service.\n"  # no H1
    fact = args["semantic_delta"]["facts"][0]
    fact["predicate"] = "Owns It"  # not snake_case (the schema's pattern)
    fact["object"] = "Bob"  # not declared
    return args


def _fields(problem: InvalidInput) -> list[str]:
    return [p["field"] for p in problem.to_dict()["error"]["problems"]]


def test_a_call_with_three_mistakes_is_refused_once_listing_all_three() -> None:
    problem = _refusal(check_call, _three_mistakes())
    assert sorted(_fields(problem)) == [
        "content_md",
        "semantic_delta.facts[0].object",
        "semantic_delta.facts[0].predicate",
    ]
    listed = problem.to_dict()["error"]["problems"]
    assert all(p["message"] and p["hint"] for p in listed)
    hints = " ".join(p["hint"] for p in listed)
    assert "# " in hints and "snake_case" in hints and '"n": "Bob"' in hints
    assert "3 problems" in problem.message
    for entry in listed:
        assert entry["message"] in problem.message


def test_every_problem_of_every_batch_item_is_named_by_its_index() -> None:
    items = []
    for i in range(3):
        args = create_args(f"Item {i}")
        items.append({"content_md": args["content_md"], "semantic_delta": args["semantic_delta"]})
    items[0]["content_md"] = "no heading\n"
    items[2]["semantic_delta"]["facts"][0]["subject"] = "Carla"
    items[2]["semantic_delta"]["tags"] = ["Upper"]
    problem = _refusal(check_call, {"mode": "create", "items": items})
    assert sorted(_fields(problem)) == [
        "items[0].content_md",
        "items[2].semantic_delta.facts[0].subject",
        "items[2].semantic_delta.tags[0]",
    ]


def test_missing_fields_of_a_mode_are_listed_together() -> None:
    problem = _refusal(check_call, {"mode": "update", "expected_version_id": SHA})
    assert sorted(_fields(problem)) == ["content_md", "memory_id", "semantic_delta"]


def test_unknown_fields_are_each_listed() -> None:
    args = {**create_args(), "colour": "red", "size": 3}
    problem = _refusal(check_call, args)
    assert sorted(_fields(problem)) == ["colour", "size"]


def test_a_limit_among_the_problems_keeps_the_limit_code() -> None:
    args = create_args(body="x" * 65_536)
    args["semantic_delta"]["facts"][0]["object"] = "Bob"
    problem = _refusal(check_call, args)
    assert isinstance(problem, LimitExceeded)
    assert sorted(_fields(problem)) == ["content_md", "semantic_delta.facts[0].object"]


def test_a_single_problem_is_refused_as_before_without_a_list() -> None:
    args = create_args()
    args["content_md"] = "no heading\n"
    problem = _refusal(check_call, args)
    assert problem.field == "content_md"
    assert "problems" not in problem.to_dict()["error"]


def test_a_search_call_lists_all_its_problems() -> None:
    problem = _refusal(
        check_search, {"query": "billing", "top_k": 0, "since": "2026-13-01", "until": "soon"}
    )
    assert sorted(_fields(problem)) == ["since", "top_k", "until"]


def test_the_text_of_a_refusal_with_several_problems_gives_each_its_fix() -> None:
    problem = _refusal(check_call, _three_mistakes())
    text = render.error_text(problem.to_dict())
    assert text.startswith("Refused (invalid_input): 3 problems")
    for entry in problem.to_dict()["error"]["problems"]:
        assert f"{entry['field']}: " in text
    assert text.count("Fix: ") == 3
    assert "nothing was written" in text


def test_a_secret_that_a_listed_problem_quotes_is_redacted_from_the_refusal() -> None:
    token = "gh" + "p_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5"  # (assembled: no literal)
    args = _three_mistakes()
    args["semantic_delta"]["facts"][0]["object"] = token
    refused = _refusal(check_call, args)
    shown = str(refused.to_dict())
    assert token not in shown and "REDACTED" in shown
    assert "semantic_delta.facts[0].object" in _fields(refused)


def test_a_since_that_is_not_a_string_is_listed_beside_the_other_problems() -> None:
    problem = _refusal(check_search, {"query": "billing", "since": 5, "top_k": 0})
    assert sorted(_fields(problem)) == ["since", "top_k"]


@pytest.mark.parametrize("ttl", [0, 315360001, 10**12, 10**20])
def test_a_lifetime_out_of_range_is_refused_with_its_limits(ttl: int) -> None:
    problem = _refusal(check_call, {**create_args(), "ttl_seconds": ttl})
    assert problem.message.startswith("ttl_seconds: ") and "problems" not in problem.to_dict()


def test_warming_compiles_what_the_first_remember_checks() -> None:
    schema._is_valid.cache_clear()
    calls.warm()  # (a valid call: it raises for anything else)
    compiled = schema._is_valid.cache_info().misses
    check_call(create_args())
    assert compiled and schema._is_valid.cache_info().misses == compiled  # none again
