"""Ranking on the bundled sample vault: the questions a new user asks first come out right."""

from __future__ import annotations

import pytest

from vault_tool.engine.vault import Vault
from vault_tool.ops.sample import create_sample_vault


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    root = tmp_path_factory.mktemp("sample") / "vault"
    create_sample_vault(root)
    with Vault.open(root) as vault:
        yield vault


@pytest.mark.parametrize(
    ("query", "best"),
    [
        ("who owns the billing service", "Ana owns the billing service"),
        ("what region does staging run in", "Staging moves to eu-central-1"),
        ("how do we rotate the database password", "Rotate the billing database password"),
        ("code freeze", "Code freeze until 2026-12-20"),
        ("Ana the designer", "Ana wants design feedback as Figma comments"),
        ("billing owner", "Ana owns the billing service"),
    ],
)
def test_first_questions_rank_the_right_memory_first(sample, query, best):
    hits = sample.search({"query": query})["selected_hits"]
    assert hits[0]["title"] == best


def test_the_superseded_staging_decision_ranks_below_its_replacement(sample):
    titles = [
        h["title"] for h in sample.search({"query": "staging region eu-west-1"})["selected_hits"]
    ]
    assert titles.index("Staging moves to eu-central-1") < titles.index("Staging runs in eu-west-1")
