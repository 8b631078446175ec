"""Undo a session: vault-tool revert puts back every memory a range changed as it was before
it, as one commit naming what it undoes; a memory changed after the range is merged when
the memory merge keeps both changes, else kept and listed. Real git, real index."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_support import invoke
from tests.clones import fact, memory_args, update_args
from tests.helpers import git
from vault_tool.engine.vault import Vault


def make(vault: Vault, title: str, obj: str = "billing service") -> dict:
    return vault.remember(memory_args(title, "She took it over.", [fact("Ana", "owns", obj)], []))


def head(path: Path) -> str:
    return git(path, "rev-parse", "HEAD")


def test_revert_undoes_a_create_an_update_a_delete_and_a_batch(
    vault: Vault, vault_path: Path
) -> None:
    kept = make(vault, "Ana owns billing")
    doomed = make(vault, "Bo owns the gateway", "gateway")
    start = head(vault_path)
    before = {p: (vault_path / p).read_bytes() for p in (kept["path"], doomed["path"])}
    # The session: an update, a delete, a create and a batch of two creates.
    vault.remember(update_args(kept, vault, facts=lambda old: [{**old[0], "object": "ledger"}]))
    doc = vault.find(doomed["memory_id"])
    vault.remember(
        {"mode": "delete", "memory_id": doomed["memory_id"], "expected_version_id": doc.version_id}
    )
    made = make(vault, "Cy owns search", "search")
    batch = memory_args("Dee owns ci", "x", [fact("Dee", "owns", "ci")], [])
    other = memory_args("Eve owns docs", "y", [fact("Eve", "owns", "docs")], [])
    items = [{k: v for k, v in one.items() if k != "mode"} for one in (batch, other)]
    vault.remember({"mode": "create", "items": items})
    plan = vault.revert(f"{start}..HEAD")
    assert plan.result is not None and plan.result.version_id == head(vault_path)
    outcomes = {f.path: (f.outcome, _change(f)) for f in plan.files}
    assert outcomes[kept["path"]] == ("reverted", "rewritten")
    assert outcomes[doomed["path"]] == ("reverted", "restored")
    assert outcomes[made["path"]] == ("reverted", "deleted")
    for path, data in before.items():
        assert (vault_path / path).read_bytes() == data
    assert not (vault_path / made["path"]).exists()
    assert git(vault_path, "diff", "--stat", start, "HEAD") == ""  # the tree as it was
    message = git(vault_path, "log", "-1", "--format=%B")
    assert message.startswith(f"Revert 5 memories: {start}..HEAD (4 commits)")
    assert f"Memory-Id: {doomed['memory_id']}" in message
    assert vault.find(doomed["memory_id"]) is not None  # the index knows it again
    assert vault.find(made["memory_id"]) is None


def test_revert_puts_back_a_move(vault: Vault, vault_path: Path) -> None:
    made = make(vault, "Ana owns billing")
    start = head(vault_path)
    moved = made["path"].replace(".md", "-moved.md")
    git(vault_path, "mv", made["path"], moved)
    git(vault_path, "commit", "-qm", "Move it")
    vault.revert(f"{start}..HEAD")
    assert (vault_path / made["path"]).exists() and not (vault_path / moved).exists()
    assert git(vault_path, "status", "--porcelain") == ""


def test_a_later_change_by_another_client_is_merged_when_both_are_kept(
    vault_path: Path,
) -> None:
    with Vault.open(vault_path, client="person") as person:
        made = make(person, "Ana owns billing")
    with Vault.open(vault_path, client="agent") as agent:
        agent.remember(update_args(made, agent, tags=lambda old: [*old, "agent-tag"]))
    with Vault.open(vault_path, client="person") as person:
        person.remember(
            update_args(made, person, body=lambda old: old.replace("took it over", "runs it"))
        )
    with Vault.open(vault_path, client="cli") as vault:
        plan = vault.revert(client="agent")
    (only,) = plan.files
    assert only.outcome == "merged"
    text = (vault_path / made["path"]).read_text()
    assert "agent-tag" not in text and "She runs it." in text  # the person's edit stays


def test_a_later_change_that_conflicts_is_kept_and_listed(vault_path: Path) -> None:
    with Vault.open(vault_path, client="person") as person:
        made = make(person, "Ana owns billing")
        gone = make(person, "Bo owns the gateway", "gateway")
    with Vault.open(vault_path, client="agent") as agent:
        agent.remember(update_args(made, agent, body=lambda old: old.replace("She", "Ana")))
        agent.remember(update_args(gone, agent, tags=lambda old: [*old, "agent"]))
    with Vault.open(vault_path, client="person") as person:
        person.remember(update_args(made, person, body=lambda old: old.replace("Ana", "Ana B.")))
    now = (vault_path / made["path"]).read_bytes()
    done = invoke("revert", "--client", "agent", "--vault", vault_path, "--dry-run", "--json")
    assert done.exit_code == 0, done.output
    files = {f["path"]: f for f in json.loads(done.stdout)["files"]}
    assert files[made["path"]]["outcome"] == "kept"
    assert "changed since the range" in files[made["path"]]["reason"]
    assert files[gone["path"]]["outcome"] == "reverted"
    # The dry run's review: what the revert would change, as `vault-tool review` shows it.
    [reviewed] = json.loads(done.stdout)["review"]["memories"]
    assert reviewed["path"] == gone["path"] and reviewed["changes"]["tags"]["removed"] == ["agent"]
    before = head(vault_path)
    shown = invoke("revert", "--client", "agent", "--vault", vault_path, "--dry-run")
    assert "Would revert 1 of 2 memories" in shown.stdout and head(vault_path) == before
    assert "Review of what the revert would change: 1 memory changed" in shown.stdout
    done = invoke("revert", "--client", "agent", "--vault", vault_path)
    assert done.exit_code == 0, done.output
    assert (vault_path / made["path"]).read_bytes() == now  # not overwritten
    assert "- agent\n" not in (vault_path / gone["path"]).read_text()  # its tag taken back
    assert "kept" in done.stdout


def test_revert_names_what_is_missing(vault_path: Path) -> None:
    done = invoke("revert", "--vault", vault_path)
    assert done.exit_code != 0 and "--client NAME" in done.output
    done = invoke("revert", "--client", "nobody", "--vault", vault_path)
    assert done.exit_code != 0 and "no commit to revert" in done.output


def _change(f: object) -> str:
    before, after = f.before, f.after  # type: ignore[attr-defined]
    if before is None:
        return "restored"
    return "deleted" if after is None else "rewritten"
