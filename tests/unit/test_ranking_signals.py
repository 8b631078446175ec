"""Ranking maths without an index: feedback similarity and valid-time matching."""

from __future__ import annotations

import math

import pytest

from vault_tool.core.text import query_words
from vault_tool.core.times import query_dates
from vault_tool.search.features import feedback_signals, query_similarity, valid_time_match


def words(text: str) -> frozenset[str]:
    return frozenset(query_words(text))


def test_a_judgement_counts_fully_for_its_own_query_and_not_at_all_for_an_unrelated_one():
    judged = [("m1", 1, "who owns the billing service")]
    same = feedback_signals(judged, query_words("who owns the billing service"))
    assert same == {"m1": pytest.approx(math.tanh(0.5))}
    assert feedback_signals(judged, query_words("kafka restarts at night")) == {}


def test_a_judgement_counts_less_for_a_query_of_the_same_kind_about_something_else():
    judged = [("m1", 1, "who owns the billing service")]
    close = feedback_signals(judged, query_words("who owns the billing service today"))["m1"]
    other = feedback_signals(judged, query_words("who owns the search service"))["m1"]
    assert 0 < other < close < math.tanh(0.5)
    # Half the words shared counts a quarter, not half (or, before, three quarters).
    shared = query_similarity(words("owns billing service"), words("owns search service"))
    assert shared == pytest.approx(0.25)


def test_feedback_stays_bounded_however_many_judgements():
    judged = [("m1", 1, "billing service")] * 1000 + [("m2", -1, "billing service")] * 1000
    signals = feedback_signals(judged, query_words("billing service"))
    assert 0 < signals["m1"] <= 1 and -1 <= signals["m2"] < 0


def test_query_dates_are_days_and_months_and_nothing_else():
    assert query_dates("who owned it on 2024-03-15 or in 2025-01") == ["2024-03-15", "2025-01"]
    assert query_dates("ticket 2024-13-01, build 12024-03-15x, port 8080") == []


OWNS = {"subject": "Ana", "predicate": "owns", "object": "billing service"}


@pytest.mark.parametrize(
    ("interval", "date", "holds"),
    [
        ({"valid_from": "2024-01-10", "valid_until": "2024-02-20"}, "2024-02-20", True),
        ({"valid_from": "2024-01-10", "valid_until": "2024-02-20"}, "2024-02-21", False),
        ({"valid_from": "2024-01-10", "valid_until": "2024-02-20"}, "2024-01", True),
        ({"valid_from": "2024-01-10", "valid_until": "2024-02-20"}, "2023-12", False),
        ({"valid_from": "2024-01-10", "valid_until": "2024-02-20"}, "2024-03", False),
        ({"valid_from": "2024-01-31"}, "2024-01", True),  # its last day
        ({"valid_from": "2024-02-01"}, "2024-01", False),
        ({"valid_until": "2023-06-01"}, "2023-06", True),
        ({}, "2024-01-15", False),  # no interval: true every day, so says nothing of this one
    ],
)
def test_a_fact_matches_a_date_only_when_its_interval_holds_that_day_or_month(
    interval, date, holds
):
    facts = [{**OWNS, **interval}]
    match = valid_time_match(facts, [date], query_words(f"who owned the billing service {date}"))
    assert (match == 1.0) is holds and (match == 0.0) is not holds


def test_the_match_is_the_share_of_the_query_words_the_fact_states():
    facts = [{**OWNS, "object": "billing worker", "valid_from": "2024-01-01"}]
    match = valid_time_match(facts, ["2024-05-01"], query_words("who owned billing service"))
    assert match == pytest.approx(2 / 3)  # own, billing; not service
