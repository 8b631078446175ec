"""Every time the tool takes in is range-checked where it is read, and every time it writes
reads back through its own parser: years are written with four digits (0999, not 999), and
a time whose offset carries it past year 1 or 9999 is refused as a bad value, never an
internal error. Real repository and index; the tools are called as the server calls them."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.cli_support import invoke
from tests.helpers import create_args
from vault_tool.core import schema
from vault_tool.core.memory import Memory, memory_from_delta, parse, render
from vault_tool.core.search_call import check_search
from vault_tool.core.times import normalize_timestamp, parse_moment, parse_time, stamp_time
from vault_tool.engine.vault import Vault
from vault_tool.server import tools

TIMESTAMP = re.compile(schema.load("memory.schema.json")["$defs"]["timestamp"]["pattern"])


def _outcome(vault: Vault, name: str, arguments: dict) -> dict:
    return tools.run_tool(vault, name, arguments, client="pytest", profile="extended").structured


def test_an_expires_at_before_year_1000_is_written_so_the_tool_reads_it_back(vault: Vault):
    made = vault.remember(create_args(expires_at="0999-12-31T23:00:00-02:00"))
    text = (vault.root / made["path"]).read_text(encoding="utf-8")
    assert "1000-01-01T01:00:00Z" in text, text
    old = vault.remember(create_args("Bob ran the deploys", expires_at="0999-12-31"))
    text = (vault.root / old["path"]).read_text(encoding="utf-8")
    assert "0999-12-31T00:00:00Z" in text, text
    assert parse(text, old["path"], strict=True).expires_at == "0999-12-31T00:00:00Z"
    vault.catch_up()
    assert vault.problems() == {}
    facts = _outcome(vault, "fact_history", {"subject": "Ana"})
    assert "error" not in facts, facts
    expired = vault.expire()
    assert expired.version_id is not None
    assert not (vault.root / old["path"]).exists() and not (vault.root / made["path"]).exists()


@pytest.mark.parametrize(
    "moment",
    ["0001-01-01T00:00-14:00", "0001-01-01T00:00:00+14:00", "9999-12-31T23:00-14:00",
     "0000-12-31", "10000-01-01"],
)  # fmt: skip
def test_a_moment_past_the_ends_of_the_calendar_is_refused_not_an_internal_error(
    vault: Vault, moment: str
):
    vault.remember(create_args())
    for name, arguments in [
        ("search", {"query": "billing", "since": moment}),
        ("search", {"query": "billing", "until": moment}),
        ("fact_history", {"subject": "Ana", "as_of": moment}),
        ("remember", create_args("Ana owns billing", expires_at=moment)),
    ]:
        answer = _outcome(vault, name, arguments)
        if "error" not in answer:
            continue  # (in range after its offset: answered)
        assert answer["error"]["code"] in ("invalid_input", "unparseable_file"), (name, answer)


def test_a_since_of_year_one_reads_everything(vault: Vault):
    made = vault.remember(create_args())
    for since in ("0001-01-01T00:00-14:00", "0001-01-01"):
        found = _outcome(vault, "search", {"query": "billing", "since": since})
        assert [h["memory_id"] for h in found["selected_hits"]] == [made["memory_id"]], found
    done = invoke("log", "--since", "0001-01-01T00:00-14:00", "--vault", vault.root)
    assert done.exit_code == 0, done.stderr


HAND_NOTE = """---
title: Hand note
entities:
  - n: Ana
    kind: person
    is: backend engineer on the platform team
facts:
  - subject: Ana
    predicate: likes
    object: tea
{line}
---
# Hand note

