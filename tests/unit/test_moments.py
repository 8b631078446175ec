"""The one grammar of --since / --until / --as-of and of search's since / until. Pure."""

from __future__ import annotations

from datetime import date

import pytest

from vault_tool.core import schema
from vault_tool.core.search_call import check_search
from vault_tool.core.times import MOMENT_FORMS, parse_moment
from vault_tool.errors import InvalidInput

TODAY = date(2026, 3, 31)


@pytest.mark.parametrize(
    ("text", "moment"),
    [
        ("2026-03-15", "2026-03-15"),
        ("2026-03-15T09:30:00Z", "2026-03-15T09:30:00Z"),
        ("2026-03-15T09:30", "2026-03-15T09:30:00Z"),
        ("2026-03-15 09:30:15+02:00", "2026-03-15T07:30:15Z"),
        ("2026-03-15T09:30:00.250Z", "2026-03-15T09:30:00Z"),
        ("today", "2026-03-31"),
        ("yesterday", "2026-03-30"),
        (" 7d ", "2026-03-24"),
        ("0d", "2026-03-31"),
        ("2w", "2026-03-17"),
        ("1m", "2026-02-28"),  # a month back from the 31st is the last day of February
        ("3m", "2025-12-31"),
        ("14m", "2025-01-31"),
    ],
)
def test_every_accepted_form_gives_a_day_or_a_utc_time(text, moment):
    assert parse_moment(text, today=TODAY) == moment


@pytest.mark.parametrize(
    "text",
    [
        "garbage",
        "",
        "last week",
        "2026-13-01",
        "2026-02-30",
        "2026-03",
        "20260315",
        "2026-W11",
        "7",
        "7h",
        "-7d",
        "99999999d",
        "tomorrow",
    ],
)
def test_anything_else_is_refused_with_the_accepted_forms(text):
    with pytest.raises(ValueError) as caught:
        parse_moment(text, today=TODAY)
    assert MOMENT_FORMS in str(caught.value)


def test_the_search_schema_accepts_the_relative_forms_and_the_call_resolves_them():
    checked = check_search({"query": "billing", "since": "7d", "until": "yesterday"})
    assert checked.controls.since == parse_moment("7d")
    assert checked.controls.until == parse_moment("yesterday")
    assert checked.as_sent["since"] == "7d"  # the ledger keeps the call as it was sent


@pytest.mark.parametrize("text", ["garbage", "2026-02-30", "7h", "last week"])
def test_a_search_call_with_another_moment_is_refused_naming_the_forms(text):
    with pytest.raises(InvalidInput) as caught:
        check_search({"query": "billing", "since": text})
    assert caught.value.field == "since"
    assert "today" in caught.value.message + caught.value.hint


def test_the_search_schema_describes_the_forms():
    since = schema.load("search.input.schema.json")["properties"]["since"]
    text = str(since)
    for form in ("today", "yesterday", "7d"):
        assert form in text
