"""The conversational question set and its runner at a smoke size: well formed, not scored.

A few sessions and two questions per type: the chat is seeded, every turn is stored through
remember, every type is asked, every answer is a stored memory, the held-out seed shares no
target with the tuning seeds, and every figure is a share. bm25s is a bench extra (`.[bench]`);
where it is absent (CI installs `.[test]`) the reference's part is skipped and says why.
"""

from __future__ import annotations

import importlib.util
import re
from datetime import date, timedelta
from pathlib import Path

import pytest

from bench import conv_quality, conv_questions, conversations
from bench.conv_world import DAYS
from vault_tool.engine.vault import Vault

SESSIONS, PER_TYPE = conv_quality.SMOKE["sessions"], conv_quality.SMOKE["per_type"]
TODAY = date(2026, 12, 2)  # a Wednesday: "last week" is Monday 23 to Sunday 29 November
NO_BM25S = "bm25s and PyStemmer are bench extras (pip install -e '.[bench]'); not installed"
HAVE_BM25S = all(importlib.util.find_spec(m) for m in ("bm25s", "Stemmer"))


def assert_share(value: float) -> None:
    assert isinstance(value, float) and 0.0 <= value <= 1.0


def test_the_chat_is_seeded_and_every_turn_is_stored_with_its_speaker_and_date(
    vault: Vault,
) -> None:
    convo = conversations.build(SESSIONS, 7, TODAY)
    again = conversations.build(SESSIONS, 7, TODAY)
    assert [(t.title, t.text) for t in convo.turns] == [(t.title, t.text) for t in again.turns]
    other = conversations.build(SESSIONS, 8, TODAY)
    assert [t.text for t in other.turns] != [t.text for t in convo.turns]
    assert all(TODAY - timedelta(days=DAYS) <= d < TODAY for d in convo.days)
    words = {w.lower() for t in convo.turns for w in re.findall(r"[A-Za-z']+", t.text)}
    assert len(words) > 300  # prose, not a small fixed vocabulary

    ids, _ = conv_quality.store(vault, convo)
    assert len(ids) == len(convo.turns) and set(ids) == conv_quality.vault_ids(vault.root)
    ended = 0
    for turn, memory_id in zip(convo.turns, ids, strict=True):
        stored = vault.search({"memory_id": memory_id})
        assert stored["title"] == turn.title and turn.title.startswith(turn.day.isoformat())
        delta = stored["semantic_delta"]
        speaker = next(e for e in delta["entities"] if e["n"] == turn.speaker)
        assert speaker["kind"] == "person" and speaker["is"] == convo.people[turn.speaker]
        said = [f for f in delta["facts"] if f["predicate"] == "said"]
        assert said and said[0]["subject"] == turn.speaker
        assert str(said[0]["valid_from"]) == turn.day.isoformat()
        leads = [f for f in delta["facts"] if f["predicate"] == "leads"]
        ended += sum(1 for f in leads if f.get("valid_until"))
        assert all(
            str(f["valid_until"]) < turn.day.isoformat() for f in leads if "valid_until" in f
        )
    assert ended > 0  # a handover ends the previous lead's fact


def test_every_type_is_asked_and_the_held_out_seed_shares_no_target() -> None:
    convo = conversations.build(40, 7, TODAY)
    sets = {seed: conv_questions.questions(convo, seed, 5) for seed in conversations.SEEDS}
    targets = {s: {k for q in qs for k in q.relevant + q.stale} for s, qs in sets.items()}
    held = conversations.HELD_OUT_SEED
    for seed in conversations.TUNING_SEEDS:
        assert not targets[held] & targets[seed]
    for qs in sets.values():
        assert {q.qtype for q in qs} == set(conversations.TYPES)
        for q in qs:
            assert q.abstain == (q.qtype == "adversarial")
            assert all(0 <= int(k[1:]) < len(convo.turns) for k in q.relevant + q.stale)
            if q.qtype == "changed_fact":
                assert q.stale  # the older statement
            if q.qtype == "multi_hop":
                assert len({convo.turns[int(k[1:])].day for k in q.relevant}) == 2
    monday = date(2026, 11, 23)
    last_week = [q for qs in sets.values() for q in qs if "last week" in q.query]
    for q in last_week:
        assert all(monday <= convo.turns[int(k[1:])].day <= date(2026, 11, 29) for k in q.relevant)
    with pytest.raises(ValueError):
        conv_questions.questions(convo, 4, 5)


def test_the_runner_measures_vault_tool_on_every_type_with_well_formed_figures(
    tmp_path: Path,
) -> None:
    results = conv_quality.bench(SESSIONS, PER_TYPE, tmp_path)
    stored = conv_quality.vault_ids(tmp_path / "vault")
    assert len(stored) == results["memories"] and results["memories"] <= results["turns"]
    for seed, asked in results["asked"].items():
        assert {q["qtype"] for q in asked} == set(conversations.TYPES), seed
        for q in asked:
            assert set(q["relevant"]) <= stored and set(q["stale"]) <= stored
    ours = results["systems"]["vault_tool"]
    assert 0 < ours["search"]["p50_ms"] <= ours["search"]["p95_ms"]
    for part in ("tuning", "held_out"):
        assert ours[part]["n"] > 0
        answerable = set(conversations.TYPES) - {"adversarial"}
        assert set(ours[part]["by_type"]) == answerable
        for figures in [ours[part]["overall"], *ours[part]["by_type"].values()]:
            for k in (1, 5, 10):
                assert_share(figures[f"recall_any@{k}"])
                assert_share(figures[f"recall_all@{k}"])
                assert figures[f"recall_all@{k}"] <= figures[f"recall_any@{k}"]
            for key in ("ndcg@10", "mrr"):
                assert_share(figures[key])
        assert_share(ours[part]["by_type"]["changed_fact"]["stale_above_current"])
        for key in ("precision", "recall", "false_abstention_rate"):
            assert_share(ours["abstention"][part][key])
    if not HAVE_BM25S:
        assert results["systems"]["bm25s"]["status"].startswith("not installed")


@pytest.mark.skipif(not HAVE_BM25S, reason=NO_BM25S)
def test_bm25s_is_measured_beside_vault_tool_in_the_same_run(tmp_path: Path) -> None:
    results = conv_quality.bench(SESSIONS, PER_TYPE, tmp_path)
    reference = results["systems"]["bm25s"]
    assert reference["index_s"] >= 0 and reference["search"]["n"] > 0
    for part in ("tuning", "held_out"):
        assert reference[part]["n"] == results["systems"]["vault_tool"][part]["n"]
        assert_share(reference[part]["overall"]["recall_any@5"])
        assert_share(reference[part]["overall"]["ndcg@10"])
    ratios = results["held_out_ratios_to_bm25s"]
    assert set(ratios) >= {"recall_any@5", "ndcg@10", "mrr"}
    for found in results["held_out_behind_bm25s"]:
        assert found["expected"] and len(found["vault_tool_top3"]) <= 3
        assert found["bm25s_rank"] <= 5
        assert found["vault_tool_rank"] is None or found["vault_tool_rank"] > found["bm25s_rank"]