Written by a person.
"""


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("expires_at: 2026-02-30", "expires_at: '2026-02-30' is not a time of the calendar"),
        ("expires_at: 0001-01-01T00:00:00+14:00", "is not a time of the calendar"),
        ("created: 2026-02-30", None),  # (a person's own value: kept as written)
        ("updated: 9999-12-31T23:00:00-14:00", None),
    ],
)
def test_a_time_in_a_file_that_is_not_of_the_calendar_is_never_an_internal_error(
    vault: Vault, line: str, problem: str | None
):
    vault.remember(create_args())
    (vault.root / "hand.md").write_text(HAND_NOTE.format(line=line), encoding="utf-8")
    vault.sync_paths(["hand.md"])
    reason = vault.problems().get("hand.md", {}).get("reason")
    if problem is None:
        assert reason is None
        assert line in (vault.root / "hand.md").read_text(encoding="utf-8")
    else:
        assert problem in reason, reason
    for name, arguments in [
        ("fact_history", {"subject": "Ana"}),
        ("search", {"query": "hand note"}),
        ("session_context", {}),
    ]:
        answer = _outcome(vault, name, arguments)
        assert "error" not in answer, (name, answer)
    assert vault.expire() is not None


def test_an_imported_note_from_before_year_1000_keeps_a_date_the_tool_reads(
    vault: Vault, tmp_path: Path
):
    notes = tmp_path / "notes"
    notes.mkdir()
    note = "---\ndate: 0800-03-01\n---\n# Ancient\n\nWritten long ago.\n"
    (notes / "ancient.md").write_text(note, encoding="utf-8")
    vault.close()
    done = invoke("import", notes, "--format", "markdown", "--vault", vault.root)
    assert done.exit_code == 0, done.stdout + done.stderr
    text = (vault.root / "ancient.md").read_text(encoding="utf-8")
    assert "0800-03-01T00:00:00Z" in text, text
    parse(text, "ancient.md", strict=True)


@pytest.mark.parametrize(
    ("seconds", "written"),
    [
        (datetime(800, 3, 1, tzinfo=UTC).timestamp(), "0800-03-01T00:00:00Z"),
        (-1e15, "0001-01-01T00:00:00Z"),  # (a file system's 64-bit time, past the calendar)
        (1e15, "9999-12-31T23:59:59Z"),
        (0, "1970-01-01T00:00:00Z"),
    ],
)
def test_a_files_time_stamp_is_written_as_a_time_the_tool_reads(seconds: float, written: str):
    assert stamp_time(seconds) == written
    assert normalize_timestamp(written) == written


# --- every time the tool writes, over the whole calendar -----------------------------------

MOMENTS = st.datetimes(
    min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)
).map(lambda d: d.replace(microsecond=0))
OFFSETS = st.integers(-14 * 60, 14 * 60).map(lambda m: timezone(timedelta(minutes=m)))


@settings(max_examples=300, deadline=None)
@given(MOMENTS, OFFSETS)
@example(datetime(999, 12, 31, 23), timezone(timedelta(hours=-2)))
@example(datetime(1, 1, 1), timezone(timedelta(hours=-14)))
@example(datetime(1, 1, 1), timezone(timedelta(hours=14)))
@example(datetime(9999, 12, 31, 23), timezone(timedelta(hours=-14)))
def test_every_time_written_reads_back_through_the_tools_own_parser(moment, offset):
    text = moment.replace(tzinfo=offset).isoformat()
    try:
        written = normalize_timestamp(text)
    except ValueError as refused:
        # Only a time that leaves the calendar once in UTC is refused, and it says so.
        assert "0001-01-01" in str(refused) and "9999-12-31" in str(refused)
        with pytest.raises(ValueError):
            parse_moment(text)
        return
    assert TIMESTAMP.match(written) and written[4] == "-", written
    assert parse_time(written) == parse_time(text)
    assert parse_moment(text) == written
    check_search({"query": "x", "since": text, "until": text})
    for day in (text[:10], written[:10]):
        assert parse_moment(day) == day
    delta = {
        "memory_type": "note", "title": "T", "entities": [], "facts": [], "expires_at": text,
    }  # fmt: skip
    memory = memory_from_delta(delta, "# T\n")
    memory = Memory.from_mapping(
        memory.front_matter(), memory.body, created=written, updated=written
    )
    back = parse(render(memory), "t.md", strict=True)
    assert (back.expires_at, back.created, back.updated) == (written, written, written)
