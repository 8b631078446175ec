"""The pure time signals ranking weighs: a fact that has ended, a memory made then."""

from __future__ import annotations

from vault_tool.core.text import query_words
from vault_tool.search.features import ended_for_now, made_on

ENDED = {
    "subject": "Marek",
    "predicate": "leads",
    "object": "on-call rotation",
    "valid_from": "2026-07-01",
    "valid_until": "2026-09-30",
}
TIMELESS = {"subject": "on-call rotation", "predicate": "belongs_to", "object": "platform team"}
WORDS = query_words("on-call lead")


def test_the_best_matching_fact_ended_before_today():
    assert ended_for_now([ENDED, TIMELESS], "2026-12-01", WORDS)
    assert not ended_for_now([ENDED, TIMELESS], "2026-08-01", WORDS)


def test_a_fact_that_has_not_begun_is_not_current_either():
    assert ended_for_now([ENDED], "2026-06-01", WORDS)


def test_a_memory_without_bounded_facts_never_ends():
    assert not ended_for_now([TIMELESS], "2026-12-01", WORDS)
    assert not ended_for_now([], "2026-12-01", WORDS)


def test_a_current_fact_matching_as_well_keeps_the_memory_current():
    current = {**ENDED, "subject": "José", "valid_from": "2026-10-01", "valid_until": ""}
    assert not ended_for_now([ENDED, current], "2026-12-01", WORDS)


def test_made_on_a_named_day_or_month():
    times = {"created": "2026-11-24", "facts": []}
    assert made_on(times, ["2026-11-23", "2026-11-24"])
    assert made_on(times, ["2026-11"])
    assert not made_on(times, ["2026-10"])
    assert not made_on({"created": "", "facts": []}, ["2026-11"])


def test_a_new_value_is_a_fact_said_again_of_the_same_thing_with_another_object():
    from vault_tool.search.features import new_value

    said = {"subject": "Ben", "predicate": "said", "object": "Ben's setup"}
    zed = [said, {"subject": "Ben", "predicate": "uses_editor", "object": "Zed"}]
    neovim = [said, {"subject": "ben", "predicate": "uses_editor", "object": "Neovim"}]
    assert new_value(zed, neovim) and new_value(neovim, zed)
    assert not new_value(zed, zed)  # (the same thing said again: no new value)
    # Another topic: no fact shared, and what a person says has many objects at once.
    move = [{"subject": "Ben", "predicate": "said", "object": "Ben's move"}]
    assert not new_value([said], move)
    # A shared fact, but the other facts are of other predicates.
    keyboard = [said, {"subject": "Ben", "predicate": "types_on", "object": "a split board"}]
    assert not new_value(zed, keyboard)
    # A later memory that ends an earlier one's fact (a lead's term, with its last day).
    ana = {"subject": "Ana", "predicate": "leads", "object": "on-call rota"}
    lena = [{**ana, "subject": "Lena"}, {**ana, "valid_until": "2026-11-28"}]
    assert new_value([ana, said], lena)
    assert not new_value(lena, [ana, said])


def test_said_on_is_the_latest_valid_from_else_the_day_made():
    from vault_tool.search.features import said_on

    facts = [{"valid_from": "2026-08-18"}, {"valid_from": "2026-09-01"}, {}]
    assert said_on({"created": "2026-12-01", "facts": facts}) == "2026-09-01"
    assert said_on({"created": "2026-12-01", "facts": [{}]}) == "2026-12-01"
