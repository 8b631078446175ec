"""Every --since / --until / --as-of of the CLI reads one date grammar; search shows validity."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_support import MEMORY_FILE, invoke, invoke_json
from tests.helpers import create_args
from vault_tool.core.times import MOMENT_FORMS
from vault_tool.errors import InvalidInput

OWNERSHIP = """\
---
memory_type: fact
title: Billing service owners
entities:
  - n: Ana
    kind: person
    is: backend engineer on the payments team
  - n: Bo
    kind: person
    is: engineer who left in 2021
  - n: billing service
    kind: service
    is: the invoicing backend
facts:
  - subject: Bo
    predicate: owns
    object: billing service
    valid_from: 2019-01-01
    valid_until: 2021-06-30
  - subject: Ana
    predicate: owns
    object: billing service
    valid_from: 2021-07-01
---
# Billing service owners

Bo handed the billing service to Ana in the summer of 2021.
"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A vault with two memories written today and one logged search."""
    vault = tmp_path / "vault"
    invoke_json("init", vault)
    for name, text in (("staging.md", MEMORY_FILE), ("owners.md", OWNERSHIP)):
        (tmp_path / name).write_text(text, encoding="utf-8")
        invoke_json("remember", tmp_path / name, "--vault", vault)
    invoke_json("search", "staging", "--vault", vault)
    return vault


def titles(result: dict) -> list[str]:
    return [hit["title"] for hit in result["selected_hits"]]


@pytest.mark.parametrize("when", ["today", "yesterday", "7d", "2w", "3m"])
def test_search_since_and_until_take_the_relative_forms(root, when):
    since = invoke_json("search", "staging", "--since", when, "--vault", root)
    assert titles(since) == ["Staging needs the VPN"]
    until = invoke_json("search", "staging", "--until", "2000-01-01", "--vault", root)
    assert titles(until) == []


def test_search_until_yesterday_leaves_out_what_was_written_today(root):
    assert titles(invoke_json("search", "staging", "--until", "yesterday", "--vault", root)) == []
    today = invoke_json("search", "staging", "--until", "today", "--vault", root)
    assert titles(today) == ["Staging needs the VPN"]


def test_search_as_of_takes_the_same_forms_and_still_takes_a_commit(root):
    then = invoke_json("search", "staging", "--as-of", "today", "--vault", root)
    assert titles(then) == ["Staging needs the VPN"]
    sha = then["as_of"]["version_id"]
    by_commit = invoke_json("search", "staging", "--as-of", sha[:12], "--vault", root)
    assert by_commit["as_of"]["version_id"] == sha


@pytest.mark.parametrize("when", ["7d", "yesterday", "2026-01-01"])
def test_ledger_since_takes_the_same_forms(root, when):
    records = invoke_json("ledger", "--since", when, "--vault", root)
    assert [r["query"] for r in records] == ["staging"]
    assert invoke_json("ledger", "--since", "today", "--vault", root) != []


def test_log_since_takes_the_same_forms(root):
    everything = invoke_json("log", "--vault", root)
    assert invoke_json("log", "--since", "today", "--vault", root) == everything
    assert invoke_json("log", "--since", "7d", "--vault", root) == everything
    assert invoke_json("log", "--since", "2090-01-01", "--vault", root) == []


@pytest.mark.parametrize(
    "args",
    [
        ("ledger", "--since", "garbage"),
        ("log", "--since", "garbage"),
        ("log", "--since", "last tuesday"),
        ("search", "staging", "--since", "garbage"),
        ("search", "staging", "--until", "2026-02-30"),
        ("search", "staging", "--as-of", "garbage"),
        ("search", "staging", "--since", "7h"),
    ],
)
def test_any_other_moment_exits_2_naming_the_accepted_forms(root, args):
    done = invoke(*args, "--vault", root)
    assert done.exit_code == 2, done.stdout + done.stderr
    assert MOMENT_FORMS in " ".join(done.stderr.split())
    assert done.stdout == ""


def test_search_prints_each_fact_s_validity_and_marks_ended_facts(root):
    done = invoke("search", "billing", "owns", "--vault", root)
    assert done.exit_code == 0, done.stderr
    lines = {line.strip() for line in done.stdout.splitlines()}
    assert "· Bo owns billing service  2019-01-01 → 2021-06-30 (ended)" in lines
    assert "· Ana owns billing service  since 2021-07-01" in lines
    staging = invoke("search", "staging", "--vault", root).stdout
    assert "· staging requires VPN\n" in staging  # no dates: nothing to show


def test_json_search_keeps_the_validity_fields(root):
    result = json.loads(invoke("search", "billing", "owns", "--vault", root, "--json").stdout)
    facts = result["selected_hits"][0]["facts"]
    assert {"subject": "Bo", "predicate": "owns", "object": "billing service",
            "valid_from": "2019-01-01", "valid_until": "2021-06-30"} in facts  # fmt: skip


def test_the_library_s_as_of_search_reads_the_same_forms(vault):
    vault.remember(create_args())
    assert titles(vault.search_as_of({"query": "billing"}, "today")) == [
        "Ana owns the billing service"
    ]
    with pytest.raises(InvalidInput) as caught:
        vault.search_as_of({"query": "billing"}, "garbage")
    assert MOMENT_FORMS in caught.value.hint
