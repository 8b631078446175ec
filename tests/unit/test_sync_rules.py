"""The pure parts of sync: durations, where a merge left its markers, the status line."""

from __future__ import annotations

import pytest

from vault_tool.core.times import parse_duration
from vault_tool.engine.syncing import SyncOutcome
from vault_tool.storage.remote import _markers_in_body

MARKED = b"<<<<<<< ours\nmine\n=======\ntheirs\n>>>>>>> theirs\n"


@pytest.mark.parametrize(
    ("written", "seconds"),
    [("30s", 30), ("5m", 300), ("1h", 3600), ("0", 0), ("90", 90), (2, 2), (0.5, 0.5)],
)
def test_a_duration_is_read_as_a_person_writes_it(written, seconds):
    assert parse_duration(written) == seconds


@pytest.mark.parametrize("written", ["5 minutes", "-1", "1d", "", True, -3])
def test_anything_else_is_refused_naming_the_forms(written):
    with pytest.raises(ValueError, match="write 30s, 5m, 1h or 0"):
        parse_duration(written)


def test_markers_after_the_front_matter_are_in_the_body():
    assert _markers_in_body(b"---\ntitle: x\n---\n# X\n\n" + MARKED)


def test_markers_inside_the_front_matter_are_not():
    assert not _markers_in_body(b"---\n" + MARKED + b"---\n# X\n")


def test_a_file_without_front_matter_or_markers_is_not_flagged():
    assert not _markers_in_body(b"# X\n\n" + MARKED)
    assert not _markers_in_body(b"---\ntitle: x\n---\n# X\n\nclean\n")


def test_the_status_line_says_what_happened():
    synced = SyncOutcome("origin", "main", "synced", commits_in=3, merge="merge", pushed=True)
    assert synced.line() == "origin/main: synced, 3 commits in (merge), pushed"
    offline = SyncOutcome("origin", "main", "offline", reason="could not resolve host")
    assert offline.line().startswith("origin/main: offline (could not resolve host)")
    flagged = SyncOutcome("team", "main", "synced", pushed=True, flagged=["a.md"], attempts=2)
    assert flagged.line() == (
        "team/main: synced, pushed, 1 with conflict markers in the body (doctor), 2 attempts"
    )
