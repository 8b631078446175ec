"""HTTP under load, briefly: tests/harness/http_load.py with a few clients, and the limit counted.

Nothing here depends on how fast the machine is: the clients make a fixed least number of
calls, and the limits are small enough that the requests every run makes exceed them.
"""

from __future__ import annotations

from pathlib import Path

import httpx2

from tests.harness import http_load

CLIENTS = 10
SECONDS = 3.0
MIN_CALLS = 3  # with seed 1, 8 of the 30 first calls are remember creates
# A burst of 12, then one request every 5 s. Ten clients send at least 20 requests unless
# one is refused before: an initialize each, and a notification after each one let through.
LIMITED_RATE = 12
# A burst of 3, then one request every 20 s: the 4th of 4 requests in a row is refused
# unless the four took 20 s.
COUNTED_LIMIT = 3


def test_below_the_rate_limit_nothing_fails(vault_path: Path):
    below = http_load.phase(vault_path, CLIENTS, SECONDS, 1_000_000, seed=1, min_calls=MIN_CALLS)

    assert below["problems"] == []
    assert set(below["statuses"]) <= {"200", "202"} and below["refused_429"] == 0
    assert below["search"]["n"] > 0 and below["remember"]["n"] > 0
    assert below["successful_calls"] >= CLIENTS * MIN_CALLS


def test_above_the_rate_limit_every_refusal_is_a_clean_429_and_the_server_serves_on(
    vault_path: Path,
):
    above = http_load.phase(vault_path, CLIENTS, SECONDS, LIMITED_RATE, seed=2)

    assert above["problems"] == []  # includes: a search is answered after the load
    assert set(above["statuses"]) <= {"200", "202", "429"}
    assert above["refused_429"] > 0
    assert above["refusals_with_retry_after"] == above["refused_429"]
    allowed = LIMITED_RATE + LIMITED_RATE / 60 * (above["seconds"] + 4)
    assert above["statuses"]["200"] + above["statuses"].get("202", 0) <= allowed + 2


def test_the_request_past_the_limit_is_refused_however_fast_the_machine(vault_path: Path):
    server = http_load.Server(vault_path, COUNTED_LIMIT)
    try:
        with httpx2.Client(timeout=60) as http:
            answers = [
                http.post(
                    server.url, json=http_load.initialize(f"count-{n}"), headers=http_load.headers()
                )
                for n in range(COUNTED_LIMIT + 1)
            ]
    finally:
        code, stderr = server.stop()

    assert [a.status_code for a in answers] == [200] * COUNTED_LIMIT + [429]
    refused = answers[-1]
    assert 1 <= int(refused.headers["retry-after"]) <= 60 / COUNTED_LIMIT
    assert refused.json()["error"]["message"] == "rate limit exceeded"
    assert code == 0 and stderr == ""
