"""session_context (extended profile) and `vault-tool context`: the block a session starts
with, its parts in order (rules, pinned, current facts, recent by day), every line whole and
within the budget, superseded memories' facts and dismissed memories left out. Real
repository, real index; the tool called as the server calls it."""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator

from tests.cli_support import invoke_json
from tests.helpers import create_args
from vault_tool.engine.vault import Vault
from vault_tool.server import tools


@pytest.fixture
def made(vault: Vault) -> dict[str, dict]:
    rule = vault.remember(create_args("No deploys on Fridays", memory_type="rule"))
    pinned = vault.remember(create_args("Ana owns the billing service", pinned=True))
    old = vault.remember(create_args("Billing runs on Postgres 15"))
    new = vault.remember(create_args("Billing runs on Postgres 16", supersedes=[old["memory_id"]]))
    hidden = vault.remember(create_args("A wrong note about billing"))
    vault.set_status(hidden["memory_id"], "dismissed")
    return {"rule": rule, "pinned": pinned, "old": old, "new": new, "hidden": hidden}


def test_the_block_puts_rules_pinned_facts_and_recent_in_order(vault: Vault, made: dict):
    result = vault.views.session_context()
    block = result["block"]
    assert block.index("## Rules") < block.index("## Pinned") < block.index("## Current facts")
    assert block.index("## Current facts") < block.index("## Updated ")
    assert [r["memory_id"] for r in result["rules"]] == [made["rule"]["memory_id"]]
    assert [p["memory_id"] for p in result["pinned"]] == [made["pinned"]["memory_id"]]
    recent = [m["memory_id"] for day in result["recent"] for m in day["memories"]]
    assert made["hidden"]["memory_id"] not in recent and "A wrong note" not in block
    fact_ids = {f["memory_id"] for f in result["facts"]}
    assert made["old"]["memory_id"] not in fact_ids  # superseded: its facts are replaced
    assert result["chars"] == len(block) and result["truncated"] is False
    assert result["tokens_estimate"] == -(-len(block) // 4)


def test_a_small_budget_keeps_whole_lines_and_says_what_it_left_out(vault: Vault, made: dict):
    result = vault.views.session_context(max_chars=200)
    assert len(result["block"]) <= 200 and result["truncated"] is True
    assert result["block"].startswith("## Rules\n- No deploys on Fridays")
    assert sum(result["left_out"].values()) > 0
    for line in result["block"].splitlines():
        assert line.startswith(("## ", "- "))


def test_the_tool_and_the_cli_give_the_same_block(vault: Vault, made: dict):
    validator = Draft202012Validator(tools.spec("session_context", "extended").output_schema)
    outcome = tools.run_tool(vault, "session_context", {"max_chars": 500}, client="t",
                             profile="extended")  # fmt: skip
    assert not outcome.is_error, outcome.text
    validator.validate(outcome.structured)
    assert outcome.structured["block"] in outcome.text and "<<< BEGIN context" in outcome.text
    refused = tools.run_tool(vault, "session_context", {"max_chars": 10}, client="t",
                             profile="extended")  # fmt: skip
    assert refused.is_error and refused.structured["error"]["field"] == "max_chars"
    printed = invoke_json("context", "--max-chars", "500", "--vault", vault.root)
    assert printed["block"] == outcome.structured["block"]


def test_a_projects_rules_are_kept_before_the_cut(vault: Vault, monkeypatch: pytest.MonkeyPatch):
    from vault_tool.engine import session

    monkeypatch.setattr(session, "PER_PART", 2)  # (as 50 rules of other projects would)
    mine = vault.rules.add("Ship shop on Mondays", scope="project", scope_name="shop", client="t")
    for day in ("Tuesdays", "Fridays"):
        vault.rules.add(f"Ship blog on {day}", scope="project", scope_name="blog", client="t")
    result = vault.views.session_context(project="shop")
    assert [r["memory_id"] for r in result["rules"]] == [mine["id"]]
