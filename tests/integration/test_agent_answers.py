"""What an agent is told after a write makes sense for that write (server/render.py and the
writer's refusals)."""

from __future__ import annotations

import pytest

from tests.helpers import create_args
from vault_tool.engine.vault import Vault
from vault_tool.errors import VersionConflict
from vault_tool.server import render


def test_a_delete_result_does_not_offer_its_version_for_a_later_change(vault: Vault):
    made = vault.remember(create_args("Ana owns the billing service"))
    gone = vault.remember(
        {
            "mode": "delete",
            "memory_id": made["memory_id"],
            "expected_version_id": made["version_id"],
        }
    )
    text = render.remember_text(gone)
    assert "expected_version_id" not in text
    assert f"vault-tool restore {made['memory_id']}" in text


def test_a_made_up_version_is_called_no_version_not_an_older_one(vault: Vault):
    made = vault.remember(create_args("Ana owns the billing service"))
    with pytest.raises(VersionConflict) as refused:
        vault.remember(
            {"mode": "delete", "memory_id": made["memory_id"], "expected_version_id": "0" * 40}
        )
    assert "has no version 0000000000" in refused.value.message
    assert "changed since" not in refused.value.message
    assert made["version_id"] in refused.value.message  # and what the current one is


def test_a_create_whose_h1_is_not_its_title_is_made_and_warned_of(vault: Vault):
    args = create_args("Ana owns the billing service")
    args["content_md"] = "# Ana runs payments\n\nShe took it over in March.\n"
    made = vault.remember(args)
    assert made["status"] == "created"
    [warning] = made["warnings"]
    assert "'Ana runs payments'" in warning and "semantic_delta.title" in warning
    assert "warning: content_md's H1" in render.remember_text(made)


def test_a_create_that_expires_in_the_past_is_made_and_warned_of(vault: Vault):
    args = create_args("Ana owns the billing service")
    args["semantic_delta"]["expires_at"] = "2020-01-01T00:00:00Z"
    made = vault.remember(args)
    assert made["status"] == "created"
    assert any("already past" in w for w in made["warnings"])


def test_a_plain_create_has_no_warnings(vault: Vault):
    assert "warnings" not in vault.remember(create_args("Ana owns the billing service"))
