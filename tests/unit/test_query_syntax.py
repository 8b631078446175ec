"""The query syntax of search: words, "a phrase", -word, type:, tag: and *; and the refusal of
a malformed query, which names what was wrong and the forms that are accepted."""

from __future__ import annotations

import pytest

from vault_tool.core.query import holds_phrase, parse_query, word_sequence
from vault_tool.errors import InvalidInput


def test_plain_words_are_left_for_ranking_as_they_were():
    query = parse_query("who owns the billing service")
    assert query.text == "who owns the billing service"
    assert not (query.phrases or query.excluded_words or query.memory_types or query.tags)
    assert not query.lists


def test_a_phrase_is_required_and_its_words_are_ranked_too():
    query = parse_query('owner "billing service"')
    assert query.phrases == ("billing service",)
    assert query.words == ("owner",)
    assert query.text == "owner billing service"
    assert not query.lists


def test_a_minus_word_and_a_minus_phrase_exclude():
    query = parse_query('billing -draft -"old plan"')
    assert query.words == ("billing",)
    assert query.excluded_words == ("draft",)
    assert query.excluded_phrases == ("old plan",)


def test_type_and_tag_are_filters_in_any_case():
    query = parse_query("Type:Decision type:rule TAG:Billing tag:billing")
    assert query.memory_types == ("decision", "rule")
    assert query.tags == ("billing",)
    assert query.text == ""
    assert query.lists  # only filters: the memories they leave, newest first


def test_a_star_or_only_exclusions_list_memories():
    assert parse_query("*").lists
    assert parse_query("-draft").lists
    assert not parse_query("billing *").lists


def test_words_that_only_look_like_syntax_stay_words():
    query = parse_query("git push --force follow-up 2026-06 note: re:billing")
    assert query.words == ("git", "push", "--force", "follow-up", "2026-06", "note:", "re:billing")
    assert not query.excluded_words


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('"billing service', "never closed"),
        ('owner "billing', "never closed"),
        ('""', "empty phrase"),
        ("-", "a lone -"),
        ("billing - owner", "a lone -"),
        ("type:", "type: needs a memory type"),
        ("type: decision", "type: needs a memory type"),
        ("type:bogus", "unknown memory type 'bogus'"),
        ("tag:", "tag: needs a tag"),
        ("tag:a,b", "one tag"),
        ("-type:decision", "-type:"),
        ("-tag:draft", "-tag:"),
        ("-the", "no word search can match"),
        ('"the of"', "no word search can match"),
    ],
)
def test_a_malformed_query_is_refused_naming_the_problem_and_the_forms(text: str, named: str):
    with pytest.raises(InvalidInput) as refused:
        parse_query(text)
    assert refused.value.field == "query"
    assert refused.value.message.startswith("query: ")
    assert named in refused.value.message
    # The hint lists every accepted form, so the caller can fix the query at once.
    for form in ('"a phrase"', "-word", "type:", "tag:"):
        assert form in refused.value.hint


def test_an_unknown_type_is_refused_with_the_types_there_are():
    with pytest.raises(InvalidInput) as refused:
        parse_query("billing type:decisions")
    assert "decision, fact, preference" in refused.value.hint


def test_a_phrase_holds_when_its_words_are_adjacent_as_search_compares_words():
    content = word_sequence("# Billing\n\nThe Billing Services of the team, and more.")
    assert holds_phrase(content, word_sequence("billing service"))  # endings aside
    assert holds_phrase(content, word_sequence("services of the team"))  # small words skipped
    assert not holds_phrase(content, word_sequence("team billing"))  # order matters
    apart = word_sequence("billing must dedupe the service")
    assert not holds_phrase(apart, word_sequence("billing service"))
