"""The sample vault agrees with itself at every moment of its history: no memory says it was
updated after the commit that wrote it, so `search --as-of` never shows a later date."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import git
from vault_tool.core.memory import parse
from vault_tool.core.times import parse_time
from vault_tool.engine.vault import Vault
from vault_tool.ops.sample import create_sample_vault


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sample") / "vault"
    create_sample_vault(root)
    return root


def test_no_memory_is_dated_after_the_commit_that_wrote_it(sample: Path):
    later = []
    for line in git(sample, "ls-files", "*.md").splitlines():
        if "/" not in line:
            continue  # (the readme)
        memory = parse((sample / line).read_text(encoding="utf-8"), line)
        written = git(sample, "log", "-1", "--format=%cI", "--", line)
        if parse_time(memory.updated) > parse_time(written):
            later.append(f"{line}: updated {memory.updated}, committed {written}")
    assert later == []


def test_search_as_of_a_past_day_shows_no_later_update(sample: Path):
    with Vault.open(sample, client="pytest") as vault:
        found = vault.search_as_of({"query": "staging region"}, "2026-07-01")
    hits = found["selected_hits"]
    assert "Staging runs in eu-west-1" in [h["title"] for h in hits]
    assert all(h["updated"][:10] <= "2026-07-01" for h in hits)
