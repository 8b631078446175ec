"""Meaning fused into ranking: only when `[search] semantic = true` asks for it, only once
every candidate has its vector, and never instead of the words."""

from __future__ import annotations

import pytest

from tests.helpers import create_args
from vault_tool.engine.vault import Vault
from vault_tool.search import dense

needs_extra = pytest.mark.skipif(
    not dense.available(), reason="the semantic extra is not installed (pip install '.[semantic]')"
)


def turn_on(vault_path) -> None:
    config = vault_path / ".vault" / "config.toml"
    config.write_text(config.read_text().replace("semantic = false", "semantic = true"))


def test_off_by_default_and_ranked_by_words(vault):
    vault.remember(create_args("Ana owns the billing service"))
    assert vault.settings.semantic is False and vault.meaning.dense() is None
    (hit,) = vault.search({"query": "billing"}, explain=True)["selected_hits"]
    assert "meaning" not in hit["score_parts"]


@needs_extra
def test_words_that_find_nothing_still_find_nothing(vault_path):
    turn_on(vault_path)
    with Vault.open(vault_path, client="pytest") as vault:
        vault.remember(create_args("Trip to the coast", body="We swam every morning."))
        worker = vault.meaning.worker(lambda: True)
        try:
            assert worker.wait_until_idle(120)
        finally:
            worker.stop()
        assert vault.search({"query": "zebra"})["selected_hits"] == []


@needs_extra
def test_on_it_fuses_once_every_candidate_has_its_vector(vault_path):
    turn_on(vault_path)
    with Vault.open(vault_path, client="pytest") as vault:
        for title, body in [
            ("Trip to the coast", "We drove to the sea and swam every morning."),
            ("Coast guard radio", "The coast guard radio channel is sixteen."),
            ("Quarterly numbers", "Revenue grew and costs fell this quarter."),
        ]:
            vault.remember(create_args(title, body=body))
        query = "coast holiday at the beach"
        before = vault.search({"query": query}, explain=True)["selected_hits"]
        assert all("meaning" not in h["score_parts"] for h in before)  # (no vectors yet)
        worker = vault.meaning.worker(lambda: True)
        try:
            assert worker.wait_until_idle(120)
        finally:
            worker.stop()
        after = vault.search({"query": query}, explain=True)["selected_hits"]
        assert all("meaning" in h["score_parts"] for h in after)
        # The words' candidates, no others: meaning reorders, it does not add.
        assert {h["memory_id"] for h in after} == {h["memory_id"] for h in before}
        by_meaning = vault.meaning.dense().similarities(query, [h["memory_id"] for h in after])
        closer, farther = sorted(after, key=lambda h: -by_meaning[h["memory_id"]])[:2]

        def ratio(hits: list[dict]) -> float:
            score = {h["memory_id"]: h["score"] for h in hits}
            return score[closer["memory_id"]] / score[farther["memory_id"]]

        assert ratio(after) > ratio(before)  # the one closer in meaning moved up
