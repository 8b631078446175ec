"""The checks that need the vault (keys, supersedes) list every problem of a call at once."""

from __future__ import annotations

import pytest

from tests.helpers import create_args, git
from vault_tool.engine.vault import Vault
from vault_tool.errors import InvalidInput

UNKNOWN_ULID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"


def item(title: str, **extra: object) -> dict:
    args = create_args(title, **extra)
    return {"content_md": args["content_md"], "semantic_delta": args["semantic_delta"]}


def fields(refused: InvalidInput) -> list[str]:
    return [p["field"] for p in refused.to_dict()["error"]["problems"]]


def test_every_item_naming_what_the_vault_does_not_hold_is_listed(vault: Vault, vault_path) -> None:
    vault.remember(create_args("Staging region", key="staging.region"))
    head = git(vault_path, "rev-parse", "HEAD")
    items = [
        item("One", supersedes=[UNKNOWN_ULID]),
        item("Two"),
        item("Three", key="staging.region"),
        item("Four", key="deploy.window"),
        item("Five", key="deploy.window"),
    ]
    with pytest.raises(InvalidInput) as caught:
        vault.remember({"mode": "create", "items": items})
    assert fields(caught.value) == [
        "items[0].semantic_delta.supersedes[0]",
        "items[2].semantic_delta.key",
        "items[4].semantic_delta.key",
    ]
    assert "items[3]" in caught.value.to_dict()["error"]["problems"][2]["message"]
    assert git(vault_path, "rev-parse", "HEAD") == head  # all or nothing


def test_an_update_lists_its_key_and_supersedes_problems_together(vault: Vault) -> None:
    vault.remember(create_args("Staging region", key="staging.region"))
    made = vault.remember(create_args("Deploy window"))
    update = {
        **create_args("Deploy window", key="staging.region", supersedes=[UNKNOWN_ULID]),
        "mode": "update",
        "memory_id": made["memory_id"],
        "expected_version_id": made["version_id"],
    }
    with pytest.raises(InvalidInput) as caught:
        vault.remember(update)
    assert fields(caught.value) == ["semantic_delta.key", "semantic_delta.supersedes[0]"]
