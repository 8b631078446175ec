"""Reading a file whole: a file too new to tell is not read as settled (storage/steady.py).

Real files; the clock their times are compared with is stepped by each test.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vault_tool.storage import steady

TICK_NS = 4_000_000  # a jiffy at HZ=250


@pytest.fixture
def note(tmp_path: Path) -> Path:
    path = tmp_path / "note.md"
    path.write_bytes(b"# Note\n\nWhole.\n")
    return path


def _changed(path: Path) -> int:
    stat = os.lstat(path)
    return max(stat.st_mtime_ns, stat.st_ctime_ns)


def _clock_at(monkeypatch: pytest.MonkeyPatch, ns: int) -> None:
    monkeypatch.setattr(steady, "clock", lambda: ns)


def test_a_file_changed_within_a_tick_of_the_read_is_still_written(note, monkeypatch):
    _clock_at(monkeypatch, _changed(note) + TICK_NS)
    with pytest.raises(steady.StillWritten):
        steady.read_whole(note)


def test_a_file_older_than_the_racy_window_is_read_whole_with_its_stat(note, monkeypatch):
    _clock_at(monkeypatch, _changed(note) + steady.RACY_NS + 1)
    whole = steady.read_whole(note)
    assert whole.data == b"# Note\n\nWhole.\n"
    assert whole.stat.st_size == len(whole.data)
    assert whole.stat.st_ino == os.lstat(note).st_ino


def test_an_mtime_set_back_does_not_hide_a_recent_change(note, monkeypatch):
    # (rsync -t, cp -p and `touch -d` set mtime; ctime still says when the file changed)
    os.utime(note, ns=(1_000_000_000, 1_000_000_000))
    _clock_at(monkeypatch, os.lstat(note).st_ctime_ns + TICK_NS)
    with pytest.raises(steady.StillWritten):
        steady.read_whole(note)


def test_a_file_stamped_by_a_clock_ahead_of_ours_is_read_not_waited_for(note, monkeypatch):
    # A network file system's server stamps times: waiting would never settle them.
    _clock_at(monkeypatch, _changed(note) - 5_000_000_000)
    assert steady.read_whole(note).data.startswith(b"# Note")


def test_a_missing_file_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        steady.read_whole(tmp_path / "gone.md")


@pytest.mark.timeout(10)
def test_a_fifo_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "pipe.md")  # (no writer: an open for reading would wait for ever)
    with pytest.raises(OSError, match="not a regular file"):
        steady.read_whole(tmp_path / "pipe.md")


def test_a_symlink_is_not_followed(note, tmp_path):
    (tmp_path / "link.md").symlink_to(note)
    with pytest.raises(OSError):
        steady.read_whole(tmp_path / "link.md")


def test_a_file_over_the_limit_is_refused_by_its_size_unread(note, monkeypatch):
    _clock_at(monkeypatch, _changed(note) + steady.RACY_NS + 1)
    size = note.stat().st_size
    with pytest.raises(steady.TooLarge) as refused:
        steady.read_whole(note, limit=size - 1)
    assert refused.value.size == size
    assert steady.read_whole(note, limit=size).data == note.read_bytes()
