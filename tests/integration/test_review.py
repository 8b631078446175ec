"""History review and curation: blame, as-of search, feedback, expiry, dismissal, log filters."""

from __future__ import annotations

import pytest

from tests.cli_support import invoke
from tests.helpers import create_args, delta, git
from vault_tool.engine.vault import Vault
from vault_tool.errors import InvalidInput, NotFound
from vault_tool.ops.sample import create_sample_vault


def update(vault, made, title, facts, entities=None, client="pytest"):
    semantic = delta(title, facts=facts)
    if entities:
        semantic["entities"] = entities
    return vault.remember(
        {
            "mode": "update",
            "memory_id": made["memory_id"],
            "expected_version_id": made["version_id"],
            "content_md": f"# {title}\n\nUpdated.\n",
            "semantic_delta": semantic,
        },
        client=client,
    )


OWNS = {"subject": "Ana", "predicate": "owns", "object": "billing service"}
LEADS = {"subject": "Ana", "predicate": "leads", "object": "billing service"}


def test_blame_names_the_commit_and_client_that_asserted_each_fact(vault):
    made = vault.remember(create_args("Ana owns billing"), client="agent-one")
    later = update(vault, made, "Ana owns billing", [OWNS, LEADS], client="agent-two")
    lines = {line["predicate"]: line for line in vault.blame(made["memory_id"])}
    assert lines["owns"]["version_id"] == made["version_id"]
    assert lines["owns"]["client"] == "agent-one"
    assert lines["leads"]["version_id"] == later["version_id"]
    assert lines["leads"]["client"] == "agent-two"


def test_as_of_search_finds_a_fact_that_was_later_changed(vault):
    made = vault.remember(create_args("Who owns billing", body="Ownership of billing."))
    update(vault, made, "Who owns billing", [LEADS])
    then = vault.search_as_of({"query": "billing ownership"}, made["version_id"])
    assert then["as_of"]["version_id"] == made["version_id"]
    assert [f["predicate"] for f in then["selected_hits"][0]["facts"]] == ["owns"]
    now = vault.search({"query": "billing ownership"})
    assert [f["predicate"] for f in now["selected_hits"][0]["facts"]] == ["leads"]


def test_as_of_search_combines_record_time_and_valid_time(tmp_path):
    root = tmp_path / "sample"
    create_sample_vault(root)
    from vault_tool.engine.vault import Vault

    with Vault.open(root) as vault:
        summer = vault.search_as_of({"query": "staging region"}, "2026-08-01")
        assert summer["selected_hits"][0]["title"] == "Staging runs in eu-west-1"
        titles = [h["title"] for h in summer["selected_hits"]]
        assert "Staging moves to eu-central-1" not in titles  # not yet written
        october = vault.search_as_of({"query": "staging moves region"}, "2026-10-25")
        moved = next(h for h in october["selected_hits"] if h["title"].startswith("Staging moves"))
        assert [f["object"] for f in moved["facts"]] == ["eu-west-1"]  # eu-central-1 from Nov
        december = vault.search_as_of({"query": "staging moves region"}, "2026-12-01")
        moved = next(h for h in december["selected_hits"] if h["title"].startswith("Staging moves"))
        assert [f["object"] for f in moved["facts"]] == ["eu-central-1"]


def test_as_of_before_the_first_commit_is_refused(vault):
    with pytest.raises(NotFound):
        vault.search_as_of({"query": "anything"}, "1999-01-01")
    with pytest.raises(InvalidInput):
        vault.search_as_of({"query": "anything"}, "not a date")


def test_feedback_changes_ranking_and_explain_accounts_for_the_whole_score(vault):
    first = vault.remember(create_args("Wombat burrow notes", body="Wombats dig burrows."))
    second = vault.remember(create_args("Wombat burrow facts", body="Wombats dig burrows."))
    before = vault.search({"query": "wombat burrows"}, explain=True)["selected_hits"]
    loser = before[1]["memory_id"]
    handle = next(vault.ledger_records("search"))["id"]
    vault.feedback(handle, helpful=[loser], unhelpful=[])
    after = vault.search({"query": "wombat burrows"}, explain=True)["selected_hits"]
    assert after[0]["memory_id"] == loser
    assert {first["memory_id"], second["memory_id"]} == {h["memory_id"] for h in after}
    for hit in after:
        parts = hit["score_parts"]
        summed = parts.get("text", 0) + parts.get("entity", 0) + parts.get("feedback", 0)
        assert hit["score"] == pytest.approx(summed * parts.get("factor", 1.0), abs=1e-3)
    assert after[0]["score_parts"]["feedback"] > 0


