"""A team's vault over a bare git remote: sync fetches, merges fact by fact, pushes, and the
index follows; a rejected push is retried, an unreachable remote is not an error, and a
merge only a person can finish leaves the vault as it was."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli_support import invoke
from tests.clones import (
    clone,
    fact,
    memory_args,
    memory_problems,
    staging_on_both,
    team,
    tree,
    update_args,
)
from tests.helpers import git
from vault_tool.engine.vault import Vault
from vault_tool.errors import InvalidInput, VaultBusy
from vault_tool.storage import merge_setup


def _facts(vault: Vault, memory_id: str) -> set[tuple[str, str, str]]:
    found = vault.read(memory_id)["semantic_delta"]["facts"]
    return {(f["subject"], f["predicate"], f["object"]) for f in found}


def test_writes_on_two_clones_converge_fact_by_fact(tmp_path: Path):
    _, (a_path, b_path) = team(tmp_path)
    with Vault.open(a_path, client="agent-a") as a, Vault.open(b_path, client="agent-b") as b:
        shared = a.remember(
            memory_args(
                "Billing service ownership",
                "# Billing service ownership\n\nAna runs it.\n\n"
                "Escalations go to the platform channel.\n",
                [fact("Ana", "owns", "billing service")],
                ["billing"],
            )
        )
        doomed = a.remember(
            memory_args(
                "Old runbook",
                "# Old runbook\n\nSteps.\n",
                [fact("runbook", "covers", "billing service")],
                ["ops"],
            )
        )
        assert a.team.sync().status == "synced"
        assert b.team.sync().commits_in == 2

        # Both sides change the shared memory: different facts, tags, and body lines far apart.
        a.remember(
            update_args(
                shared,
                a,
                facts=lambda old: [*old, fact("Ana", "reviews", "invoices")],
                tags=lambda old: [*old, "finance"],
                body=lambda old: old.replace("Ana runs it.", "Ana runs it since March."),
            )
        )
        b.remember(
            update_args(
                shared,
                b,
                facts=lambda old: [*old, fact("Ben", "backs_up", "Ana")],
                tags=lambda old: [*old, "on-call"],
                body=lambda old: old.replace("the platform channel.", "the #platform channel."),
            )
        )
        # A deletes the runbook while B edits it: the edit is kept.
        a.remember(
            {
                "mode": "delete",
                "memory_id": doomed["memory_id"],
                "expected_version_id": a.find(doomed["memory_id"]).version_id,
            }
        )
        b.remember(update_args(doomed, b, body=lambda old: old + "\nStep two.\n"))
        a_new = a.remember(
            memory_args(
                "Invoices run monthly",
                "# Invoices run monthly\n\nOn the 1st.\n",
                [fact("invoice run", "runs", "monthly")],
                ["billing"],
            )
        )
        b_new = b.remember(
            memory_args(
                "Gateway timeout is 30 s",
                "# Gateway timeout is 30 s\n\nSet in May.\n",
                [fact("gateway", "times_out_after", "30 s")],
                ["gateway"],
            )
        )

        a_first = a.team.sync()
        b_merge = b.team.sync()
        a_last = a.team.sync()
        assert a_first.status == "synced" and a_first.pushed
        assert b_merge.merge == "merge" and b_merge.pushed
        assert b_merge.kept_edited == [doomed["path"]]
        assert a_last.merge == "fast-forward"
        assert b.team.sync().status == "up to date"

        assert tree(a_path) == tree(b_path)
        assert memory_problems(a_path) == []
        for vault in (a, b):
            assert _facts(vault, shared["memory_id"]) == {
                ("Ana", "owns", "billing service"),
                ("Ana", "reviews", "invoices"),
                ("Ben", "backs_up", "Ana"),
            }
            memory = vault.read(shared["memory_id"])
            assert set(memory["semantic_delta"]["tags"]) == {"billing", "finance", "on-call"}
            assert "since March" in memory["content_md"] and "#platform" in memory["content_md"]
            assert "Step two." in vault.read(doomed["memory_id"])["content_md"]
            for made in (a_new, b_new):
                assert vault.read(made["memory_id"])["path"] == made["path"]
            hits = vault.search({"query": "gateway timeout"})["selected_hits"]
            assert hits and hits[0]["memory_id"] == b_new["memory_id"]
    # The merge commit names the kept edit; sync made no commit but that merge.
    message = git(b_path, "log", "-1", "--format=%B")
    assert f"kept {doomed['path']}" in message and "Client: sync" in message
    assert git(b_path, "log", "--no-merges", "--grep", "Client: sync", "--format=%h") == ""


def test_a_persons_plain_git_pull_merges_with_the_driver_and_the_index_follows(tmp_path: Path):
    a_path, b_path, made = staging_on_both(tmp_path)
    with Vault.open(b_path, client="agent-b") as b:
        b.remember(
            update_args(made, b, facts=lambda old: [*old, fact("staging", "owned_by", "Ben")])
        )
    with Vault.open(a_path, client="agent-a") as a:
        a.remember(
            update_args(made, a, facts=lambda old: [*old, fact("staging", "costs", "40 EUR")])
        )
        a.team.sync()
    git(b_path, "pull", "--no-rebase", "--quiet", "--no-edit")  # a person, not vault-tool
    assert memory_problems(b_path) == []
    with Vault.open(b_path) as b:
        assert _facts(b, made["memory_id"]) == {
            ("staging", "runs_on", "k3s"),
            ("staging", "owned_by", "Ben"),
            ("staging", "costs", "40 EUR"),
        }
        assert b.search({"query": "40 EUR"})["selected_hits"][0]["memory_id"] == made["memory_id"]


def test_a_push_rejected_because_the_remote_moved_is_fetched_merged_and_retried(tmp_path: Path):
    _, (a_path, b_path) = team(tmp_path)
    with Vault.open(b_path, client="agent-b") as b:
        b.remember(memory_args("B first", "# B first\n\nx\n", [fact("b", "is", "first")], []))
    git(b_path, "branch", "pending")  # what B will push while A's sync runs
    git(b_path, "reset", "--quiet", "--hard", "HEAD~1")
    with Vault.open(b_path, client="agent-b") as b:
        b.remember(memory_args("B second", "# B second\n\ny\n", [fact("b", "is", "second")], []))
        b.team.sync()
    # Right after A's merge commit (before A pushes), B pushes again: A's push is rejected.
    hook = a_path / ".git" / "hooks" / "post-commit"
    hook.write_text(
        "#!/bin/sh\ngit log -1 --format=%s | grep -q '^Sync: merge' || exit 0\n"
        f"[ -e {tmp_path}/fired ] && exit 0\ntouch {tmp_path}/fired\n"
        "unset GIT_DIR GIT_INDEX_FILE GIT_WORK_TREE GIT_PREFIX\n"
        f"cd {b_path} && git merge -q --no-edit pending && git push -q origin main"
        f" >{tmp_path}/hook.log 2>&1\n"
    )
    hook.chmod(0o755)
    pauses: list[float] = []
    with Vault.open(a_path, client="agent-a") as a:
        a.remember(memory_args("A only", "# A only\n\nz\n", [fact("a", "is", "here")], []))
        outcome = a.team.sync(pause=pauses.append, jitter=lambda: 0.5)
    assert (tmp_path / "fired").exists()
    assert outcome.status == "synced" and outcome.attempts == 2 and pauses == [0.2]
    remote_head = git(a_path, "ls-remote", "origin", "refs/heads/main").split()[0]
    assert remote_head == git(a_path, "rev-parse", "HEAD")
    titles = git(a_path, "log", "--format=%s")
    assert all(
        t in titles
        for t in (
            "Create decision: B first",
            "Create decision: B second",
            "Create decision: A only",
        )
    )


def test_an_unreachable_remote_is_reported_writes_go_on_and_a_later_sync_lands(tmp_path: Path):
    remote, (a_path,) = team(tmp_path, members=1)
    away = tmp_path / "away.git"
    shutil.move(remote, away)
    with Vault.open(a_path, client="agent-a") as a:
        a.remember(
            memory_args(
                "Offline note",
                "# Offline note\n\nWritten offline.\n",
                [fact("note", "written", "offline")],
                [],
            )
        )
    done = invoke("sync", "--vault", a_path)
    assert done.exit_code == 0, done.stdout + done.stderr
    assert "offline" in done.stdout and "the next sync tries again" in done.stdout
    shutil.move(away, remote)
    done = invoke("sync", "--vault", a_path, "--json")
    assert done.exit_code == 0 and '"status": "synced"' in done.stdout
    assert git(a_path, "ls-remote", "origin", "refs/heads/main").split()[0] == git(
        a_path, "rev-parse", "HEAD"
    )


def test_a_conflict_only_a_person_can_resolve_leaves_the_vault_as_it_was(tmp_path: Path):
    _, (a_path, b_path) = team(tmp_path)
    for path, words in ((a_path, "Ours."), (b_path, "Theirs.")):
        (path / "README.md").write_text(f"# Team vault\n\n{words}\n")
        git(path, "add", "README.md")
        git(path, "commit", "--quiet", "-m", "Edit the readme")
    with Vault.open(a_path) as a:
        a.team.sync()
    before = git(b_path, "rev-parse", "HEAD")
    with Vault.open(b_path) as b, pytest.raises(VaultBusy, match=r"README\.md need a person"):
        b.team.sync()
    assert git(b_path, "rev-parse", "HEAD") == before
    assert git(b_path, "status", "--porcelain") == ""
    assert not (b_path / ".git" / "MERGE_HEAD").exists()
    done = invoke("sync", "--vault", b_path)
    assert done.exit_code == 6 and "git pull" in done.stderr


def test_sync_without_a_remote_says_how_to_add_one(vault_path: Path):
    with Vault.open(vault_path) as vault, pytest.raises(InvalidInput, match="no remote") as told:
        vault.team.sync()
    assert "vault-tool remote add origin URL" in told.value.hint
    listed = invoke("remote", "list", "--vault", vault_path)
    assert listed.exit_code == 0 and "No remote yet" in listed.stdout


def test_remote_add_refuses_a_bad_name_and_a_taken_one(vault_path: Path, tmp_path: Path):
    bad = invoke("remote", "add", "-x", str(tmp_path), "--vault", vault_path)
    assert bad.exit_code == 2
    assert (
        invoke("remote", "add", "origin", str(tmp_path / "r.git"), "--vault", vault_path).exit_code
        == 0
    )
    again = invoke("remote", "add", "origin", str(tmp_path / "s.git"), "--vault", vault_path)
    assert again.exit_code == 2 and "git remote set-url origin" in again.stderr


def test_a_clone_is_given_the_merge_driver_when_first_opened(tmp_path: Path):
    remote, _ = team(tmp_path, members=1)
    fresh = tmp_path / "fresh"
    subprocess.run(["git", "clone", "--quiet", str(remote), str(fresh)], check=True)
    assert (
        subprocess.run(["git", "config", "--get", "merge.vault-tool.driver"], cwd=fresh).returncode
        == 1
    )
    clone(remote, tmp_path / "opened")
    driver = git(tmp_path / "opened", "config", "--get", "merge.vault-tool.driver")
    assert driver == merge_setup.driver_command()
    assert git(tmp_path / "opened", "check-attr", "merge", "--", "fact/x.md").endswith("vault-tool")


def test_a_clone_whose_git_knows_nobody_merges_as_the_vault_commits(tmp_path: Path):
    remote, (a_path,) = team(tmp_path, members=1)
    nobody = tmp_path / "nobody"
    subprocess.run(["git", "clone", "--quiet", str(remote), str(nobody)], check=True)
    with Vault.open(a_path) as a:
        a.remember(memory_args("From A", "# From A\n\na\n", [fact("a", "wrote", "this")], []))
        a.team.sync()
    with Vault.open(nobody, client="agent-n") as n:
        n.remember(memory_args("From N", "# From N\n\nn\n", [fact("n", "wrote", "this")], []))
        outcome = n.team.sync()
    assert outcome.merge == "merge" and outcome.pushed
    assert git(nobody, "log", "-1", "--format=%an <%ae>").startswith("vault-tool")


def test_a_token_in_a_remote_url_is_never_printed(vault_path: Path):
    url = "https://ana:s3cret-Passw0rd@127.0.0.1:9/team/vault.git"  # (nothing listens on 9)
    added = invoke("remote", "add", "origin", url, "--vault", vault_path)
    listed = invoke("remote", "list", "--vault", vault_path, "--json")
    synced = invoke("sync", "--vault", vault_path, "--json")
    assert added.exit_code == listed.exit_code == synced.exit_code == 0, synced.stderr
    assert '"status": "offline"' in synced.stdout
    for said in (added, listed, synced):
        assert "s3cret-Passw0rd" not in said.stdout + said.stderr
    assert "ana:[REDACTED:url-credentials]@127.0.0.1" in listed.stdout


def test_a_sync_killed_half_way_through_its_merge_is_undone_by_the_next_open(tmp_path: Path):
    _, (a_path, b_path) = team(tmp_path)
    with Vault.open(a_path) as a:
        a.remember(memory_args("From A", "# From A\n\na\n", [fact("a", "wrote", "this")], []))
        a.team.sync()
    with Vault.open(b_path) as b:
        b.remember(memory_args("From B", "# From B\n\nb\n", [fact("b", "wrote", "this")], []))
    before = git(b_path, "rev-parse", "HEAD")
    # What a sync killed between `git merge --no-commit` and its commit leaves behind.
    git(b_path, "fetch", "-q", "origin")
    theirs = git(b_path, "rev-parse", "origin/main")
    (b_path / ".git" / "vault-tool" / "sync-merge").write_text(theirs)
    git(b_path, "merge", "-q", "--no-ff", "--no-commit", theirs)
    assert (b_path / ".git" / "MERGE_HEAD").exists()
    with Vault.open(b_path) as b:
        assert not (b_path / ".git" / "MERGE_HEAD").exists()
        assert git(b_path, "rev-parse", "HEAD") == before
        assert git(b_path, "status", "--porcelain") == ""
        assert b.team.sync().status == "synced"


def test_a_merge_a_person_began_is_left_to_them(tmp_path: Path):
    _, (a_path, b_path) = team(tmp_path)
    with Vault.open(a_path) as a:
        a.remember(memory_args("From A", "# From A\n\na\n", [fact("a", "wrote", "this")], []))
        a.team.sync()
    with Vault.open(b_path) as b:
        b.remember(memory_args("From B", "# From B\n\nb\n", [fact("b", "wrote", "this")], []))
    git(b_path, "fetch", "-q", "origin")
    git(b_path, "merge", "-q", "--no-ff", "--no-commit", "origin/main")  # a person's
    with Vault.open(b_path) as b:
        assert (b_path / ".git" / "MERGE_HEAD").exists()
        with pytest.raises(VaultBusy, match="a merge is in progress"):
            b.team.sync()
