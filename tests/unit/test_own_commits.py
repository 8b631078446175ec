"""What a process remembers of its own commits (storage/own_commits.py): versions and blobs
of a row of commits made here, kept while other threads ask with a HEAD that moved before
the commit was recorded, and dropped when a commit lands on someone else's parent."""

from __future__ import annotations

from vault_tool.storage.own_commits import OwnCommits, _blob_sha

A, B, C, OTHER = "a" * 40, "b" * 40, "c" * 40, "d" * 40


def test_a_row_of_own_commits_names_the_last_one_that_changed_each_path():
    own = OwnCommits()
    own.committed(None, A, {"x.md": _blob_sha(b"x")}, {"x.md"})
    own.committed(A, B, {"y.md": _blob_sha(b"y")}, {"y.md"})
    assert own.version_of(B, "x.md") == A
    assert own.version_of(B, "y.md") == B
    assert own.holds(B, "y.md", b"y") and not own.holds(B, "y.md", b"typed over")


def test_asking_with_a_head_not_recorded_yet_keeps_what_is_known():
    own = OwnCommits()
    own.committed(None, A, {"x.md": _blob_sha(b"x")}, {"x.md"})
    # The writer moved HEAD to B; the watcher asks before the writer records B.
    assert own.holds(B, "x.md", b"x") is False
    assert own.version_of(B, "x.md") is None
    own.committed(A, B, {"y.md": _blob_sha(b"y")}, {"y.md"})
    assert own.version_of(B, "x.md") == A  # (was None: the watcher's question cleared it)
    assert own.holds(B, "x.md", b"x")


def test_a_commit_on_another_parent_drops_what_was_known():
    own = OwnCommits()
    own.committed(None, A, {"x.md": _blob_sha(b"x")}, {"x.md"})
    own.committed(OTHER, C, {"y.md": _blob_sha(b"y")}, {"y.md"})  # a person committed OTHER
    assert own.version_of(C, "x.md") is None
    assert not own.holds(C, "x.md", b"x")
    assert own.version_of(C, "y.md") == C
