"""HTTP under load, briefly: tests/harness/http_load.py with a few clients, and the limit counted.

Nothing here depends on how fast the machine is. Below the limit each client makes a fixed
number of calls whatever the clock says. Above it the clients go on until the server has
refused a fixed number of requests (a bound, not a speed, on how long that may take); the
checks are on counts that hold at any speed: the whole burst is let through before any
refusal, every refusal is a clean 429, and no more is let through than the bucket refilled
in the time the run took, however long that was.
"""

from __future__ import annotations

from pathlib import Path

from tests.harness import http_load

CLIENTS = 10
MIN_CALLS = 3  # with seed 1, 8 of the 30 calls are remember creates
# A burst of 12, then one request every 5 s. Ten clients send 20 requests before they
# make any call (an initialize each, and a notification after each one let through).
LIMITED_RATE = 12
REFUSALS = 5
DEADLINE = 300.0  # a bound on how long the clients may take to be refused REFUSALS times
# A burst of 3, then one request every 20 s: requests in a row are let through until the
# burst is spent, then refused (unless one took 20 s: then one more is let through).
COUNTED_LIMIT = 3
MAX_IN_A_ROW = 30


def test_below_the_rate_limit_nothing_fails(vault_path: Path):
    below = http_load.phase(vault_path, CLIENTS, 0, 1_000_000, seed=1, min_calls=MIN_CALLS)

    assert below["problems"] == []
    assert set(below["statuses"]) <= {"200", "202"} and below["refused_429"] == 0
    assert below["search"]["n"] > 0 and below["remember"]["n"] > 0
    assert below["successful_calls"] == CLIENTS * MIN_CALLS


def test_above_the_rate_limit_every_refusal_is_a_clean_429_and_the_server_serves_on(
    vault_path: Path,
):
    above = http_load.phase(
        vault_path, CLIENTS, DEADLINE, LIMITED_RATE, seed=2, until_refused=REFUSALS
    )

    assert above["problems"] == []  # includes: a search is answered after the load
    assert set(above["statuses"]) <= {"200", "202", "429"}
    assert above["refused_429"] >= REFUSALS, above  # reached before the deadline
    assert above["refusals_with_retry_after"] == above["refused_429"]
    let_through = above["statuses"].get("200", 0) + above["statuses"].get("202", 0)
    assert let_through >= LIMITED_RATE  # the bucket starts full: no refusal before it is spent
    refilled = LIMITED_RATE / 60 * (above["seconds"] + 1)
    assert let_through <= LIMITED_RATE + refilled + 1, above


def test_the_requests_past_the_burst_are_refused_however_fast_the_machine(vault_path: Path):
    server = http_load.Server(vault_path, COUNTED_LIMIT)
    answers = []
    try:
        with http_load.http_client(asynchronous=False) as http:
            while len(answers) < MAX_IN_A_ROW and 429 not in [a.status_code for a in answers]:
                answers.append(
                    http.post(
                        server.url,
                        json=http_load.initialize(f"count-{len(answers)}"),
                        headers=http_load.headers(),
                    )
                )
    finally:
        code, stderr = server.stop()

    statuses = [a.status_code for a in answers]
    # Each of the burst is let through, then only refusals, whenever each request came.
    assert statuses[:COUNTED_LIMIT] == [200] * COUNTED_LIMIT, statuses
    assert statuses[-1] == 429 and set(statuses[:-1]) == {200}, statuses
    refused = answers[-1]
    assert 1 <= int(refused.headers["retry-after"]) <= 60 / COUNTED_LIMIT
    assert refused.json()["error"]["message"] == "rate limit exceeded"
    assert code == 0 and stderr == ""
