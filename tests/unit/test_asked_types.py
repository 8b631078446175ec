"""The kind of memory a question asks for, by its words (search/candidates.asked_types), and the
phrases that only say a query is about now (core/spoken_dates.without_now)."""

from __future__ import annotations

import pytest

from vault_tool.core.spoken_dates import without_now
from vault_tool.core.text import query_words
from vault_tool.search.candidates import asked_types


@pytest.mark.parametrize(
    ("question", "kinds"),
    [
        ("what did we decide about staging?", {"decision"}),
        ("Which database was chosen for billing", {"decision"}),
        ("what does Ana prefer for standups", {"preference"}),
        ("how do we rotate the API keys", {"procedure"}),
        ("how to deploy the billing service", {"procedure"}),
        ("any gotchas with the staging VPN", {"gotcha"}),
        ("what is the rule for merging on Fridays", {"rule"}),
        ("who owns the billing service", set()),
        ("how did the migration go", set()),
        ("the deciduous trees in the park", set()),
    ],
)
def test_asked_types(question: str, kinds: set[str]) -> None:
    assert asked_types(question) == kinds


def test_the_words_of_now_are_not_query_words() -> None:
    for said in ("right now", "currently", "at the moment", "these days", "nowadays", "now"):
        assert query_words(without_now(f"who is on call {said}")) == query_words("who is on call")
    assert query_words(without_now("who knows the right answer")) == ["know", "right", "answer"]


def test_the_words_that_say_when_are_not_what_a_query_is_about() -> None:
    from vault_tool.core.spoken_dates import without_time

    for said in ("2020-02-10", "in August", "on 19 August, 2023", "last week", "3 days ago"):
        assert query_words(without_time(f"on-call lead {said}")) == ["call", "lead"], said
    assert query_words(without_time("port 8080 on staging")) == ["port", "8080", "stage"]
