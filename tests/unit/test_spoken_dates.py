"""Times a question names as people say them, read against an injected today."""

from __future__ import annotations

from datetime import date

from vault_tool.core.spoken_dates import named_time

TODAY = date(2026, 12, 1)  # a Tuesday


def test_last_week_is_the_seven_days_of_the_week_before():
    named = named_time("what did Ana say last week", TODAY)
    assert named.dates[0] == "2026-11-23" and named.dates[-1] == "2026-11-29"
    assert len(named.dates) == 7 and named.past


def test_a_month_by_name_is_its_latest_past_or_present_one():
    assert named_time("who led the rotation in August", TODAY).dates == ("2026-08",)
    assert named_time("plans for december", TODAY).dates == ()  # (no "in": not a time)
    assert named_time("during december", TODAY).dates == ("2026-12",)
    assert named_time("in May", date(2026, 3, 1)).dates == ("2025-05",)


def test_may_the_verb_is_not_a_month():
    assert named_time("may we deploy on friday", TODAY).dates == ()


def test_days_ago_yesterday_and_written_dates():
    assert named_time("yesterday", TODAY).dates == ("2026-11-30",)
    assert "2026-11-24" in named_time("two weeks ago", date(2026, 12, 8)).dates
    assert named_time("the lead on 2026-08-10", TODAY).dates == ("2026-08-10",)
    assert named_time("last month", TODAY).dates == ("2026-11",)


def test_tense():
    assert named_time("who is the on-call lead now", TODAY).present
    assert not named_time("who is the on-call lead now", TODAY).past
    assert named_time("who was the on-call lead", TODAY).past
    assert not named_time("on-call lead", TODAY).past
