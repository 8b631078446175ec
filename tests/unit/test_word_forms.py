"""Related word forms: the derivations a stemmer leaves apart, guessed both ways."""

from __future__ import annotations

import pytest

from vault_tool.core.text import query_words
from vault_tool.core.word_forms import related_forms


@pytest.mark.parametrize(
    ("word", "form"),
    [
        ("owner", "own"),
        ("own", "owner"),
        ("ownership", "own"),
        ("leader", "lead"),
        ("lead", "leadership"),
        ("runner", "run"),
        ("run", "runner"),
        ("writer", "write"),
        ("write", "writer"),
    ],
)
def test_agent_and_state_nouns_relate_to_their_verb(word, form):
    assert form in related_forms(word)


def test_a_word_is_never_its_own_form():
    for word in ("owner", "own", "paper", "run"):
        assert word not in related_forms(word)


def test_the_stemmer_already_joins_inflections():
    # owns / owned / owning are one stem: related_forms need not guess them.
    assert len(set(query_words("owns owned owning own"))) == 1
    assert query_words("running deploys deployment") == ["run", "deploy"]
