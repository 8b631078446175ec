"""The three-way merge of a memory file (core/merge.py): each rule on three small files."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pytest

from vault_tool.core.memory import parse
from vault_tool.core.merge import Fallback, Plan, merge_fields, plan, plan_list
from vault_tool.core.yaml_safe import dump_yaml, load_yaml

SAMPLE_VAULT = Path(__file__).resolve().parents[2] / "sample-vault"
SAMPLES = sorted(p for p in SAMPLE_VAULT.rglob("*.md") if p.name != "README.md")
PATH = "fact/2026-06/ana-owns-billing.md"
ID = "01JDXK3M6Q8W1J4T0P9R7V2B5C"
ANA = {"n": "Ana", "kind": "person", "is": "backend engineer"}
BILLING = {"n": "billing", "kind": "service", "is": "the invoicing service"}
OWNS = {"subject": "Ana", "predicate": "owns", "object": "billing"}
BODY = "# Ana owns billing\n\nAna owns the billing service.\n"


def memory(body: str = BODY, **changes: Any) -> bytes:
    """A memory file: a base front matter with some keys replaced (None removes one)."""
    fields: dict[str, Any] = {
        "id": ID,
        "memory_type": "fact",
        "title": "Ana owns billing",
        "entities": [ANA, BILLING],
        "facts": [OWNS],
        "tags": ["billing"],
        "created": "2026-06-01T09:00:00Z",
        "updated": "2026-06-01T09:00:00Z",
    }
    fields.update(changes)
    fields = {k: v for k, v in fields.items() if v is not None}
    return f"---\n{dump_yaml(fields)}---\n{body}".encode()


def merged(base: bytes, ours: bytes, theirs: bytes) -> dict[str, Any]:
    """The merged front matter, after checking the merge gives the same bytes either way."""
    result = plan(base, ours, theirs, PATH)
    assert isinstance(result, Plan), result
    assert result.head == plan(base, theirs, ours, PATH).head, "the merge is not symmetric"
    parse(result.head + "\n", PATH)
    return load_yaml(result.head.split("---\n")[1], PATH)


def later(**changes: Any) -> bytes:
    return memory(updated="2026-06-03T09:00:00Z", **changes)


def earlier(**changes: Any) -> bytes:
    return memory(updated="2026-06-02T09:00:00Z", **changes)


# --- scalars -----------------------------------------------------------------------------


def test_a_value_changed_on_one_side_takes_that_side():
    result = merged(memory(), memory(title="Ana runs billing"), memory(tags=["billing", "ana"]))
    assert result["title"] == "Ana runs billing"
    assert result["tags"] == ["billing", "ana"]
    assert "merge_conflicts" not in result


def test_a_value_changed_alike_on_both_sides_is_that_value():
    result = merged(memory(), later(title="Ana runs billing"), earlier(title="Ana runs billing"))
    assert result["title"] == "Ana runs billing"
    assert "merge_conflicts" not in result


def test_created_takes_the_earlier_and_updated_the_later_without_a_note():
    ours = memory(created="2026-05-01T00:00:00Z", updated="2026-06-05T00:00:00Z")
    theirs = memory(created="2026-05-20", updated="2026-06-07T12:00:00Z")
    result = merged(memory(), ours, theirs)
    assert (result["created"], result["updated"]) == (
        "2026-05-01T00:00:00Z",
        "2026-06-07T12:00:00Z",
    )
    assert "merge_conflicts" not in result


def test_a_value_changed_differently_takes_the_newer_side_and_notes_the_other():
    result = merged(memory(), later(title="Ana runs billing"), earlier(title="Ana leads billing"))
    assert result["title"] == "Ana runs billing"
    assert result["merge_conflicts"] == [
        {"field": "title", "kept": "Ana runs billing", "set_aside": "Ana leads billing"}
    ]


def test_a_missing_updated_counts_as_the_oldest():
    ours = memory(title="Ana runs billing", updated=None)
    theirs = earlier(title="Ana leads billing")
    assert merged(memory(), ours, theirs)["title"] == "Ana leads billing"


def test_a_tie_on_updated_goes_to_the_value_whose_text_sorts_first_whichever_side_is_ours():
    ours, theirs = later(pinned=True), later(pinned=False)
    result = merged(memory(), ours, theirs)
    assert result["pinned"] is False
    assert result["merge_conflicts"] == [{"field": "pinned", "kept": False, "set_aside": True}]


def test_a_key_removed_on_one_side_and_changed_on_the_other_keeps_the_change():
    base = memory(source="sample")
    result = merged(base, memory(source=None), memory(source="cli", tags=["x"]))
    assert result["source"] == "cli"


def test_a_key_removed_on_one_side_and_untouched_on_the_other_is_removed():
    base = memory(source="sample")
    assert "source" not in merged(base, memory(source=None), memory(tags=["x"]))


def test_a_foreign_key_changed_on_both_is_taken_whole_and_noted():
    base = memory(aliases=["Ana"])
    result = merged(base, later(aliases=["Ana L"]), earlier(aliases=["Ana Lima"]))
    assert result["aliases"] == ["Ana L"]
    assert result["merge_conflicts"][0]["set_aside"] == ["Ana Lima"]


# --- sets --------------------------------------------------------------------------------

BOB = {"n": "Bob", "kind": "person", "is": "designer"}
CAT = {"n": "Cat", "kind": "person", "is": "tester"}


def test_entities_added_on_either_side_are_kept_and_removed_untouched_ones_go():
    base = memory(entities=[ANA, BILLING, BOB])
    ours = memory(entities=[ANA, BILLING, CAT])  # Bob removed, Cat added
    theirs = memory(entities=[ANA, BILLING, BOB, {"n": "Dee", "kind": "team", "is": "ops"}])
    names = [e["n"] for e in merged(base, ours, theirs)["entities"]]
    assert sorted(names) == ["Ana", "Cat", "Dee", "billing"]


def test_an_entity_removed_on_one_side_and_changed_on_the_other_is_kept_as_changed():
    base = memory(entities=[ANA, BILLING, BOB])
    changed = {**BOB, "is": "product designer"}
    result = merged(base, memory(entities=[ANA, BILLING]), memory(entities=[ANA, BILLING, changed]))
    assert changed in result["entities"]


def test_an_entity_is_one_by_its_normalised_name_and_kind_and_its_gloss_merges_as_a_value():
    ours = later(entities=[{**ANA, "is": "staff engineer"}, BILLING])
    theirs = earlier(entities=[{"n": "ana", "kind": "person", "is": "tech lead"}, BILLING])
    result = merged(memory(), ours, theirs)
    # The spelling changed on one side only (theirs'), the gloss on both (the newer kept).
    assert result["entities"] == [{"n": "ana", "kind": "person", "is": "staff engineer"}, BILLING]
    assert result["merge_conflicts"] == [
        {"field": "entities[Ana/person].is", "kept": "staff engineer", "set_aside": "tech lead"}
    ]


def test_an_entity_gloss_changed_on_one_side_takes_that_side():
    theirs = memory(entities=[{**ANA, "is": "tech lead"}, BILLING])
    result = merged(memory(), memory(tags=["x"]), theirs)
    assert result["entities"][0]["is"] == "tech lead"


def test_facts_are_a_set_and_their_validity_merges_field_by_field():
    runs = {"subject": "Ana", "predicate": "runs", "object": "billing"}
    ours = later(facts=[{**OWNS, "valid_until": "2026-12-31"}, runs])
    theirs = earlier(facts=[{**OWNS, "valid_from": "2026-01-01", "valid_until": "2026-09-30"}])
    result = merged(memory(), ours, theirs)
    assert result["facts"] == [
        {**OWNS, "valid_until": "2026-12-31", "valid_from": "2026-01-01"},
        runs,
    ]
    assert result["merge_conflicts"] == [
        {
            "field": "facts[Ana owns billing].valid_until",
            "kept": "2026-12-31",
            "set_aside": "2026-09-30",
        }
    ]


def test_a_fact_removed_on_one_side_and_untouched_on_the_other_is_removed():
    runs = {"subject": "Ana", "predicate": "runs", "object": "billing"}
    base = memory(facts=[OWNS, runs])
    result = merged(base, memory(facts=[OWNS]), memory(facts=[OWNS, runs], tags=["x"]))
    assert result["facts"] == [OWNS]
    both = merged(base, memory(facts=[OWNS], tags=["y"]), memory(facts=[runs, OWNS], tags=["x"]))
    assert both["facts"] == [OWNS]


def test_an_entity_one_side_removed_stays_while_a_kept_fact_names_it():
    helps = {"subject": "Bob", "predicate": "helps", "object": "Ana"}
    base = memory(entities=[ANA, BILLING, BOB])
    ours = memory(entities=[ANA, BILLING])
    theirs = memory(entities=[ANA, BILLING, BOB], facts=[OWNS, helps])
    result = merged(base, ours, theirs)
    assert BOB in result["entities"]
    assert helps in result["facts"]


def test_tags_are_a_set_as_a_person_writes_them():
    base = memory(tags="billing, Payments")
    result = merged(base, memory(tags="billing, payments, ana"), memory(tags=["billing", "ops"]))
    assert sorted(result["tags"]) == ["ana", "billing", "ops"]


def test_tags_keep_their_case_and_script_as_each_side_wrote_them():
    base = memory(tags=["Travel", "日本"])
    result = merged(
        base, memory(tags=["Travel", "日本", "urgent"]), memory(tags=["Travel", "日本", "Kyoto"])
    )
    assert sorted(result["tags"]) == sorted(["Travel", "日本", "urgent", "Kyoto"])


def test_a_tag_without_a_tag_name_is_removed_only_where_a_side_removed_it():
    base = memory(tags=["日本", "東京"])
    result = merged(base, memory(tags=["日本", "東京", "ops"]), memory(tags=["日本"]))
    assert sorted(result["tags"]) == sorted(["日本", "ops"])


def test_a_tag_re_spelled_on_one_side_is_written_as_re_spelled():
    base = memory(tags=["Travel", "billing"])
    result = merged(
        base, memory(tags=["travel", "billing"]), memory(tags=["Travel", "billing", "ops"])
    )
    assert result["tags"] == ["travel", "billing", "ops"]


def test_a_tag_re_spelled_differently_on_both_sides_takes_the_newer_spelling():
    base = memory(tags=["Travel"])
    assert merged(base, earlier(tags=["TRAVEL"]), later(tags=["travel"]))["tags"] == ["travel"]


def test_supersedes_is_a_set():
    one, two, three = (
        "01JDXK3M6Q8W1J4T0P9R7V2B5D",
        "01JDXK3M6Q8W1J4T0P9R7V2B5E",
        "01JDXK3M6Q8W1J4T0P9R7V2B5F",
    )
    base = memory(supersedes=[one, two])
    result = merged(base, memory(supersedes=[one, three]), memory(supersedes=[one, two, "notes/x"]))
    assert sorted(result["supersedes"]) == sorted([one, three, "notes/x"])


def test_notes_already_there_merge_as_a_set_and_a_reviewed_one_stays_gone():
    note_a = {"field": "title", "kept": "a", "set_aside": "b"}
    note_b = {"field": "source", "kept": "c", "set_aside": "d"}
    base = memory(merge_conflicts=[note_a, note_b])
    ours = memory(merge_conflicts=[note_b])  # a person reviewed note_a
    theirs = memory(merge_conflicts=[note_a, note_b], tags=["x"])
    assert merged(base, ours, theirs)["merge_conflicts"] == [note_b]
    new = merged(
        base,
        later(merge_conflicts=[note_b], title="T1"),
        earlier(merge_conflicts=[note_a, note_b], title="T2"),
    )
    assert new["merge_conflicts"] == [note_b, {"field": "title", "kept": "T1", "set_aside": "T2"}]


def test_order_is_the_newer_sides_then_the_others_additions():
    base = memory(tags=["b"])
    result = merged(base, earlier(tags=["b", "o1", "o2"]), later(tags=["t1", "b"]))
    assert result["tags"] == ["t1", "b", "o1", "o2"]
    assert list(result)[-1] == "updated"


def test_a_set_key_removed_whole_on_one_side_counts_as_all_its_items_removed():
    base = memory(tags=["billing", "ops"])
    assert merged(base, memory(tags=None), memory(tags=["billing", "ops", "new"]))["tags"] == [
        "new"
    ]


def test_a_name_written_twice_on_one_side_is_two_items_and_neither_is_lost():
    twice = [ANA, {**ANA, "is": "another Ana"}, BILLING]
    result = merged(memory(), memory(entities=twice), memory(tags=["x"]))
    assert result["entities"] == twice
    both = merged(memory(), later(entities=twice), earlier(entities=[ANA, BILLING, CAT]))
    assert both["entities"] == [ANA, {**ANA, "is": "another Ana"}, BILLING, CAT]


# --- whole files -------------------------------------------------------------------------


def test_the_merge_is_symmetric_for_many_pairs_of_edits():
    edits = [
        later(title="A"),
        earlier(title="B"),
        memory(tags=["q", "billing"]),
        later(entities=[{**ANA, "is": "lead"}, BILLING, CAT], pinned=True),
        earlier(facts=[{**OWNS, "valid_until": "2027-01-01"}], status="dismissed"),
        memory(entities=[ANA], facts=[], updated=None, source="x"),
    ]
    for ours in edits:
        for theirs in edits:
            merged(memory(), ours, theirs)  # asserts the same bytes either way


def test_random_edits_of_sample_memories_merge_alike_in_both_directions():
    chooser = random.Random(16)
    for _ in range(200):
        base = chooser.choice(SAMPLES).read_bytes()
        fields = load_yaml(base.decode().split("---\n", 2)[1], PATH)
        body = base.decode().split("---\n", 2)[2]
        ours, theirs = (_edited(fields, body, chooser) for _ in range(2))
        result = merged(base, ours, theirs)  # asserts the same bytes either way
        kept = {_fact_key(f) for f in result.get("facts", [])}
        for side in (ours, theirs):  # every fact either side added is there
            added = {
                _fact_key(f) for f in load_yaml(side.decode().split("---\n", 2)[1], PATH)["facts"]
            }
            assert added - {_fact_key(f) for f in fields["facts"]} <= kept


def _fact_key(fact: dict[str, str]) -> tuple[str, str, str]:
    return fact["subject"], fact["predicate"], fact["object"]


def _edited(fields: dict[str, Any], body: str, chooser: random.Random) -> bytes:
    edited = {k: list(v) if isinstance(v, list) else v for k, v in fields.items()}
    for _ in range(chooser.randint(1, 4)):
        edit = chooser.randrange(7)
        if edit == 0:
            edited["title"] = chooser.choice(["T1", "T2"])
        elif edit == 1:
            edited["tags"] = list(dict.fromkeys([*edited.get("tags", []), chooser.choice("xyz")]))
        elif edit == 2 and edited.get("entities"):
            edited["entities"][0] = {**edited["entities"][0], "is": chooser.choice(["g1", "g2"])}
        elif edit == 3 and edited.get("facts"):
            first = {
                **edited["facts"][0],
                "valid_until": chooser.choice(["2027-01-01", "2028-01-01"]),
            }
            edited["facts"] = [first, *edited["facts"][1:]]
        elif edit == 4 and edited.get("facts"):
            edited["facts"] = edited["facts"][1:] or [
                {**OWNS, "subject": edited["entities"][0]["n"]}
            ]
        elif edit == 5:
            edited["updated"] = chooser.choice(["2026-12-01T00:00:00Z", "2026-12-02T00:00:00Z"])
        else:
            body = body.replace("\n\n", f"\n\nEdit {chooser.randrange(3)}.\n\n", 1)
    return f"---\n{dump_yaml(edited)}---\n{body}".encode()


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_a_sample_memory_merged_with_itself_is_byte_identical(sample: Path):
    data = sample.read_bytes()
    result = plan(data, data, data, "x/y.md")
    assert isinstance(result, Plan)
    assert result.text(result.body).encode() == data


def test_one_sides_file_is_the_result_when_the_other_side_is_the_base():
    # Without their ids, any two sample files are versions of one hand-made note.
    texts = [re.sub(rb"^id: .*\n", b"", p.read_bytes(), flags=re.M) for p in SAMPLES[:8]]
    for a in texts:
        for b in texts:
            for result in (plan(b, a, b, "x/y.md"), plan(b, b, a, "x/y.md")):
                assert isinstance(result, Plan)
                assert result.text(result.body).encode() == a


def test_keys_the_merge_left_alone_keep_the_lines_a_person_wrote():
    base = b"---\ntitle: 'Ana, billing'   # quoted\ntags: [billing]\nauthor: me\n---\nbody\n"
    ours = b"---\ntitle: 'Ana, billing'   # quoted\ntags: [billing, ana]\nauthor: me\n---\nbody\n"
    theirs = (
        b"---\ntitle: 'Ana, billing'   # quoted\ntags: [billing, ops]\n"
        b'author: "you"  # was me\n---\nbody\n'
    )
    result = plan(base, ours, theirs, "notes/ana.md")
    assert isinstance(result, Plan)
    # Only the tags were merged (and written anew); the other keys are as their sides wrote them.
    assert result.head == (
        "---\ntitle: 'Ana, billing'   # quoted\ntags:\n  - billing\n  - ana\n  - ops\n"
        'author: "you"  # was me\n---\n'
    )
    assert result.head == plan(base, theirs, ours, "notes/ana.md").head


def test_a_byte_order_mark_is_kept_as_the_sides_agree():
    bom = "\ufeff".encode()
    result = plan(bom + memory(), bom + memory(title="A"), bom + memory(tags=["x"]), PATH)
    assert isinstance(result, Plan) and result.head.startswith("\ufeff---\n")
    dropped = plan(bom + memory(), memory(title="A"), bom + memory(tags=["x"]), PATH)
    assert isinstance(dropped, Plan) and dropped.head.startswith("---\n")


def test_add_add_merges_as_a_modification_of_an_empty_base():
    runs = {"subject": "Ana", "predicate": "runs", "object": "billing"}
    result = merged(b"", memory(), memory(facts=[OWNS, runs]))
    assert result["facts"] == [OWNS, runs]
    assert "merge_conflicts" not in result


def test_the_body_is_settled_when_one_side_left_it_and_left_to_git_when_both_changed_it():
    edited = BODY + "\nMore.\n"
    assert plan(memory(), memory(body=edited), memory(tags=["x"]), PATH).body == edited
    both = plan(memory(), memory(body=edited), memory(body=BODY + "\nOther.\n"), PATH)
    assert both.body is None
    assert both.bodies == (BODY, edited, BODY + "\nOther.\n")


def test_merge_fields_is_the_front_matter_rule_on_mappings():
    assert merge_fields({"a": 1}, {"a": 2}, {"a": 1, "b": 3}) == {"a": 2, "b": 3}


# --- fallbacks ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("broken", "why"),
    [
        (b"---\ntitle: [unclosed\n---\nbody\n", "not valid YAML"),
        (b"---\nentities: 3\n---\nbody\n", "entities"),
        ("---\ntitle: caf\xe9\n---\n".encode("latin-1"), "not UTF-8"),
        (b"", "empty"),
        (b"---\ntitle: x\n# no closing line\n", "not closed"),
    ],
)
def test_a_side_that_does_not_parse_falls_back_and_is_reported(broken: bytes, why: str):
    for result in (plan(memory(), broken, memory(), PATH), plan(memory(), memory(), broken, PATH)):
        assert isinstance(result, Fallback)
        assert result.report and why in result.reason


def test_a_base_that_does_not_parse_falls_back_and_is_reported():
    result = plan(b"---\ntitle: [\n---\n", memory(), memory(tags=["x"]), PATH)
    assert isinstance(result, Fallback) and result.report


def test_two_sides_of_different_ids_fall_back_to_the_text_merge():
    result = plan(memory(), memory(id="01JDXK3M6Q8W1J4T0P9R7V2B5Z"), memory(tags=["x"]), PATH)
    assert isinstance(result, Fallback) and not result.report


def test_files_without_front_matter_fall_back_to_the_text_merge():
    result = plan(b"# A\n\ntext\n", b"# A\n\ntext 1\n", b"# A\n\ntext 2\n", "notes/a.md")
    assert isinstance(result, Fallback) and not result.report


def test_a_merged_front_matter_the_schema_refuses_falls_back_and_is_reported():
    ours = memory(tags=[f"o{i}" for i in range(15)])
    theirs = memory(tags=[f"t{i}" for i in range(15)])
    result = plan(memory(), ours, theirs, PATH)
    assert isinstance(result, Fallback) and result.report
    assert "tags" in result.reason


# --- work state's lists ------------------------------------------------------------------


def _list(items: list, updated: str = "2026-06-01T09:00:00Z") -> bytes:
    fields = {"project": "ops", "name": "todo", "updated": updated, "items": items}
    return ("# Work state, replaced whole.\n" + dump_yaml(fields)).encode()


def _merged_list(base: bytes, ours: bytes, theirs: bytes) -> dict[str, Any]:
    path = "state/ops/todo.yaml"
    result = plan_list(base, ours, theirs, path)
    assert isinstance(result, bytes), result
    assert result == plan_list(base, theirs, ours, path), "the merge is not symmetric"
    assert result.startswith(b"# Work state, replaced whole.\n")
    return load_yaml(result.decode(), path)


def test_a_list_written_alike_on_both_sides_merges_to_it_at_the_later_time():
    base = _list(["ship docs"])
    same = ["ship docs", {"task": "test hooks", "done": False}]
    result = _merged_list(
        base, _list(same, "2026-06-02T09:00:00Z"), _list(same, "2026-06-03T09:00:00Z")
    )
    assert result["items"] == same and result["updated"] == "2026-06-03T09:00:00Z"


def test_a_list_merges_item_by_item():
    base = _list(["a", "b", {"task": "c", "done": False}])
    ours = _list(["a", {"task": "c", "done": True}, "d"], "2026-06-02T09:00:00Z")
    theirs = _list(["a", "b", {"task": "c", "done": False}, "e"], "2026-06-03T09:00:00Z")
    assert _merged_list(base, ours, theirs)["items"] == ["a", "e", {"task": "c", "done": True}, "d"]


def test_a_list_added_on_both_sides_keeps_every_item():
    result = _merged_list(b"", _list(["a", "b"]), _list(["b", "c"], "2026-06-02T09:00:00Z"))
    assert result["items"] == ["b", "c", "a"]


def test_a_list_that_does_not_parse_is_left_to_a_person():
    assert isinstance(
        plan_list(_list(["a"]), b"items: [a\n", _list(["b"]), "state/o/t.yaml"), Fallback
    )
