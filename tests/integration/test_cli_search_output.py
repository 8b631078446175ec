"""What `vault-tool search` prints means something to a reader: the count says what it
counts and that more can be shown; a score appears only with the parts that make it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_support import invoke


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli-search") / "vault"
    assert invoke("init", "--sample", path).exit_code == 0
    return path


def test_the_count_says_what_it_counts_and_how_to_see_more(sample: Path):
    done = invoke("search", "billing service owner", "--vault", sample)
    assert done.exit_code == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert "memories hold words of the query; the best 5 are shown" in last
    assert "-n N shows more" in last
    assert " score " not in done.stdout  # a bare number means nothing to a reader


def test_explain_shows_the_score_and_every_part_with_the_factor(sample: Path):
    done = invoke("search", "billing service owner", "-k", "1", "--explain", "--vault", sample)
    assert done.exit_code == 0, done.stderr
    assert " score " in done.stdout
    line = next(x for x in done.stdout.splitlines() if "score = (" in x)
    assert "text " in line and "entity " in line and "x factor 1.000" in line
