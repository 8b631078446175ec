"""One rule for naming a version (show --version, restore): a 7+ digit sha prefix, any case."""

from __future__ import annotations

import pytest

from vault_tool.engine.history import find_version
from vault_tool.errors import InvalidInput, NotFound
from vault_tool.storage.git import Commit

MEMORY = "01KTVQQHSR2ZNMJG5YTHWPN2AS"


def commit(sha: str) -> Commit:
    return Commit(sha, "2026-01-01T00:00:00+00:00", "Ana", "Update note: x", "cli", "note/x.md")


HISTORY = [
    commit("abcdef1234" + "0" * 30),
    commit("abcdef1876" + "0" * 30),
    commit("1234567fff" + "0" * 30),
]


@pytest.mark.parametrize("given", ["1234567", "1234567FFF", " 1234567fff ", HISTORY[2].sha])
def test_a_prefix_of_seven_or_more_digits_in_any_case_names_its_version(given: str) -> None:
    assert find_version(HISTORY, MEMORY, given) is HISTORY[2]


@pytest.mark.parametrize("given", ["123456", "zzzzzzz", "7654321", ""])
def test_a_short_foreign_or_unknown_prefix_is_not_found_with_the_way_to_pick_one(
    given: str,
) -> None:
    with pytest.raises(NotFound) as refused:
        find_version(HISTORY, MEMORY, given)
    assert refused.value.field == "version"
    assert f"vault-tool history {MEMORY}" in refused.value.hint


def test_a_prefix_shared_by_two_versions_asks_for_more_digits() -> None:
    with pytest.raises(InvalidInput) as refused:
        find_version(HISTORY, MEMORY, "ABCDEF1")
    assert "names 2 versions" in refused.value.message
