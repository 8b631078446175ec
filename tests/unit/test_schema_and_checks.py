"""Checking remember calls, ids and slugs, and the bundled tool schema. Pure logic."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.helpers import create_args, delta
from vault_tool.core import schema
from vault_tool.core.calls import check_call
from vault_tool.core.ids import check_memory_id, check_version_id, is_ulid, new_id, slugify
from vault_tool.core.search_call import check_search
from vault_tool.errors import InvalidInput, LimitExceeded

ULID = "01JDXK3M6Q8W1J4T0P9R7V2B5C"
SHA = "0123456789abcdef0123456789abcdef01234567"
MEMORY_TYPES = ("decision", "fact", "preference", "procedure", "gotcha", "event", "note", "rule")


def _item(title: str) -> dict[str, Any]:
    args = create_args(title=title)
    return {"content_md": args["content_md"], "semantic_delta": args["semantic_delta"]}


def _refusal(args: Any) -> InvalidInput:
    with pytest.raises(InvalidInput) as caught:
        check_call(args)
    return caught.value


# --- accepted calls ------------------------------------------------------------------------


def test_valid_create_is_accepted_with_one_draft():
    call = check_call(create_args())
    assert call.mode == "create"
    assert not call.batch
    assert len(call.drafts) == 1
    assert call.drafts[0].content_md.startswith("# Ana owns the billing service")


def test_valid_batch_of_twenty_is_accepted():
    call = check_call({"mode": "create", "items": [_item(f"Item {i}") for i in range(20)]})
    assert call.batch
    assert len(call.drafts) == 20


def test_valid_update_and_delete_are_accepted():
    update = {**create_args(), "mode": "update", "memory_id": ULID, "expected_version_id": SHA}
    assert check_call(update).memory_id == ULID
    delete = {"mode": "delete", "memory_id": "notes/wombat", "expected_version_id": SHA}
    call = check_call(delete)
    assert call.drafts == []
    assert call.expected_version_id == SHA


def test_check_call_does_not_change_the_callers_arguments():
    args = create_args()
    before = copy.deepcopy(args)
    check_call(args)
    assert args == before


# --- refusals: each names the field and the fix --------------------------------------------


def test_content_without_h1_is_refused_naming_content_md():
    args = create_args()
    args["content_md"] = "Ana owns the billing service.\n"
    problem = _refusal(args)
    assert type(problem) is InvalidInput
    assert problem.field == "content_md"
    assert "H1" in problem.message
    assert "# " in problem.hint


def test_empty_facts_is_refused_naming_facts():
    args = create_args()
    args["semantic_delta"]["facts"] = []
    problem = _refusal(args)
    assert type(problem) is InvalidInput
    assert problem.field == "semantic_delta.facts"
    assert "fact" in problem.message
    assert "subject" in problem.hint and "predicate" in problem.hint


def test_missing_facts_is_refused_naming_facts():
    args = create_args()
    del args["semantic_delta"]["facts"]
    problem = _refusal(args)
    assert problem.field == "semantic_delta.facts"
    assert "required" in problem.message
    assert "subject" in problem.hint


def test_undeclared_fact_endpoint_is_refused_naming_the_entity_and_the_fix():
    args = create_args()
    args["semantic_delta"]["facts"].append(
        {"subject": "Ana", "predicate": "works_with", "object": "Bob"}
    )
    problem = _refusal(args)
    assert type(problem) is InvalidInput
    assert problem.field == "semantic_delta.facts[1].object"
    assert "'Bob'" in problem.message
    assert "not declared" in problem.message
    assert '"n": "Bob"' in problem.hint
    assert "entities" in problem.hint


def test_undeclared_subject_is_refused_naming_the_subject():
    args = create_args()
    args["semantic_delta"]["facts"][0]["subject"] = "Carla"
    problem = _refusal(args)
    assert problem.field == "semantic_delta.facts[0].subject"
    assert "Carla" in problem.message and "Carla" in problem.hint


@pytest.mark.parametrize("predicate", ["Owns", "owns-it", "owns it", "ownsIt", "_owns", "1owns"])
def test_predicate_not_in_snake_case_is_refused_with_the_snake_case_hint(predicate: str):
    args = create_args()
    args["semantic_delta"]["facts"][0]["predicate"] = predicate
    problem = _refusal(args)
    assert type(problem) is InvalidInput
    assert problem.field == "semantic_delta.facts[0].predicate"
    assert repr(predicate) in problem.message
    assert "snake_case" in problem.hint


def test_unknown_memory_type_is_refused_listing_every_allowed_type():
    args = create_args()
    args["semantic_delta"]["memory_type"] = "wish"
    problem = _refusal(args)
    assert type(problem) is InvalidInput
    assert problem.field == "semantic_delta.memory_type"
    assert "wish" in problem.message
    for name in MEMORY_TYPES:
        assert name in problem.hint
    assert set(schema.memory_types()) == set(MEMORY_TYPES)


def test_batch_of_21_is_refused_as_a_limit():
    problem = _refusal({"mode": "create", "items": [_item(f"Item {i}") for i in range(21)]})
    assert isinstance(problem, LimitExceeded)
    assert problem.field == "items"
    assert "21" in problem.message and "20" in problem.message
    assert "split" in problem.hint


def test_content_over_64_kib_is_refused_as_a_limit():
    args = create_args(body="x" * 65_536)
    problem = _refusal(args)
    assert isinstance(problem, LimitExceeded)
    assert problem.field == "content_md"
    assert "too large" in problem.message
    assert "split" in problem.hint


def test_content_of_exactly_64_kib_is_accepted():
    args = create_args()
    args["content_md"] = "# T\n\n" + "x" * (65_536 - 5)
    assert len(args["content_md"]) == 65_536
    check_call(args)


def test_unknown_top_level_field_is_refused_naming_it():
    args = {**create_args(), "colour": "red"}
    problem = _refusal(args)
    assert type(problem) is InvalidInput
    assert "colour" in problem.message
    assert problem.field == "colour"
    assert "remove" in problem.hint


def test_unknown_semantic_delta_field_is_refused_naming_it():
    args = create_args()
    args["semantic_delta"]["colour"] = "red"
    problem = _refusal(args)
    assert "colour" in problem.message
    assert problem.field == "semantic_delta.colour"
    assert "remove" in problem.hint


def test_missing_mode_is_refused_naming_mode():
    args = create_args()
    del args["mode"]
    problem = _refusal(args)
    assert problem.field == "mode"
    assert "create" in problem.hint and "delete" in problem.hint


def test_non_object_arguments_are_refused():
    problem = _refusal(["mode", "create"])
    assert "object" in problem.message


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({**create_args(), "mode": "update", "memory_id": ULID}, "expected_version_id"),
        ({**create_args(), "mode": "update", "expected_version_id": SHA}, "memory_id"),
        ({"mode": "update", "memory_id": ULID, "expected_version_id": SHA}, "content_md"),
        ({"mode": "delete", "memory_id": ULID}, "expected_version_id"),
        ({"mode": "delete", "expected_version_id": SHA}, "memory_id"),
        ({"mode": "create", "semantic_delta": delta()}, "content_md"),
        ({"mode": "create", "content_md": "# T\n"}, "semantic_delta"),
    ],
    ids=[
        "update-no-version",
        "update-no-id",
        "update-no-content",
        "delete-no-version",
        "delete-no-id",
        "create-no-content",
        "create-no-delta",
    ],
)
def test_mode_specific_missing_field_is_refused_naming_it(args: dict, field: str):
    problem = _refusal(args)
    assert type(problem) is InvalidInput
    assert problem.field == field
    assert field in problem.message
    assert args["mode"] in problem.message
    assert field in problem.hint


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (
            {"mode": "delete", "memory_id": ULID, "expected_version_id": SHA, "content_md": "# T"},
            "content_md",
        ),
        (
            {
                "mode": "delete",
                "memory_id": ULID,
                "expected_version_id": SHA,
                "semantic_delta": delta(),
            },
            "semantic_delta",
        ),
        ({**create_args(), "memory_id": ULID}, "memory_id"),
        ({**create_args(), "expected_version_id": SHA}, "expected_version_id"),
        (
            {**create_args(), "mode": "update", "memory_id": ULID, "expected_version_id": SHA}
            | {"items": [_item("x")]},
            "items",
        ),
    ],
    ids=["delete-content", "delete-delta", "create-id", "create-version", "update-items"],
)
def test_field_not_allowed_in_a_mode_is_refused_naming_it(args: dict, field: str):
    problem = _refusal(args)
    assert type(problem) is InvalidInput
    assert problem.field == field
    assert "not allowed" in problem.message
    assert problem.hint


@pytest.mark.parametrize(
    ("extra", "value"),
    [("content_md", "# One\n"), ("semantic_delta", delta()), ("memory_id", ULID)],
)
def test_items_together_with_single_fields_are_refused(extra: str, value: object):
    args = {"mode": "create", "items": [_item("One")], extra: value}
    problem = _refusal(args)
    assert problem.field == extra
    assert "items" in problem.message
    assert "either" in problem.hint


def test_problem_inside_a_batch_item_names_the_item():
    items = [_item("One"), _item("Two")]
    items[1]["semantic_delta"]["facts"][0]["object"] = "Bob"
    problem = _refusal({"mode": "create", "items": items})
    assert problem.field == "items[1].semantic_delta.facts[0].object"


@pytest.mark.parametrize("value", ["2026-13-01", "2026-02-30", "2026-00-10"])
def test_impossible_valid_from_date_is_refused(value: str):
    args = create_args()
    args["semantic_delta"]["facts"][0]["valid_from"] = value
    problem = _refusal(args)
    assert type(problem) is InvalidInput
    assert problem.field == "semantic_delta.facts[0].valid_from"
    assert value in problem.message
    assert "YYYY-MM-DD" in problem.hint


def test_malformed_date_is_refused_by_shape():
    args = create_args()
    args["semantic_delta"]["facts"][0]["valid_until"] = "next tuesday"
    problem = _refusal(args)
    assert problem.field == "semantic_delta.facts[0].valid_until"
    assert "YYYY-MM-DD" in problem.hint


def test_valid_until_before_valid_from_is_refused():
    args = create_args()
    args["semantic_delta"]["facts"][0].update(valid_from="2026-05-01", valid_until="2026-04-30")
    problem = _refusal(args)
    assert problem.field == "semantic_delta.facts[0].valid_until"
    assert "before" in problem.message
    assert problem.hint


def test_valid_until_equal_to_valid_from_is_accepted():
    args = create_args()
    args["semantic_delta"]["facts"][0].update(valid_from="2026-05-01", valid_until="2026-05-01")
    check_call(args)


def test_impossible_expires_at_is_refused():
    args = create_args(expires_at="2026-02-30")
    problem = _refusal(args)
    assert problem.field == "semantic_delta.expires_at"


def test_entity_declared_twice_is_refused_naming_the_second():
    args = create_args()
    args["semantic_delta"]["entities"].append(
        {"n": "Ana", "kind": "person", "is": "designer on the web team"}
    )
    problem = _refusal(args)
    assert type(problem) is InvalidInput
    assert problem.field == "semantic_delta.entities[2].n"
    assert "twice" in problem.message
    assert problem.hint


def test_entity_without_gloss_is_refused_asking_for_a_gloss():
    args = create_args()
    del args["semantic_delta"]["entities"][0]["is"]
    problem = _refusal(args)
    assert problem.field == "semantic_delta.entities[0].is"
    assert "gloss" in problem.hint


@pytest.mark.parametrize("bad", ["../etc/passwd", "/abs", "notes/.hidden", "a//b", "a\\b", "x\ny"])
def test_supersedes_with_a_malformed_id_is_refused(bad: str):
    args = create_args(supersedes=[bad])
    problem = _refusal(args)
    assert problem.field == "semantic_delta.supersedes[0]"


def test_multiline_title_is_refused():
    args = create_args()
    args["semantic_delta"]["title"] = "Line one\nLine two"
    problem = _refusal(args)
    assert problem.field == "semantic_delta.title"
    assert "one line" in problem.hint


@pytest.mark.parametrize(
    "text", ["a\x85b", "a\u2028b", "a\u2029b", "a\tb", "a\x00b", "red \x1b[31malert"]
)
@pytest.mark.parametrize(
    ("where", "field"),
    [
        ("title", "semantic_delta.title"),
        ("gloss", "semantic_delta.entities[0].is"),
        ("name", "semantic_delta.entities[0].n"),
    ],
)
def test_line_breaks_and_control_characters_in_one_line_fields_are_refused(
    text: str, where: str, field: str
):
    args = create_args()
    if where == "title":
        args["semantic_delta"]["title"] = text
    elif where == "gloss":
        args["semantic_delta"]["entities"][0]["is"] = text
    else:
        args["semantic_delta"]["entities"][0]["n"] = text
        args["semantic_delta"]["facts"][0]["subject"] = text
    problem = _refusal(args)
    assert problem.field == field
    assert "one line" in problem.hint


def test_bad_expected_version_is_refused_asking_for_the_full_sha():
    args = {"mode": "delete", "memory_id": ULID, "expected_version_id": SHA[:10]}
    problem = _refusal(args)
    assert problem.field == "expected_version_id"
    assert "40" in problem.hint


# --- ids -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [ULID, new_id(), "notes/wombat", "wombat", "notes/2026/a b c", "notes/café", "a.b/c..d"],
)
def test_check_memory_id_accepts_ulids_and_path_ids(value: str):
    assert check_memory_id(value) == value


@pytest.mark.parametrize(
    "value",
    [
        "../etc/passwd",
        "notes/../../etc/passwd",
        "/abs",
        "/etc/passwd",
        ".git/config",
        "notes/.git/config",
        ".vault/config.toml",
        "notes/./x",
        "a//b",
        "a\\b",
        "notes/",
        "a\x00b",
        "a\nb",
        "a\tb",
        "a\x1bb",
        "C:x",
        "",
        "x" * 301,
        "a/" * 150 + "b",
    ],
)
def test_check_memory_id_refuses_paths_that_leave_the_vault_or_are_malformed(value: str):
    with pytest.raises(InvalidInput) as caught:
        check_memory_id(value)
    assert caught.value.field == "memory_id"
    assert "notes/wombat" in caught.value.hint


@pytest.mark.parametrize("value", [None, 42, ["notes/wombat"]])
def test_check_memory_id_refuses_non_strings(value: object):
    with pytest.raises(InvalidInput):
        check_memory_id(value)


def test_id_pattern_in_the_schema_agrees_with_check_memory_id():
    cases = [ULID, "notes/wombat", "../etc/passwd", "/abs", ".git/config", "a//b", "a\\b"]
    for value in cases:
        try:
            check_memory_id(value)
            python_ok = True
        except InvalidInput:
            python_ok = False
        schema_ok = not schema.errors_of(
            {"mode": "delete", "memory_id": value, "expected_version_id": SHA},
            "remember.input.schema.json",
        )
        assert python_ok == schema_ok, value


def test_new_ids_are_ulids_and_unique():
    minted = {new_id() for _ in range(200)}
    assert len(minted) == 200
    assert all(is_ulid(m) for m in minted)


def test_check_version_id_wants_forty_lowercase_hex():
    assert check_version_id(SHA) == SHA
    for bad in (SHA[:39], SHA.upper(), SHA + "0", "g" * 40, None):
        with pytest.raises(InvalidInput):
            check_version_id(bad)


@pytest.mark.parametrize(
    ("title", "slug"),
    [
        ("Ana owns the billing service", "ana-owns-the-billing-service"),
        ("Staging runs in eu-west-1", "staging-runs-in-eu-west-1"),
        ("Café – naïve résumé", "cafe-naive-resume"),
        ("  --Hello,   World!!  ", "hello-world"),
        ("C++ & Rust: a/b\\c", "c-rust-a-b-c"),
        ("日本語", "memory"),
        ("!!!", "memory"),
        ("../../etc/passwd", "etc-passwd"),
        (".hidden", "hidden"),
    ],
)
def test_slugify(title: str, slug: str):
    assert slugify(title) == slug


def test_slugify_cuts_long_titles_at_a_word_boundary_within_60_characters():
    title = "Staging deploys need the VPN because the cluster sits behind a private load balancer"
    slug = slugify(title)
    assert len(slug) <= 60
    assert title.lower().replace(" ", "-").startswith(slug)
    assert not slug.endswith("-")
    assert slug == "staging-deploys-need-the-vpn-because-the-cluster-sits-behind"


def test_slugify_cuts_one_long_word_at_60_characters():
    assert slugify("a" * 100) == "a" * 60


# --- the bundled schema --------------------------------------------------------------------


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return own + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def _resolve_pointer(document: dict, ref: str) -> Any:
    node: Any = document
    for part in ref.removeprefix("#/").split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


@pytest.mark.parametrize(
    "name", ["remember.input.schema.json", "search.input.schema.json", "memory.schema.json"]
)
def test_bundled_schema_has_only_internal_refs_that_resolve(name: str):
    bundled = schema.bundled(name)
    refs = _refs(bundled)
    assert refs, "the schema uses $defs, so a bundled copy has refs"
    for ref in refs:
        assert ref.startswith("#/"), ref
        assert _resolve_pointer(bundled, ref) is not None
    assert "$id" not in bundled


def test_bundled_does_not_alter_the_loaded_schema():
    before = copy.deepcopy(schema.load("remember.input.schema.json"))
    schema.bundled("remember.input.schema.json")
    assert schema.load("remember.input.schema.json") == before


def _bundled_inputs() -> list[Any]:
    bad_predicate = create_args()
    bad_predicate["semantic_delta"]["facts"][0]["predicate"] = "Owns"
    bad_type = create_args()
    bad_type["semantic_delta"]["memory_type"] = "wish"
    no_gloss = create_args()
    del no_gloss["semantic_delta"]["entities"][0]["is"]
    return [
        create_args(),
        {"mode": "create", "items": [_item(f"I{i}") for i in range(3)]},
        {"mode": "create", "items": [_item(f"I{i}") for i in range(21)]},
        {"mode": "delete", "memory_id": "notes/wombat", "expected_version_id": SHA},
        {"mode": "delete", "memory_id": "../etc/passwd", "expected_version_id": SHA},
        {"mode": "delete", "memory_id": ULID, "expected_version_id": "abc"},
        {"mode": "erase"},
        {**create_args(), "colour": "red"},
        bad_predicate,
        bad_type,
        no_gloss,
        create_args(tags=["Upper"]),
        create_args(key="staging.region"),
    ]


def test_bundled_remember_schema_validates_like_the_unbundled_one():
    from jsonschema import Draft202012Validator

    bundled = Draft202012Validator(schema.bundled("remember.input.schema.json"))
    verdicts = []
    for instance in _bundled_inputs():
        unbundled_ok = not schema.errors_of(instance, "remember.input.schema.json")
        bundled_ok = bundled.is_valid(instance)
        assert bundled_ok == unbundled_ok, instance
        verdicts.append(bundled_ok)
    assert True in verdicts and False in verdicts


def test_bundled_schema_is_itself_a_valid_draft_2020_12_schema():
    from jsonschema import Draft202012Validator

    Draft202012Validator.check_schema(schema.bundled("remember.input.schema.json"))


def test_a_search_for_an_unknown_memory_type_lists_the_types():
    with pytest.raises(InvalidInput) as caught:
        check_search({"query": "x", "memory_types": ["bogus"]})
    assert "unknown memory type 'bogus'" in caught.value.message
    assert "decision" in caught.value.hint and "gotcha" in caught.value.hint


def test_a_value_outside_a_short_list_is_told_the_list():
    with pytest.raises(InvalidInput) as caught:
        check_call({"mode": "erase"})
    assert "'erase' is not allowed" in caught.value.message
    assert '"create", "update", "delete"' in caught.value.hint
