"""Who git names for a write: an agent's writes are authored by the agent (its client
name, or the author `[authors]` gives it), committed by the person whose machine made
them; the person's own commands and hand edits stay the person's. Real git."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import create_args, git
from vault_tool.engine.vault import Vault
from vault_tool.errors import VaultUnavailable
from vault_tool.storage.config import CONFIG_PATH

PERSON = "Ana Person <ana@example.com>"


def _who(path: Path) -> tuple[str, str]:
    """(author, committer) of the last commit."""
    author, committer = git(path, "log", "-1", "--format=%an <%ae>%n%cn <%ce>").splitlines()
    return author, committer


@pytest.fixture
def ana(vault_path: Path) -> Path:
    git(vault_path, "config", "user.name", "Ana Person")
    git(vault_path, "config", "user.email", "ana@example.com")
    return vault_path


def _authors(path: Path, lines: str) -> None:
    """Lines added to the [authors] table, committed."""
    config = path / CONFIG_PATH
    config.write_text(config.read_text().replace("[authors]\n", f"[authors]\n{lines}\n"))
    git(path, "commit", "-q", "-m", "Authors", "--", CONFIG_PATH)


def test_an_agents_write_is_authored_by_the_agent_and_committed_by_the_person(ana: Path):
    with Vault.open(ana, client="claude-code") as vault:
        made = vault.remember(create_args("Ana owns billing"))
        assert _who(ana) == ("claude-code <claude-code@vault-tool>", PERSON)
        vault.remember(
            {
                "mode": "delete",
                "memory_id": made["memory_id"],
                "expected_version_id": made["version_id"],
            }
        )
        assert _who(ana) == ("claude-code <claude-code@vault-tool>", PERSON)


def test_the_persons_own_commands_stay_the_persons(ana: Path):
    with Vault.open(ana, client="cli") as vault:
        vault.remember(create_args("Ana owns billing"))
    assert _who(ana) == (PERSON, PERSON)


def test_authors_name_a_clients_author_or_give_its_writes_to_the_person(ana: Path):
    _authors(ana, 'claude-code = "Claude <claude@example.com>"\nmy-script = "me"')
    with Vault.open(ana, client="claude-code") as vault:
        vault.remember(create_args("Ana owns billing"))
    assert _who(ana) == ("Claude <claude@example.com>", PERSON)
    with Vault.open(ana, client="my-script") as vault:
        vault.remember(create_args("Ben owns search", body="Ben owns the search service."))
    assert _who(ana) == (PERSON, PERSON)


def test_an_author_that_is_not_name_and_email_stops_the_vault_naming_the_key(ana: Path):
    _authors(ana, 'claude-code = "Claude"')
    with pytest.raises(VaultUnavailable) as refused:
        Vault.open(ana, client="claude-code")
    assert "[authors] claude-code" in refused.value.message
    assert "Name <email>" in refused.value.message


def test_a_hand_edit_taken_in_after_an_agents_write_is_the_persons(ana: Path):
    with Vault.open(ana, client="claude-code") as vault:
        made = vault.remember(create_args("Ana owns billing"))
        with (ana / made["path"]).open("a") as file:
            file.write("\nAna said so on Monday.\n")
        vault.commit_hand_edits()
    assert git(ana, "log", "-1", "--format=%s").startswith("Hand edit")
    assert _who(ana) == (PERSON, PERSON)


def test_every_client_that_is_the_person_keeps_the_persons_identity():
    from vault_tool.engine.hand_edits import HAND_EDIT_CLIENT
    from vault_tool.ops.sample import SAMPLE_CLIENT
    from vault_tool.ops.transfer import IMPORT_CLIENT
    from vault_tool.storage.config import PERSONS_CLIENTS, Config

    for client in (HAND_EDIT_CLIENT, SAMPLE_CLIENT, IMPORT_CLIENT, "cli", "sync"):
        assert client in PERSONS_CLIENTS and Config().author_for(client) is None
    assert Config().author_for("Cursor IDE/1.2") == ("Cursor IDE/1.2", "Cursor-IDE-1.2@vault-tool")
