"""`vault-tool timeline` and `vault-tool facts`: the extended tools' views at the terminal,
over the bundled sample vault (real files, real git history, real index)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_support import invoke, invoke_json, make_sample


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_sample(tmp_path_factory)


def test_facts_lists_the_current_facts_and_all_of_them_with_their_times(sample: Path):
    now = invoke_json("facts", "Staging Cluster", "--vault", sample)
    every = invoke_json("facts", "staging cluster", "--all", "--vault", sample)
    assert [(f["object"], f["status"]) for f in now["facts"]] == [
        ("eu-central-1", "current"), ("Karpenter", "current"),
    ]  # fmt: skip
    statuses = sorted(f["status"] for f in every["facts"])
    assert statuses == ["current", "current", "ended", "superseded"]
    assert all(f["asserted"]["version_id"] for f in every["facts"])
    assert list(now["facts"][0])[:3] == ["subject", "predicate", "object"]
    june = invoke_json("facts", "staging cluster", "--as-of", "2026-06-01", "--vault", sample)
    assert "eu-west-1" in [f["object"] for f in june["facts"]]
    shown = invoke("facts", "staging cluster", "--vault", sample)
    assert (
        "eu-central-1 (2026-11-01 to …)" in shown.stdout and "asserted 2026-10-20" in shown.stdout
    )


def test_timeline_marks_its_anchor_among_its_neighbours(sample: Path):
    result = invoke_json("timeline", "--query", "staging moves", "--before", "1", "--after", "1",
                         "--vault", sample)  # fmt: skip
    entries = result["entries"]
    assert len(entries) == 3 and [e["anchor"] for e in entries] == [False, True, False]
    assert entries[1]["title"] == "Staging moves to eu-central-1"
    updated = [e["updated"] for e in entries]
    assert updated == sorted(updated)
    shown = invoke("timeline", entries[1]["memory_id"], "--before", "1", "--vault", sample)
    assert "> " in shown.stdout and "Staging moves to eu-central-1" in shown.stdout


def test_timeline_wants_exactly_one_anchor_and_facts_a_real_day(sample: Path):
    assert invoke("timeline", "--vault", sample).exit_code == 2
    bad_day = invoke("facts", "staging cluster", "--as-of", "someday", "--vault", sample)
    assert bad_day.exit_code == 2 and "as_of" in bad_day.stderr
