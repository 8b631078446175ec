"""The watcher's debounce on a clock the test steps: no real waiting, no watchdog.

Steps are binary fractions of a second, so the clock's sums are exact.
"""

from __future__ import annotations

from vault_tool.core.debounce import MAX_DELAY_SECONDS, Debouncer

QUIET = 0.5


class Clock:
    """A monotonic clock that moves only when the test says so."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def step(self, seconds: float) -> None:
        self.now += seconds


def test_a_file_is_handed_out_only_once_it_has_been_quiet_for_the_period():
    clock = Clock()
    pending = Debouncer(QUIET, clock)
    pending.note("notes/a.md")

    clock.step(QUIET - 0.125)
    assert pending.due() == []
    clock.step(0.125)
    assert pending.due() == ["notes/a.md"]
    assert pending.due() == [] and len(pending) == 0  # handed out once


def test_a_new_event_restarts_the_quiet_period():
    clock = Clock()
    pending = Debouncer(QUIET, clock)
    pending.note("notes/a.md")
    clock.step(0.375)
    pending.note("notes/a.md")  # the editor saved again

    clock.step(0.375)
    assert pending.due() == []
    clock.step(0.125)
    assert pending.due() == ["notes/a.md"]


def test_files_changed_in_one_burst_are_handed_out_together():
    clock = Clock()
    pending = Debouncer(QUIET, clock)
    pending.note("notes/a.md")
    clock.step(0.25)
    pending.note("notes/b.md")  # (a rename rewrote the links of both, a `sed` edited both)

    clock.step(0.25)
    assert pending.due() == []  # a is quiet, the folder is not
    assert len(pending) == 2
    clock.step(0.25)
    assert sorted(pending.due()) == ["notes/a.md", "notes/b.md"]
    assert len(pending) == 0


def test_a_file_that_never_goes_quiet_lets_the_others_out_after_the_longest_delay():
    clock = Clock()
    pending = Debouncer(QUIET, clock)
    pending.note("logs/appended.md")
    clock.step(0.25)
    pending.note("notes/a.md")
    for _ in range(int(MAX_DELAY_SECONDS / 0.25) - 2):
        clock.step(0.25)
        pending.note("logs/appended.md")
        assert pending.due() == []
    clock.step(0.25)
    assert sorted(pending.due()) == ["logs/appended.md", "notes/a.md"]


def test_a_file_that_never_goes_quiet_is_still_handed_out_after_the_longest_delay():
    clock = Clock()
    pending = Debouncer(QUIET, clock)
    pending.note("logs/appended.md")
    for _ in range(int(MAX_DELAY_SECONDS / 0.25) - 1):
        clock.step(0.25)
        pending.note("logs/appended.md")  # an event every 0.25 s: never quiet for QUIET
        assert pending.due() == []
    clock.step(0.25)
    assert pending.due() == ["logs/appended.md"]


def test_a_file_that_could_not_be_taken_in_waits_a_quiet_period_again():
    clock = Clock()
    pending = Debouncer(QUIET, clock)
    pending.note("notes/a.md")
    clock.step(QUIET)
    due = pending.due()
    assert due == ["notes/a.md"]

    pending.again(due)  # the vault was busy
    assert pending.due() == []
    clock.step(QUIET)
    assert pending.due() == ["notes/a.md"]


def test_a_file_given_back_keeps_the_newer_event_it_had_meanwhile():
    clock = Clock()
    pending = Debouncer(QUIET, clock)
    pending.note("notes/a.md")
    clock.step(QUIET)
    due = pending.due()
    clock.step(0.125)
    pending.note("notes/a.md")  # saved again while it was being taken in
    clock.step(0.125)
    pending.again(due)

    clock.step(QUIET - 0.25)
    assert pending.due() == []
    clock.step(0.125)
    assert pending.due() == ["notes/a.md"]