def test_feedback_is_refused_for_unknown_handles_and_ids_not_returned(vault):
    made = vault.remember(create_args("Wombat burrow notes"))
    vault.search({"query": "wombat"})
    handle = next(vault.ledger_records("search"))["id"]
    with pytest.raises(NotFound):
        vault.feedback("01ARZ3NDEKTSV4RRFFQ69G5FAV", [made["memory_id"]], [])
    with pytest.raises(InvalidInput):
        vault.feedback(handle, ["01ARZ3NDEKTSV4RRFFQ69G5FAV"], [])
    with pytest.raises(InvalidInput):
        vault.feedback(handle, [made["memory_id"]], [made["memory_id"]])


def test_expire_deletes_expired_memories_in_one_commit(vault, vault_path):
    old = vault.remember(create_args("Old freeze", expires_at="2020-01-01"))
    kept = vault.remember(create_args("Current rule"))
    head = git(vault_path, "rev-parse", "HEAD")
    dry = vault.expire(dry_run=True)
    assert dry.paths == [old["path"]] and git(vault_path, "rev-parse", "HEAD") == head
    done = vault.expire()
    assert done.paths == [old["path"]]
    assert git(vault_path, "log", "-1", "--format=%s") == "Expire 1 memory"
    assert not (vault_path / old["path"]).exists()
    assert vault.read(kept["memory_id"])
    assert vault.expire().version_id is None  # nothing left to expire: no commit


def test_dismiss_hides_and_undismiss_restores_with_one_commit_each(vault, vault_path):
    made = vault.remember(create_args("Wombat burrow notes"))
    vault.set_status(made["memory_id"], "dismissed")
    assert git(vault_path, "log", "-1", "--format=%s") == "Dismiss decision: Wombat burrow notes"
    assert vault.search({"query": "wombat"})["selected_hits"] == []
    vault.set_status(made["memory_id"], "active")
    assert git(vault_path, "log", "-1", "--format=%s") == "Undismiss decision: Wombat burrow notes"
    assert [h["memory_id"] for h in vault.search({"query": "wombat"})["selected_hits"]] == [
        made["memory_id"]
    ]


def test_a_dismissal_keeps_its_reason_in_the_commit_secrets_redacted(vault_path):
    with Vault.open(vault_path) as vault:
        made = vault.remember(create_args("Wombat burrow notes"))
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    done = invoke(
        "dismiss", made["memory_id"], "--reason", f"superseded; token {secret}",
        "--vault", str(vault_path),
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    body = git(vault_path, "log", "-1", "--format=%b")
    assert body.startswith("Reason: superseded; token [REDACTED:")
    assert secret not in git(vault_path, "log", "-p", "-1")


def test_log_filters_by_memory_type_and_client(vault):
    vault.remember(create_args("A decision"), client="agent-one")
    vault.remember(create_args("A gotcha", memory_type="gotcha"), client="agent-two")
    gotchas = vault.log(memory_type="gotcha")
    assert [c["subject"] for c in gotchas] == ["Create gotcha: A gotcha"]
    mine = vault.log(client="agent-one", memory_type="decision")
    assert [c["subject"] for c in mine] == ["Create decision: A decision"]
    assert vault.log(client="agent-one", memory_type="gotcha") == []


def test_a_secret_in_a_client_name_never_reaches_history(vault, vault_path):
    token = "ghp_" + "a1B2" * 9
    vault.remember(create_args("Client names are checked"), client=f"agent {token}")
    assert token not in git(vault_path, "log", "-p", "--all")
    assert "REDACTED" in git(vault_path, "log", "-1", "--format=%B")


def test_show_at_a_version_gives_every_field_of_that_version(vault):
    made = vault.remember(create_args("Ana owns billing"))
    update(vault, made, "Ana leads billing", [LEADS])

    then = vault.show(made["memory_id"], version=made["version_id"][:8])
    now = vault.show(made["memory_id"])

    assert then["version_id"] == made["version_id"]
    assert then["title"] == "Ana owns billing" and now["title"] == "Ana leads billing"
    assert "# Ana owns billing" in then["file"] and then["content_md"].startswith("# Ana owns")
    assert then["semantic_delta"]["title"] == "Ana owns billing"
    assert then["semantic_delta"]["facts"] != now["semantic_delta"]["facts"]
