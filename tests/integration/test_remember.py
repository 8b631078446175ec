"""Vault.remember against a real git repository and a real Whoosh index.

Fake secrets are assembled from pieces at runtime so that this file holds no literal a secret
scanner would flag.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import create_args, delta, git, snapshot
from vault_tool.core import schema
from vault_tool.core.memory import parse
from vault_tool.core.redact import find_secret_kinds
from vault_tool.engine.vault import Vault
from vault_tool.errors import (
    InvalidInput,
    LimitExceeded,
    NotFound,
    VaultError,
    VersionConflict,
)

SINGLE_KEYS = {"mode", "status", "memory_id", "version_id", "path", "redactions"}
SHA_RE = re.compile(r"^[0-9a-f]{40}$")
ULID_RE = re.compile(r"^[0-7][0-9A-HJKMNP-TV-Z]{25}$")
UNKNOWN_ULID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"


def commit_count(path: Path) -> int:
    return int(git(path, "rev-list", "--count", "HEAD"))


def head(path: Path) -> str:
    return git(path, "rev-parse", "HEAD")


def last_message(path: Path) -> str:
    return git(path, "log", "-1", "--format=%B")


def update_args(result: dict, title: str = "Ana owns the billing service", body: str = "") -> dict:
    body = body or "She took it over in March."
    return {
        "mode": "update",
        "memory_id": result["memory_id"],
        "expected_version_id": result["version_id"],
        "content_md": f"# {title}\n\n{body}\n",
        "semantic_delta": delta(title),
    }


def delete_args(result: dict) -> dict:
    return {
        "mode": "delete",
        "memory_id": result["memory_id"],
        "expected_version_id": result["version_id"],
    }


def item(title: str, body: str = "Body.") -> dict:
    args = create_args(title=title, body=body)
    return {"content_md": args["content_md"], "semantic_delta": args["semantic_delta"]}


def assert_single_shape(result: dict, mode: str, status: str) -> None:
    assert set(result) >= SINGLE_KEYS
    assert result["mode"] == mode
    assert result["status"] == status
    assert isinstance(result["memory_id"], str) and result["memory_id"]
    assert SHA_RE.match(result["version_id"])
    assert isinstance(result["path"], str) and not result["path"].startswith("/")
    assert "\\" not in result["path"]
    assert isinstance(result["redactions"], list)
    assert schema.errors_of(result, "remember.output.schema.json") == []


@pytest.fixture
def existing(vault: Vault) -> dict:
    """One memory created through the engine."""
    return vault.remember(create_args())


# --- create --------------------------------------------------------------------------------


def test_create_makes_exactly_one_commit_whose_sha_is_the_version(vault: Vault, vault_path: Path):
    before = commit_count(vault_path)
    result = vault.remember(create_args())

    assert_single_shape(result, "create", "created")
    assert commit_count(vault_path) == before + 1
    assert result["version_id"] == head(vault_path)
    assert ULID_RE.match(result["memory_id"])
    assert git(vault_path, "status", "--porcelain") == ""
    assert git(vault_path, "log", "-1", "--format=%s") == (
        "Create decision: Ana owns the billing service"
    )
    message = last_message(vault_path)
    assert f"Memory-Id: {result['memory_id']}" in message.splitlines()
    assert "Client: pytest" in message.splitlines()
    assert git(vault_path, "show", "--name-only", "--format=", "HEAD") == result["path"]


def test_create_writes_the_file_under_type_and_month_with_a_slug(vault: Vault, vault_path: Path):
    result = vault.remember(create_args())
    memory = parse((vault_path / result["path"]).read_text(encoding="utf-8"), result["path"])
    assert memory.created and memory.created == memory.updated
    assert result["path"] == f"decision/{memory.created[:7]}/ana-owns-the-billing-service.md"
    assert re.fullmatch(r"decision/\d{4}-\d{2}/ana-owns-the-billing-service\.md", result["path"])
    assert memory.id == result["memory_id"]
    assert memory.source == "pytest"
    assert memory.title == "Ana owns the billing service"
    assert memory.body == "# Ana owns the billing service\n\nShe took it over.\n"
    assert [f.to_dict() for f in memory.facts] == delta()["facts"]


def test_create_stores_exactly_what_was_stated(vault: Vault, vault_path: Path):
    stated = delta(
        key="billing.owner",
        pinned=True,
        expires_at="2030-01-01",
        tags=["billing", "ownership"],
    )
    stated["facts"][0].update(valid_from="2026-01-01", valid_until="2026-12-31")
    result = vault.remember(
        {"mode": "create", "content_md": "# Ana owns billing\n\nYes.\n", "semantic_delta": stated}
    )
    read = vault.read(result["memory_id"])
    assert read["semantic_delta"]["entities"] == stated["entities"]
    assert read["semantic_delta"]["facts"] == stated["facts"]
    assert read["semantic_delta"]["tags"] == ["billing", "ownership"]
    assert read["semantic_delta"]["key"] == "billing.owner"
    assert read["semantic_delta"]["pinned"] is True
    assert read["semantic_delta"]["expires_at"] == "2030-01-01T00:00:00Z"
    assert read["version_id"] == result["version_id"]
    assert read["path"] == result["path"]


def test_second_memory_with_same_title_but_different_content_gets_a_suffix(vault: Vault):
    first = vault.remember(create_args(body="First."))
    second = vault.remember(create_args(body="Second, different."))
    assert second["status"] == "created"
    assert second["memory_id"] != first["memory_id"]
    folder = first["path"].rsplit("/", 1)[0]
    assert second["path"] == (
        f"{folder}/ana-owns-the-billing-service-{second['memory_id'][-6:].lower()}.md"
    )


def test_creating_the_same_memory_twice_returns_the_existing_one_without_a_commit(
    vault: Vault, vault_path: Path
):
    first = vault.remember(create_args())
    before = snapshot(vault_path)
    again = vault.remember(create_args())
    assert_single_shape(again, "create", "unchanged")
    assert again["memory_id"] == first["memory_id"]
    assert again["version_id"] == first["version_id"]
    assert again["path"] == first["path"]
    assert snapshot(vault_path) == before


def test_create_from_another_process_view_is_idempotent_too(vault_path: Path):
    with Vault.open(vault_path, client="one") as one:
        first = one.remember(create_args())
    with Vault.open(vault_path, client="two") as two:
        again = two.remember(create_args())
    assert again["status"] == "unchanged"
    assert again["memory_id"] == first["memory_id"]
    assert commit_count(vault_path) == 2


# --- batch ---------------------------------------------------------------------------------


def test_batch_of_three_is_one_commit_with_every_id(vault: Vault, vault_path: Path):
    before = commit_count(vault_path)
    result = vault.remember(
        {"mode": "create", "items": [item("First one"), item("Second one"), item("Third one")]}
    )
    assert set(result) >= {"mode", "version_id", "results"}
    assert result["mode"] == "create"
    assert result["version_id"] == head(vault_path)
    assert commit_count(vault_path) == before + 1
    assert schema.errors_of(result, "remember.output.schema.json") == []
    assert [r["path"].rsplit("/", 1)[1] for r in result["results"]] == [
        "first-one.md",
        "second-one.md",
        "third-one.md",
    ]
    for single in result["results"]:
        assert_single_shape(single, "create", "created")
        assert single["version_id"] == result["version_id"]
    assert git(vault_path, "log", "-1", "--format=%s") == "Create 3 memories"
    lines = last_message(vault_path).splitlines()
    for single in result["results"]:
        assert f"Memory-Id: {single['memory_id']}" in lines
    assert "Client: pytest" in lines
    changed = git(vault_path, "show", "--name-only", "--format=", "HEAD").splitlines()
    assert sorted(changed) == sorted(r["path"] for r in result["results"])
    assert git(vault_path, "status", "--porcelain") == ""


def test_batch_item_that_already_exists_is_unchanged_and_the_rest_are_created(
    vault: Vault, vault_path: Path
):
    first = vault.remember(create_args(title="Existing one", body="Body."))
    result = vault.remember({"mode": "create", "items": [item("New one"), item("Existing one")]})
    statuses = [r["status"] for r in result["results"]]
    assert statuses == ["created", "unchanged"]
    assert result["results"][1]["memory_id"] == first["memory_id"]
    assert result["results"][1]["version_id"] == first["version_id"]
    assert git(vault_path, "log", "-1", "--format=%s") == "Create decision: New one"


def test_batch_of_identical_items_creates_one_memory(vault: Vault, vault_path: Path):
    result = vault.remember({"mode": "create", "items": [item("Twin"), item("Twin")]})
    first, second = result["results"]
    assert first["status"] == "created"
    assert second["status"] == "unchanged"
    assert second["memory_id"] == first["memory_id"]
    assert commit_count(vault_path) == 2


def test_batch_of_items_that_all_exist_makes_no_commit(vault: Vault, vault_path: Path):
    vault.remember({"mode": "create", "items": [item("A one"), item("B one")]})
    before = snapshot(vault_path)
    result = vault.remember({"mode": "create", "items": [item("A one"), item("B one")]})
    assert [r["status"] for r in result["results"]] == ["unchanged", "unchanged"]
    assert snapshot(vault_path) == before


# --- update and delete ---------------------------------------------------------------------


def test_update_makes_one_commit_and_keeps_id_path_and_created(
    vault: Vault, vault_path: Path, existing: dict
):
    before = commit_count(vault_path)
    created = parse((vault_path / existing["path"]).read_text(), existing["path"]).created
    result = vault.remember(update_args(existing, body="New owner details."))

    assert_single_shape(result, "update", "updated")
    assert commit_count(vault_path) == before + 1
    assert result["version_id"] == head(vault_path)
    assert result["version_id"] != existing["version_id"]
    assert result["memory_id"] == existing["memory_id"]
    assert result["path"] == existing["path"]
    assert git(vault_path, "log", "-1", "--format=%s") == (
        "Update decision: Ana owns the billing service"
    )
    lines = last_message(vault_path).splitlines()
    assert f"Memory-Id: {existing['memory_id']}" in lines
    assert "Client: pytest" in lines
    memory = parse((vault_path / result["path"]).read_text(), result["path"])
    assert memory.id == existing["memory_id"]
    assert memory.created == created
    assert memory.updated is not None and memory.updated >= created
    assert "New owner details." in memory.body
    assert git(vault_path, "status", "--porcelain") == ""
    assert vault.read(existing["memory_id"])["version_id"] == result["version_id"]


def test_update_can_change_the_title_and_type_without_moving_the_file(
    vault: Vault, vault_path: Path, existing: dict
):
    args = update_args(existing, title="Ana hands billing to Bo")
    args["semantic_delta"]["memory_type"] = "fact"
    result = vault.remember(args)
    assert result["path"] == existing["path"]
    assert git(vault_path, "log", "-1", "--format=%s") == (
        "Update fact: Ana hands billing to Bo (was Ana owns the billing service)"
    )
    assert vault.read(existing["memory_id"])["title"] == "Ana hands billing to Bo"


def test_update_with_identical_content_is_unchanged_and_makes_no_commit(
    vault: Vault, vault_path: Path, existing: dict
):
    before = snapshot(vault_path)
    args = update_args(existing, body="She took it over.")
    result = vault.remember(args)
    assert_single_shape(result, "update", "unchanged")
    assert result["version_id"] == existing["version_id"]
    assert result["memory_id"] == existing["memory_id"]
    assert snapshot(vault_path) == before


def test_delete_makes_one_commit_and_removes_the_file_but_not_its_history(
    vault: Vault, vault_path: Path, existing: dict
):
    before = commit_count(vault_path)
    result = vault.remember(delete_args(existing))

    assert_single_shape(result, "delete", "deleted")
    assert commit_count(vault_path) == before + 1
    assert result["version_id"] == head(vault_path)
    assert result["memory_id"] == existing["memory_id"]
    assert result["path"] == existing["path"]
    assert not (vault_path / existing["path"]).exists()
    assert git(vault_path, "log", "-1", "--format=%s") == (
        "Delete decision: Ana owns the billing service"
    )
    lines = last_message(vault_path).splitlines()
    assert f"Memory-Id: {existing['memory_id']}" in lines
    assert "Client: pytest" in lines
    assert git(vault_path, "status", "--porcelain") == ""
    assert existing["version_id"] in git(vault_path, "log", "--format=%H", "--", existing["path"])
    with pytest.raises(NotFound):
        vault.read(existing["memory_id"])


def test_update_with_a_stale_version_is_refused_with_the_current_version(
    vault: Vault, vault_path: Path, existing: dict
):
    newer = vault.remember(update_args(existing, body="Second version."))
    before = snapshot(vault_path)
    with pytest.raises(VersionConflict) as caught:
        vault.remember(update_args(existing, body="Third version from a stale read."))
    assert caught.value.current_version_id == newer["version_id"]
    assert newer["version_id"] in caught.value.message
    assert caught.value.field == "expected_version_id"
    assert caught.value.to_dict()["error"]["current_version_id"] == newer["version_id"]
    assert snapshot(vault_path) == before


def test_delete_with_a_stale_version_is_refused_and_changes_nothing(
    vault: Vault, vault_path: Path, existing: dict
):
    newer = vault.remember(update_args(existing, body="Second version."))
    before = snapshot(vault_path)
    with pytest.raises(VersionConflict) as caught:
        vault.remember(delete_args(existing))
    assert caught.value.current_version_id == newer["version_id"]
    assert snapshot(vault_path) == before


# --- refusals change nothing ---------------------------------------------------------------


def _no_h1(e: dict) -> dict:
    args = create_args()
    args["content_md"] = "No heading here.\n"
    return args


def _no_fact(e: dict) -> dict:
    args = create_args()
    args["semantic_delta"]["facts"] = []
    return args


def _undeclared(e: dict) -> dict:
    args = create_args()
    args["semantic_delta"]["facts"][0]["object"] = "Bob"
    return args


def _bad_predicate(e: dict) -> dict:
    args = create_args()
    args["semantic_delta"]["facts"][0]["predicate"] = "Owns"
    return args


def _unknown_type(e: dict) -> dict:
    args = create_args()
    args["semantic_delta"]["memory_type"] = "wish"
    return args


def _batch_21(e: dict) -> dict:
    return {"mode": "create", "items": [item(f"Item {i}") for i in range(21)]}


def _batch_with_one_bad_item(e: dict) -> dict:
    bad = item("Bad one")
    bad["semantic_delta"]["facts"][0]["subject"] = "Nobody"
    return {"mode": "create", "items": [item("Good one"), bad]}


def _too_large(e: dict) -> dict:
    return create_args(body="x" * 70_000)


def _unknown_field(e: dict) -> dict:
    return {**create_args(), "colour": "red"}


def _update_without_version(e: dict) -> dict:
    args = update_args(e)
    del args["expected_version_id"]
    return args


def _delete_with_content(e: dict) -> dict:
    return {**delete_args(e), "content_md": "# X\n"}


def _items_with_content(e: dict) -> dict:
    return {"mode": "create", "items": [item("One")], "content_md": "# One\n"}


def _bad_date(e: dict) -> dict:
    args = create_args(title="Dated")
    args["semantic_delta"]["facts"][0]["valid_from"] = "2026-13-01"
    return args


def _until_before_from(e: dict) -> dict:
    args = create_args(title="Dated")
    args["semantic_delta"]["facts"][0].update(valid_from="2026-05-01", valid_until="2026-04-01")
    return args


def _entity_twice(e: dict) -> dict:
    args = create_args(title="Two Anas")
    args["semantic_delta"]["entities"].append({"n": "Ana", "kind": "person", "is": "designer"})
    return args


def _unknown_id_update(e: dict) -> dict:
    return {**update_args(e), "memory_id": UNKNOWN_ULID}


def _unknown_id_delete(e: dict) -> dict:
    return {**delete_args(e), "memory_id": "notes/no-such-file"}


def _path_trick_id(e: dict) -> dict:
    return {**delete_args(e), "memory_id": "../../etc/passwd"}


def _stale_version(e: dict) -> dict:
    # The vault's first commit is a real version, but not this memory's current one.
    return {**update_args(e), "expected_version_id": e["initial_commit"]}


def _made_up_version(e: dict) -> dict:
    return {**delete_args(e), "expected_version_id": "f" * 40}


def _supersedes_unknown(e: dict) -> dict:
    return create_args(title="Newer decision", supersedes=[UNKNOWN_ULID])


def _supersedes_itself(e: dict) -> dict:
    args = update_args(e)
    args["semantic_delta"]["supersedes"] = [e["memory_id"]]
    return args


def _duplicate_key(e: dict) -> dict:
    return create_args(title="Another owner record", key="billing.owner")


def _duplicate_key_in_batch(e: dict) -> dict:
    one, two = item("Key one"), item("Key two")
    one["semantic_delta"]["key"] = "same.key"
    two["semantic_delta"]["key"] = "same.key"
    return {"mode": "create", "items": [one, two]}


def _not_unicode(e: dict) -> dict:
    return create_args(title="Broken \ud800 text")


REFUSALS: dict[str, tuple[Callable[[dict], dict], type[VaultError], str | None]] = {
    "no-h1": (_no_h1, InvalidInput, "content_md"),
    "no-fact": (_no_fact, InvalidInput, "semantic_delta.facts"),
    "undeclared-endpoint": (_undeclared, InvalidInput, "semantic_delta.facts[0].object"),
    "predicate-not-snake-case": (_bad_predicate, InvalidInput, None),
    "unknown-memory-type": (_unknown_type, InvalidInput, "semantic_delta.memory_type"),
    "batch-too-large": (_batch_21, LimitExceeded, "items"),
    "batch-with-one-bad-item": (
        _batch_with_one_bad_item,
        InvalidInput,
        "items[1].semantic_delta.facts[0].subject",
    ),
    "content-too-large": (_too_large, LimitExceeded, "content_md"),
    "unknown-field": (_unknown_field, InvalidInput, None),
    "update-without-version": (_update_without_version, InvalidInput, "expected_version_id"),
    "delete-with-content": (_delete_with_content, InvalidInput, "content_md"),
    "items-with-content": (_items_with_content, InvalidInput, "content_md"),
    "impossible-date": (_bad_date, InvalidInput, "semantic_delta.facts[0].valid_from"),
    "until-before-from": (_until_before_from, InvalidInput, "semantic_delta.facts[0].valid_until"),
    "entity-declared-twice": (_entity_twice, InvalidInput, "semantic_delta.entities[2].n"),
    "unknown-id-update": (_unknown_id_update, NotFound, "memory_id"),
    "unknown-id-delete": (_unknown_id_delete, NotFound, "memory_id"),
    "path-trick-id": (_path_trick_id, InvalidInput, "memory_id"),
    "stale-version": (_stale_version, VersionConflict, "expected_version_id"),
    "made-up-version": (_made_up_version, VersionConflict, "expected_version_id"),
    "supersedes-unknown-id": (_supersedes_unknown, InvalidInput, "semantic_delta.supersedes[0]"),
    "supersedes-itself": (_supersedes_itself, InvalidInput, "semantic_delta.supersedes[0]"),
    "duplicate-key": (_duplicate_key, InvalidInput, "semantic_delta.key"),
    "duplicate-key-in-batch": (_duplicate_key_in_batch, InvalidInput, None),
    "not-unicode": (_not_unicode, InvalidInput, None),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_refused_call_changes_nothing(vault: Vault, vault_path: Path, case: str):
    make, error, field = REFUSALS[case]
    initial = head(vault_path)
    existing = vault.remember(create_args(key="billing.owner"))
    existing["initial_commit"] = initial
    args = make(existing)
    before = snapshot(vault_path)
    count = vault.count()

    with pytest.raises(error) as caught:
        vault.remember(args)

    assert type(caught.value) is error
    if field is not None:
        assert caught.value.field == field
    assert caught.value.hint, "every refusal says how to fix the call"
    assert snapshot(vault_path) == before
    assert list((vault_path / ".vault" / "run" / "journal").glob("*")) == []
    assert vault.count() == count
    assert vault.read(existing["memory_id"])["version_id"] == existing["version_id"]
    if error is VersionConflict:
        assert caught.value.current_version_id == existing["version_id"]


@pytest.mark.parametrize("mode", ["create", "update", "delete", "batch"])
def test_write_whose_commit_fails_is_rolled_back_completely(
    vault: Vault, vault_path: Path, existing: dict, mode: str
):
    # A real pre-commit hook that refuses every commit makes `git commit` fail after the
    # file was renamed into place and staged.
    hook = vault_path / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\necho refused by hook >&2\nexit 1\n")
    hook.chmod(0o755)
    calls = {
        "create": create_args(title="Brand new"),
        "update": update_args(existing, body="Changed."),
        "delete": delete_args(existing),
        "batch": {"mode": "create", "items": [item("Batch one"), item("Batch two")]},
    }
    before = snapshot(vault_path)

    with pytest.raises(VaultError) as caught:
        vault.remember(calls[mode])

    assert "refused by hook" in caught.value.message
    assert snapshot(vault_path) == before
    assert git(vault_path, "diff", "--cached", "--name-only") == ""
    assert list((vault_path / ".vault" / "run" / "journal").glob("*")) == []
    assert vault.read(existing["memory_id"])["version_id"] == existing["version_id"]
    hook.unlink()
    assert vault.remember(calls[mode])["version_id"] == head(vault_path)


def test_client_name_cannot_forge_trailers(vault: Vault, vault_path: Path):
    vault.remember(create_args(), client="evil\nMemory-Id: 01ARZ3NDEKTSV4RRFFQ69G5FAV")
    lines = last_message(vault_path).splitlines()
    assert len([line for line in lines if line.startswith("Client: ")]) == 1
    assert len([line for line in lines if line.startswith("Memory-Id: ")]) == 1
    assert "Memory-Id: 01ARZ3NDEKTSV4RRFFQ69G5FAV" not in lines


def test_superseding_an_existing_memory_is_accepted(vault: Vault, existing: dict):
    result = vault.remember(
        create_args(title="Bo owns the billing service", supersedes=[existing["memory_id"]])
    )
    assert result["status"] == "created"
    read = vault.read(result["memory_id"])
    assert read["semantic_delta"]["supersedes"] == [existing["memory_id"]]


def test_updating_a_memory_may_keep_its_own_key(vault: Vault, vault_path: Path):
    first = vault.remember(create_args(key="billing.owner"))
    args = update_args(first, body="Changed.")
    args["semantic_delta"]["key"] = "billing.owner"
    assert vault.remember(args)["status"] == "updated"


# --- hand edits ----------------------------------------------------------------------------


def test_uncommitted_hand_edit_makes_update_and_delete_refuse_and_survives(
    vault: Vault, vault_path: Path, existing: dict
):
    target = vault_path / existing["path"]
    edited = target.read_bytes().replace(b"She took it over.", b"She took it over (hand edit).")
    target.write_bytes(edited)
    before = snapshot(vault_path)

    with pytest.raises(VersionConflict) as on_update:
        vault.remember(update_args(existing, body="Agent's change."))
    assert on_update.value.current_version_id == existing["version_id"]
    assert "uncommitted" in on_update.value.message
    with pytest.raises(VersionConflict) as on_delete:
        vault.remember(delete_args(existing))
    assert on_delete.value.current_version_id == existing["version_id"]

    assert target.read_bytes() == edited
    assert snapshot(vault_path) == before
    assert git(vault_path, "diff", "--name-only") == existing["path"]
    assert git(vault_path, "diff", "--cached", "--name-only") == ""


def test_update_of_a_hand_made_file_without_id_writes_a_real_id(vault_path: Path):
    notes = vault_path / "notes"
    notes.mkdir()
    (notes / "wombat.md").write_text("# Wombats\n\nThey dig burrows.\n")
    git(vault_path, "add", "notes/wombat.md")
    git(vault_path, "commit", "--quiet", "-m", "A person wrote about wombats")
    person_commit = head(vault_path)

    with Vault.open(vault_path, client="pytest") as vault:
        read = vault.read("notes/wombat")
        assert read["memory_id"] == "notes/wombat"
        assert read["version_id"] == person_commit
        assert read["title"] == "Wombats"
        assert read["memory_type"] == "note"
        result = vault.remember(
            {
                "mode": "update",
                "memory_id": "notes/wombat",
                "expected_version_id": person_commit,
                "content_md": "# Wombats\n\nThey dig burrows with their claws.\n",
                "semantic_delta": {
                    "memory_type": "note",
                    "title": "Wombats",
                    "entities": [{"n": "wombat", "kind": "animal", "is": "a burrowing marsupial"}],
                    "facts": [{"subject": "wombat", "predicate": "digs", "object": "wombat"}],
                },
            }
        )
        assert result["status"] == "updated"
        assert ULID_RE.match(result["memory_id"])
        assert result["path"] == "notes/wombat.md"
        memory = parse((notes / "wombat.md").read_text(), "notes/wombat.md")
        assert memory.id == result["memory_id"]
        assert vault.read(result["memory_id"])["version_id"] == result["version_id"]
    assert git(vault_path, "log", "-1", "--format=%s") == "Update note: Wombats"
    assert git(vault_path, "status", "--porcelain") == ""


def test_update_keeps_foreign_front_matter_keys_of_a_hand_made_file(vault_path: Path):
    (vault_path / "notes").mkdir()
    text = (
        "---\nmemory_type: note\ntitle: Wombats\naliases: [Vombatus]\ncssclasses: [wide]\n"
        "---\n# Wombats\n\nThey dig.\n"
    )
    (vault_path / "notes" / "wombat.md").write_text(text)
    git(vault_path, "add", "notes/wombat.md")
    git(vault_path, "commit", "--quiet", "-m", "wombat")
    with Vault.open(vault_path, client="pytest") as vault:
        read = vault.read("notes/wombat")
        vault.remember(
            {
                "mode": "update",
                "memory_id": "notes/wombat",
                "expected_version_id": read["version_id"],
                "content_md": "# Wombats\n\nThey dig a lot.\n",
                "semantic_delta": {
                    "memory_type": "note",
                    "title": "Wombats",
                    "entities": [{"n": "wombat", "kind": "animal", "is": "a marsupial"}],
                    "facts": [{"subject": "wombat", "predicate": "digs", "object": "wombat"}],
                },
            }
        )
    memory = parse((vault_path / "notes" / "wombat.md").read_text(), "notes/wombat.md")
    assert memory.extra == {"aliases": ["Vombatus"], "cssclasses": ["wide"]}


def test_file_moved_by_hand_keeps_its_id(vault_path: Path):
    with Vault.open(vault_path, client="pytest") as vault:
        created = vault.remember(create_args())
    (vault_path / "archive").mkdir()
    git(vault_path, "mv", created["path"], "archive/ana.md")
    git(vault_path, "commit", "--quiet", "-m", "Move by hand")
    with Vault.open(vault_path, client="pytest") as vault:
        read = vault.read(created["memory_id"])
        assert read["path"] == "archive/ana.md"
        assert read["version_id"] == head(vault_path)
        result = vault.remember(update_args({**created, "version_id": read["version_id"]}))
    assert result["path"] == "archive/ana.md"


def test_users_staged_and_unstaged_work_is_not_swept_into_the_tools_commit(vault_path: Path):
    notes = vault_path / "notes"
    notes.mkdir()
    (notes / "tracked.md").write_text("# Tracked\n\nv1\n")
    git(vault_path, "add", "notes/tracked.md")
    git(vault_path, "commit", "--quiet", "-m", "tracked")
    (notes / "tracked.md").write_text("# Tracked\n\nv2, not staged\n")
    (notes / "staged.md").write_text("# Staged\n\nstaged, not committed\n")
    git(vault_path, "add", "notes/staged.md")
    (notes / "untracked.md").write_text("# Untracked\n")
    status_before = git(vault_path, "status", "--porcelain")
    staged_diff = git(vault_path, "diff", "--cached")
    unstaged_diff = git(vault_path, "diff")

    with Vault.open(vault_path, client="pytest") as vault:
        created = vault.remember(create_args())
        vault.remember(update_args(created, body="Updated."))
        items = vault.remember({"mode": "create", "items": [item("X one"), item("Y one")]})
        vault.remember(delete_args(items["results"][0]))

    for sha in git(vault_path, "rev-list", "HEAD~4..HEAD").splitlines():
        touched = git(vault_path, "show", "--name-only", "--format=", sha).splitlines()
        assert not any(path.startswith("notes/") for path in touched)
    assert git(vault_path, "status", "--porcelain") == status_before
    assert git(vault_path, "diff", "--cached") == staged_diff
    assert git(vault_path, "diff") == unstaged_diff


# --- secrets -------------------------------------------------------------------------------


def _b64url(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


_ALNUM36 = "a1B2" * 9
_KEY_BODY = "\n".join(["MIIEpAIBAAKCAQEA" + "q" * 48, "3Jd+" * 16, "wkZ9/" * 8 + "=="])
_PW = "s3cr3t" + "-Pa55w0rd"
_AWS_SECRET = "wJalrXUtnFEMI/K7MDENG" + "/bPxRfiCYEXAMPLEKEY"
_SLACK_PATH = "T0" + "ABC1DEF2/B0" + "GHI3JKL4/" + "a1B2c3D4" * 3

# kind -> (text that carries the secret, the secret part that must never be written)
SECRETS: dict[str, tuple[str, str]] = {
    "github-token": ("gh" + "p_" + _ALNUM36,) * 2,
    "aws-access-key-id": ("AK" + "IA" + "Q3EGRIBPZ4X7ML2N",) * 2,
    "stripe-key": ("sk" + "_live_" + "4eC39HqLyjWDarjtT1zdp7dc",) * 2,
    "openai-key": ("sk" + "-proj-" + "Ab3_dE6-gH9" * 4,) * 2,
    "anthropic-key": ("sk" + "-ant-" + "api03-" + "Zq8-Wx5_Yv2" * 5,) * 2,
    "gitlab-token": ("gl" + "pat-" + "Xy7_kL2-" * 3,) * 2,
    "slack-token": ("xo" + "xb-" + "123456789012-1234567890123-" + "AbCdEfGh" * 3,) * 2,
    "google-api-key": ("AI" + "za" + "SyD" + "x9_K-" * 6 + "ab",) * 2,
    "npm-token": ("np" + "m_" + _ALNUM36,) * 2,
    "jwt": (
        ".".join(
            [
                _b64url({"alg": "HS256", "typ": "JWT"}),
                _b64url({"sub": "42"}),
                "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
            ]
        ),
    )
    * 2,
    "slack-webhook": ("https://hooks.slack.com/services/" + _SLACK_PATH, _SLACK_PATH),
    "url-credentials": (f"postgres://app:{_PW}@db.internal:5432/billing", _PW),
    "password-assignment": (f"DB_PASSWORD={_PW}", _PW),
    "aws-secret-access-key": (f"aws_secret_access_key={_AWS_SECRET}", _AWS_SECRET),
    "private-key": (
        "-----"
        + "BEGIN RSA PRIVATE KEY-----\n"
        + _KEY_BODY
        + "\n-----"
        + "END RSA PRIVATE KEY-----",
        _KEY_BODY.splitlines()[1],
    ),
}


def _fits(field: str, text: str) -> bool:
    if field == "content_md":
        return True
    return "\n" not in text and len(text) <= (100 if field == "object" else 180)


def _call_with_secret(field: str, text: str, n: int) -> tuple[dict, str]:
    title = f"Secret case {n}"
    args = create_args(title=title, body="Nothing to see.")
    if field == "content_md":
        args["content_md"] = f"# {title}\n\nConnect with:\n\n{text}\n\nThen run the job.\n"
        return args, "content_md"
    if field == "title":
        args["semantic_delta"]["title"] = f"Use {text} for case {n}"
        return args, "semantic_delta.title"
    if field == "gloss":
        args["semantic_delta"]["entities"][0]["is"] = f"engineer whose key is {text}"
        return args, "semantic_delta.entities[0].is"
    args["semantic_delta"]["entities"].append({"n": text, "kind": "credential", "is": "a key"})
    args["semantic_delta"]["facts"].append({"subject": "Ana", "predicate": "holds", "object": text})
    return args, "semantic_delta.facts[1].object"


@pytest.mark.parametrize("field", ["content_md", "title", "gloss", "object"])
def test_secrets_never_enter_the_file_or_the_history(vault: Vault, vault_path: Path, field: str):
    tried = []
    for n, (kind, (text, secret)) in enumerate(SECRETS.items()):
        if not _fits(field, text):
            continue
        assert find_secret_kinds(text) == [kind], "the fake secret must look real to the redactor"
        args, where = _call_with_secret(field, text, n)
        result = vault.remember(args)
        assert result["status"] == "created", kind
        assert {"kind": kind, "field": where, "count": 1} in result["redactions"], kind
        on_disk = (vault_path / result["path"]).read_text(encoding="utf-8")
        assert secret not in on_disk, kind
        assert f"[REDACTED:{kind}]" in on_disk, kind
        assert secret not in json.dumps(vault.read(result["memory_id"])), kind
        tried.append((kind, secret))

    assert len(tried) >= 10
    history = git(vault_path, "log", "-p", "--all")
    for kind, secret in tried:
        assert secret not in history, kind
    assert git(vault_path, "status", "--porcelain") == ""


def test_secret_in_an_update_is_redacted_too(vault: Vault, vault_path: Path, existing: dict):
    text, secret = SECRETS["github-token"]
    result = vault.remember(update_args(existing, body=f"Token: {text}"))
    assert {"kind": "github-token", "field": "content_md", "count": 1} in result["redactions"]
    assert secret not in git(vault_path, "log", "-p", "--all")
    assert secret not in (vault_path / existing["path"]).read_text()


def test_secret_in_a_batch_item_is_reported_on_that_item(vault: Vault, vault_path: Path):
    text, secret = SECRETS["stripe-key"]
    result = vault.remember(
        {"mode": "create", "items": [item("Clean one"), item("Leaky one", body=f"key {text}")]}
    )
    assert result["results"][0]["redactions"] == []
    assert result["results"][1]["redactions"] == [
        {"kind": "stripe-key", "field": "items[1].content_md", "count": 1}
    ]
    assert secret not in git(vault_path, "log", "-p", "--all")


# --- restore -------------------------------------------------------------------------------


def test_restore_brings_back_an_old_version_in_one_commit(
    vault: Vault, vault_path: Path, existing: dict
):
    old_bytes = (vault_path / existing["path"]).read_bytes()
    vault.remember(update_args(existing, body="A later change."))
    before = commit_count(vault_path)

    result = vault.restore(existing["memory_id"], existing["version_id"][:10])

    assert commit_count(vault_path) == before + 1
    assert result["status"] == "updated"
    assert result["version_id"] == head(vault_path)
    assert (vault_path / existing["path"]).read_bytes() == old_bytes
    assert git(vault_path, "log", "-1", "--format=%s") == (
        f"Restore decision: Ana owns the billing service to {existing['version_id'][:10]}"
    )
    lines = last_message(vault_path).splitlines()
    assert f"Memory-Id: {existing['memory_id']}" in lines
    assert "Client: pytest" in lines
    assert vault.read(existing["memory_id"])["version_id"] == result["version_id"]
    assert "A later change." not in vault.read(existing["memory_id"])["content_md"]
    assert git(vault_path, "status", "--porcelain") == ""


def test_restore_to_the_current_version_makes_no_commit(
    vault: Vault, vault_path: Path, existing: dict
):
    before = snapshot(vault_path)
    result = vault.restore(existing["memory_id"], existing["version_id"])
    assert result["status"] == "unchanged"
    assert snapshot(vault_path) == before


def test_restore_to_a_version_of_another_memory_is_refused(
    vault: Vault, vault_path: Path, existing: dict
):
    other = vault.remember(create_args(title="Something else"))
    before = snapshot(vault_path)
    with pytest.raises(NotFound):
        vault.restore(existing["memory_id"], other["version_id"])
    assert snapshot(vault_path) == before
