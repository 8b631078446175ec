"""Stage timing: only inside a timed call, per thread, summed per name."""

from __future__ import annotations

import threading

from vault_tool.core import stages


def test_a_stage_outside_a_timed_call_records_nothing() -> None:
    with stages.stage("ranking"):
        pass
    with stages.timing() as collected:
        pass
    assert collected == {}


def test_stages_of_one_name_add_up_and_the_timing_closes() -> None:
    with stages.timing() as collected:
        for _ in range(3):
            with stages.stage("ranking"):
                pass
        with stages.stage("ledger"):
            pass
    assert set(collected) == {"ranking", "ledger"}
    assert all(seconds >= 0 for seconds in collected.values())
    with stages.stage("after"):
        pass
    assert "after" not in collected


def test_another_threads_stages_stay_out_of_this_timing() -> None:
    def elsewhere() -> None:
        with stages.stage("elsewhere"):
            pass

    with stages.timing() as collected:
        worker = threading.Thread(target=elsewhere)
        worker.start()
        worker.join()
    assert collected == {}


def test_a_timing_inside_another_restores_the_outer_one() -> None:
    with stages.timing() as outer:
        with stages.timing() as inner, stages.stage("inner"):
            pass
        with stages.stage("outer"):
            pass
    assert set(inner) == {"inner"}
    assert set(outer) == {"outer"}


def test_milliseconds_are_rounded_for_the_log() -> None:
    assert stages.as_milliseconds({"ranking": 0.00123456}) == {"ranking": 1.2}


def test_a_timed_function_is_a_stage_and_keeps_its_result_and_name() -> None:
    @stages.timed("ranking")
    def rank(n: int) -> int:
        """Doubles."""
        return 2 * n

    with stages.timing() as collected:
        assert rank(3) == 6
    assert set(collected) == {"ranking"}
    assert rank.__name__ == "rank" and rank.__doc__ == "Doubles."
