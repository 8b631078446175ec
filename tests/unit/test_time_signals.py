"""The pure time signals ranking weighs: a fact that has ended, a memory made then."""

from __future__ import annotations

from vault_tool.core.text import query_words
from vault_tool.search.signals import ended_for_now, made_on

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


def test_said_again_marks_the_older_of_one_type_about_the_same_entities():
    from vault_tool.search.signals import said_again

    ana = frozenset({"ana", "ana's setup"})
    found = {
        "august": ("preference", ana, "2026-08-18"),
        "november": ("preference", ana, "2026-11-24"),
        "other type": ("decision", ana, "2026-07-01"),
        "other people": ("preference", frozenset({"bo"}), "2026-01-01"),
    }
    assert said_again(found) == {"august"}


def test_said_on_is_the_latest_valid_from_else_the_day_made():
    from vault_tool.search.signals import said_on

    facts = [{"valid_from": "2026-08-18"}, {"valid_from": "2026-09-01"}, {}]
    assert said_on({"created": "2026-12-01", "facts": facts}) == "2026-09-01"
    assert said_on({"created": "2026-12-01", "facts": [{}]}) == "2026-12-01"
