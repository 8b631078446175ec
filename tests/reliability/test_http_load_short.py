"""HTTP under load, briefly: bench/http_load.py with a few clients for a few seconds."""

from __future__ import annotations

from pathlib import Path

from bench import http_load

CLIENTS = 10
SECONDS = 3.0
LIMITED_RATE = 120  # a minute: a burst of 120, then 2 a second


def test_below_the_rate_limit_nothing_fails_and_above_it_every_refusal_is_a_clean_429(
    vault_path: Path,
):
    below = http_load.phase(vault_path, CLIENTS, SECONDS, 1_000_000, seed=1)
    assert below["problems"] == []
    assert set(below["statuses"]) <= {"200", "202"} and below["refused_429"] == 0
    assert below["search"]["n"] > 0 and below["remember"]["n"] > 0

    above = http_load.phase(vault_path, CLIENTS, SECONDS, LIMITED_RATE, seed=2)
    assert above["problems"] == []
    assert set(above["statuses"]) <= {"200", "202", "429"}
    assert above["refused_429"] > 0
    assert above["refusals_with_retry_after"] == above["refused_429"]
    allowed = LIMITED_RATE + LIMITED_RATE / 60 * (above["seconds"] + 4)
    assert above["statuses"]["200"] + above["statuses"].get("202", 0) <= allowed + 2
