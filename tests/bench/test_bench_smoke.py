"""The benchmark harness at a smoke size: it runs and its results are well formed.

Not timings (CI machines vary): keys, types and ranges, so bench/ cannot rot. Uses only
what `.[test]` installs; the bm25s reference reports itself as not installed there.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from bench import generate, questions
from vault_tool.core.entities import compatible
from vault_tool.core.memory import parse, render


def assert_latency(figure: dict, n: int | None = None) -> None:
    assert set(figure) == {"p50_ms", "p95_ms", "n"}
    assert 0 < figure["p50_ms"] <= figure["p95_ms"] < 60_000
    if n is not None:
        assert figure["n"] == n


def assert_share(value: float) -> None:
    assert isinstance(value, float) and 0.0 <= value <= 1.0


def test_generator_is_deterministic_and_writes_a_consistent_world(tmp_path: Path) -> None:
    corpus = generate.build(400, 7)
    again = generate.build(400, 7)
    assert [m.id for m in corpus.memories] == [m.id for m in again.memories]
    assert [render(m) for m in corpus.memories] == [render(m) for m in again.memories]
    assert generate.build(400, 8).memories[0].id != corpus.memories[0].id
    ids = {m.id for m in corpus.memories}
    assert len(ids) == 400
    assert all(set(m.supersedes) <= ids for m in corpus.memories)
    assert any(m.supersedes for m in corpus.memories)
    for chain in corpus.owners.values():  # ownerships follow each other without overlap
        for (_, _, start, until), (_, _, nxt, _) in itertools.pairwise(chain):
            assert until is not None and start <= until < nxt
    assert corpus.homonyms
    for _, people in corpus.homonyms:
        first, second = (corpus.people[i] for i in people[:2])
        assert first.name == second.name and not compatible(first.gloss, second.gloss)
    made = generate.write_vault(tmp_path / "v", 60, 7)
    files = [p for p in (tmp_path / "v").rglob("*.md") if ".vault" not in p.parts]
    assert len(files) == len(made) == 60
    for file in files:
        parse(file.read_text(encoding="utf-8"), file.name)


def test_question_folds_are_disjoint_and_answers_exist() -> None:
    corpus = generate.build(2000, 7)
    ids = {m.id for m in corpus.memories}
    sets = {seed: questions.questions(corpus, seed, 5) for seed in questions.SEEDS}
    targets = {seed: {tuple(q.relevant) for q in qs if q.relevant} for seed, qs in sets.items()}
    held = targets[questions.HELD_OUT_SEED]
    for seed in questions.TUNING_SEEDS:
        assert not held & targets[seed]
    for qs in sets.values():
        assert {q.qtype for q in qs} == set(questions.TYPES)
        for q in qs:
            assert set(q.relevant) <= ids and set(q.stale) <= ids
            assert q.abstain == (q.qtype == "abstention")
    assert all(q.stale for qs in sets.values() for q in qs if q.qtype == "knowledge_update")


def test_speed_harness_reports_every_figure(tmp_path: Path) -> None:
    from bench import speed

    results = speed.bench(60, queries=5, writes=2, edits=1, workdir=tmp_path, batches=1)
    for key, n in (
        ("search_short", 5),
        ("search_sentence", 5),
        ("remember_create", 2),
        ("remember_update", 2),
        ("remember_batch20", 1),
        ("hand_edit_searchable", 1),
        ("hand_edit_committed", 1),
    ):
        assert_latency(results[key], n)
    assert results["hand_edit_searchable"]["p50_ms"] <= results["hand_edit_committed"]["p95_ms"]
    assert results["indexed"] == 60
    assert results["reindex_s"] > 0 and results["index_mb"] > 0
    assert results["reindex_peak_rss_mb"] > 10 and results["peak_rss_mb"] > 10
    assert len(results["load_average_start"]) == 3


def test_stress_and_chat_corpora_are_deterministic_and_hand_made(tmp_path: Path) -> None:
    from bench import chat, stress

    assert stress.write_stress(tmp_path / "s", 40) == 40
    notes = sorted((tmp_path / "s").rglob("*.md"))
    assert len(notes) == 40
    texts = [n.read_text(encoding="utf-8") for n in notes]
    assert not any("\nid: " in t for t in texts)  # hand-made: no ids
    assert any(not t.startswith("---") for t in texts)  # some without front matter
    for query in stress.queries(10):  # every query word is in most notes
        for word in query.split():
            assert sum(word in t for t in texts) > len(texts) // 2
    assert stress.queries(10) == stress.queries(10)

    made = chat.write_chat(tmp_path / "c", 60)
    assert made.notes == chat.build(60).notes and len(made.notes) == 60
    assert made.questions and all(q.text.endswith("?") for q in made.questions)
    for question in made.questions:  # each question's answer is in the note it names
        answer = (tmp_path / "c" / question.relevant).read_text(encoding="utf-8")
        assert question.answer in answer and "**User:**" in answer
        parse(answer, question.relevant)


@pytest.mark.parametrize("corpus", ["notes", "stress", "chat"])
def test_speed_harness_runs_on_every_corpus(tmp_path: Path, corpus: str) -> None:
    from bench import speed

    results = speed.bench(
        40, queries=3, writes=1, edits=1, workdir=tmp_path, batches=1, corpus=corpus
    )
    assert results["corpus"] == corpus and results["indexed"] == 40
    for key in ("search_short", "search_sentence", "remember_create", "remember_update"):
        assert_latency(results[key])
    assert_latency(results["hand_edit_searchable"], 1)


def test_stdio_harness_reports_every_figure(tmp_path: Path) -> None:
    from bench import mcp_speed

    results = mcp_speed.bench(
        40, queries=3, writes=1, edits=1, workdir=tmp_path, start_runs=1, batches=1
    )
    for key in ("start_to_initialize", "start_to_tools_list", "start_to_first_search"):
        assert_latency(results[key], 1)
    assert results["start_to_initialize"]["p50_ms"] <= results["start_to_first_search"]["p50_ms"]
    for key in ("search_short", "search_sentence"):
        assert_latency(results[key], 3)
    for key in ("remember_create", "remember_update", "remember_batch20"):
        assert_latency(results[key], 1)
    assert_latency(results["hand_edit_searchable"], 1)
    assert results["cli_reindex_s"] > 0 and results["cli_reindex_peak_rss_mb"] > 10
    assert results["server_peak_rss_mb"] is None or results["server_peak_rss_mb"] > 10
    assert results["sdk_initialize_ms"] > 0


def test_quality_harness_reports_metrics_and_the_feedback_effect(tmp_path: Path) -> None:
    from bench import quality

    results = quality.bench(300, per_type=3, workdir=tmp_path, basic_memory=None)
    ours = results["systems"]["vault_tool"]
    assert ours["index_s"] > 0
    assert_latency(ours["search"])
    for part in ("tuning", "held_out"):
        assert ours[part]["n"] > 0
        overall = ours[part]["overall"]
        for k in (1, 5, 10):
            assert_share(overall[f"recall_any@{k}"])
            assert_share(overall[f"recall_all@{k}"])
            assert overall[f"recall_all@{k}"] <= overall[f"recall_any@{k}"]
        for key in ("ndcg@10", "mrr", "stale_above_current"):
            assert_share(overall[key])
        assert set(ours[part]["by_type"]) <= set(questions.TYPES)
        abstention = ours["abstention"][part]
        for key in ("precision", "recall", "false_abstention_rate"):
            assert_share(abstention[key])
    feedback = results["feedback"]
    assert feedback["judged_searches"] > 0
    for part in ("tuning", "held_out"):
        before, after = feedback["before"][part], feedback["after"][part]
        assert set(before) == set(after) == set(feedback["delta"][part])
    reference = results["systems"]["bm25s"]
    if "status" in reference:
        assert reference["status"].startswith("not installed")
    else:
        assert_share(reference["held_out"]["overall"]["ndcg@10"])
        assert results["ratios_to_bm25s"]["index_s"] > 0


def test_report_renders_tables_from_results(tmp_path: Path) -> None:
    from bench import report

    speed = {"count": 60, "reindex_s": 1.0, "search_short": {"p50_ms": 1, "p95_ms": 2, "n": 3}}
    text = report.markdown_tables({"speed": {60: speed}, "mcp": {}, "quality": {}})
    assert "| search_short |" in text or "search_short" in text


def test_a_persons_notes_folder_is_adopted_whole_with_and_without_git(tmp_path: Path) -> None:
    from bench import adopt

    results = adopt.bench(25, 1, tmp_path)  # raises if a note is not indexed or is a problem
    for label in ("with_git", "without_git"):
        for figure in ("init", "reindex", "floor_read_notes"):
            assert_latency(results[f"{figure}_{label}"], 1)
    assert results["notes"] == 25


def test_start_harness_reports_the_tool_list_cost_and_the_clients_validation(
    tmp_path: Path,
) -> None:
    import sys

    from bench import mcp_start
    from vault_tool.storage.store import Store

    vault = tmp_path / "vault"
    Store.init(vault).close()
    answers: dict = {}
    command = [sys.executable, "-m", "vault_tool", "serve", "--vault", str(vault)]
    times = mcp_start.one_run(command, answers)
    assert times["initialize"] <= times["tools/list"] <= times["first search"]
    cost = mcp_start.tool_list_cost(answers["tools/list"])
    assert cost["characters"] > cost["tokens"] > 0
    checked = mcp_start.validation_ms(answers["tools/list"], answers["first search"], repeat=2)
    assert checked["cached"] > 0 and checked["one_shot"] > 0


def test_targets_harness_prints_every_target_with_its_figure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench import target_limits, targets

    results = targets.bench(40, n_queries=4, writes=2, edits=1, workdir=tmp_path)
    for key, n in (
        ("search", 4),
        ("search_in_server", 4),
        ("remember_create", 2),
        ("remember_update", 2),
        ("remember_batch20", 5),
        ("hand_edit_searchable", 1),
        ("stress_search", 4),
        ("floor_ping", 4),
        ("floor_git_write", 20),
    ):
        assert_latency(results[key], n)
    for name, parts in (
        ("search", {"arguments", "ranking", "ledger", "rendering"}),
        ("remember_create", {"arguments", "similar", "files", "git", "index", "rendering"}),
    ):
        stages = results[f"{name}_stages_ms"]  # (from the audit log's stages_ms)
        assert parts <= set(stages) and stages["in_server"] > 0 and "transport" in stages
    assert results["tools_list_chars"] > results["tools_list_tokens_estimate"] > 0
    assert results["server_settled_s"] >= 0  # (the timed phases waited for the start-up)
    measured = [t for t in target_limits.TARGETS if t.figure(results) is not None]
    assert len(measured) == len(target_limits.TARGETS)  # bm25s absent: only a floor is missing
    targets.print_targets(results)
    printed = capsys.readouterr().out
    assert all(t.what in printed for t in target_limits.TARGETS)
    assert "| reindex (s) |" in target_limits.markdown({40: results})


def test_team_harness_syncs_and_reports_every_figure(tmp_path: Path) -> None:
    from bench import team

    results = team.bench(20, 1, tmp_path)  # raises if a pulled memory never becomes searchable
    for figure in ("sync_nothing_new", "sync_fast_forward", "sync_merge", "pull_to_searchable"):
        assert_latency(results[figure], 1)
    for floor in ("floor_fetch", "floor_pull_ff", "floor_pull_merge_push", "floor_quiet_period"):
        assert_latency(results[floor], 1)
