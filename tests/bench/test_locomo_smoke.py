"""The LoCoMo harness at a smoke size, on a small conversation of its own in LoCoMo's shape
(the benchmark's data is never part of the project): well formed, not scored."""

from __future__ import annotations

from pathlib import Path

from bench import locomo


def test_every_turn_is_stored_and_every_question_answered_with_turns_of_the_conversation(
    tmp_path: Path,
):
    sample = locomo.smoke_conversation()
    results = locomo.bench(None, None, tmp_path)
    said = {turn["dia_id"] for _, _, turn in locomo.turns(sample["conversation"])}
    assert results["turns"] == len(said) == 9
    ours = results["vault_tool"]
    assert ours["search_ms"]["n"] == len(sample["qa"])
    assert ours["remember_ms_per_memory"]["n"] == 3  # one batch a session
    for category, line in ours["scores"].items():
        if category == "5":
            assert 0.0 <= line["no_hits"] <= 1.0
            continue
        assert line["questions"] >= 1
        for name in ("recall_any@1", "recall_any@5", "recall_any@10", "mrr@10"):
            assert 0.0 <= line[name] <= 1.0, (category, name)
    assert ours["scores"]["1-4"]["questions"] == 5
    ranked = locomo.asyncio.run(locomo.run_vault_tool(sample, tmp_path / "again"))["ranked"]
    assert all(set(turns) <= said for turns in ranked)


def test_a_session_date_is_read_as_written_in_the_data():
    assert locomo.session_day("1:56 pm on 8 May, 2023") == "2023-05-08"
    assert locomo.session_day("10:00 am on 3 March 2024") == "2024-03-03"
    assert locomo.session_day("sometime") == ""
