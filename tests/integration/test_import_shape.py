"""`import --format markdown` keeps a folder's shape: paths, bodies, links and dates.

Real git repositories (the vault's and, for history dates, the source's), a real index.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.cli_support import invoke, invoke_json
from tests.helpers import create_args, git, snapshot
from vault_tool.errors import EXIT_CODES
from vault_tool.ops.transfer import import_source
from vault_tool.storage.store import Store

SKIPPED_EXIT = next((code for code, text in EXIT_CODES.items() if "skipped" in text), None)

NOTES = {
    "Projects/Billing migration.md": """\
---
title: Billing migration plan
created: 2024-03-05 09:30
updated: 2024-03-09
---
We move invoicing to the [[Billing Service]] before the freeze; [[Ana Lima|Ana]] leads it.
Rollback steps: [[Deploy Runbook#Rollback]]. See also [[Runbooks/Deploy Runbook]],
![[diagram.png]], [[Nowhere]], [[Ana]] and [[Staging needs the VPN]].

```text
[[Not A Link]]
```
""",
    "People/Ana Lima.md": """\
---
aliases: [Ana]
---
Ana leads the billing migration.
""",
    "Services/billing-service.md": """\
---
title: Billing Service
tags: [billing]
---
## Overview

The invoicing backend.
""",
    "Runbooks/Deploy Runbook.md": "## Rollback\n\nRun `make rollback`, then see [[#Rollback]].\n",
    "Empty.md": "",
    "Blank.md": "   \n\n",
    "Only front matter.md": "---\ntitle: Nothing here\n---\n\n",
    "attachments/diagram.png": "not a note",
    ".obsidian/app.json": "{}",
}


def write_notes(root: Path, notes: dict[str, str] = NOTES) -> Path:
    for name, text in notes.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def body_of(text: str) -> str:
    """A file's body: what follows its front matter."""
    if text.startswith("---\n"):
        return text.split("\n---\n", 1)[1].lstrip("\n")
    return text


@pytest.fixture
def source(tmp_path: Path) -> Path:
    return write_notes(tmp_path / "Obsidian")


def imported(report: dict) -> dict[str, dict]:
    return {entry["item"]: entry for entry in report["imported"]}


def test_notes_keep_their_folders_under_the_prefix_and_their_paths_are_their_ids(
    vault, vault_path, source
):
    report = import_source(vault, source, "markdown", prefix="work")
    entries = imported(report)
    kept = {
        "Projects/Billing migration.md",
        "People/Ana Lima.md",
        "Services/billing-service.md",
        "Runbooks/Deploy Runbook.md",
    }
    assert set(entries) == kept
    for label, entry in entries.items():
        assert entry["path"] == f"work/{label}"
        assert entry["memory_id"] == f"work/{label[:-3]}"
        assert vault.read(entry["memory_id"])["path"] == entry["path"]
    changed = git(vault_path, "show", "--name-only", "--format=", "HEAD").splitlines()
    assert sorted(changed) == sorted(f"work/{label}" for label in kept)


def test_without_a_prefix_notes_keep_their_paths_from_the_vault_s_top(vault, source):
    report = import_source(vault, source, "markdown")
    assert imported(report)["People/Ana Lima.md"]["path"] == "People/Ana Lima.md"
    assert vault.read("People/Ana Lima")["title"] == "Ana Lima"


def test_bodies_are_not_rewritten_and_no_h1_is_added(vault, vault_path, source):
    import_source(vault, source, "markdown", prefix="work")
    for label in (
        "Runbooks/Deploy Runbook.md",
        "People/Ana Lima.md",
        "Projects/Billing migration.md",
    ):
        written = (vault_path / "work" / label).read_text(encoding="utf-8")
        assert body_of(written) == body_of(NOTES[label]), label
    # A note opening with a lower heading is titled by its file name, as Obsidian shows it.
    assert vault.read("work/Runbooks/Deploy Runbook")["title"] == "Deploy Runbook"


def test_a_person_s_front_matter_keeps_its_keys_and_its_type(vault, vault_path, tmp_path):
    note = "---\ntype: decision\nstatus: in-progress\nid: 42\n---\nWe chose Postgres.\n"
    source = write_notes(tmp_path / "notes", {"Postgres.md": note})
    report = import_source(vault, source, "markdown")
    assert report["skipped"] == []
    read = vault.read("Postgres")
    assert read["memory_type"] == "decision"
    written = (vault_path / "Postgres.md").read_text(encoding="utf-8")
    assert "\nstatus: in-progress\n" in written and "\nid: 42\n" in written
    assert "imported_" not in written


def test_empty_files_are_skipped_with_the_reason(vault, source):
    report = import_source(vault, source, "markdown")
    reasons = {s["item"]: s["reason"] for s in report["skipped"]}
    assert set(reasons) == {"Empty.md", "Blank.md", "Only front matter.md"}
    assert all("empty" in reason or "no text" in reason for reason in reasons.values())
    # Attachments are not notes: listed apart, and no reason for a non-zero exit.
    assert report["ignored"] == [
        {"item": "attachments/diagram.png", "reason": "not a Markdown file; not imported"}
    ]


def test_every_wikilink_is_reported_with_the_id_it_resolves_to(vault, source):
    made = vault.remember(create_args("Staging needs the VPN", "Deploys time out without it."))
    vault_memory = made["memory_id"]
    report = import_source(vault, source, "markdown", prefix="work")
    links = {
        link["link"]: link["resolves_to"]
        for link in imported(report)["Projects/Billing migration.md"]["links"]
    }
    assert links == {
        "[[Billing Service]]": "work/Services/billing-service",  # by title
        "[[Ana Lima|Ana]]": "work/People/Ana Lima",  # by file name
        "[[Deploy Runbook#Rollback]]": "work/Runbooks/Deploy Runbook",
        "[[Runbooks/Deploy Runbook]]": "work/Runbooks/Deploy Runbook",  # by path
        "![[diagram.png]]": "attachment",  # a file, no note: not a broken link
        "[[Nowhere]]": "unresolved",
        "[[Ana]]": "work/People/Ana Lima",  # by alias
        "[[Staging needs the VPN]]": vault_memory,  # a memory already in the vault
    }
    # A link to a heading of the same note ([[#Rollback]]) names no other note.
    assert imported(report)["Runbooks/Deploy Runbook.md"]["links"] == []
    assert report["counts"]["unresolved_links"] == 1


def test_dates_come_from_front_matter_then_git_history_then_the_file_s_time(vault, tmp_path):
    source = tmp_path / "repo"
    write_notes(
        source,
        {
            "dated.md": "---\ncreated: 2024-03-05\nupdated: 2024-03-09T10:00:00Z\n---\nDated.\n",
            "committed.md": "Written in 2020, edited in 2021.\n",
            "untracked.md": "Never committed.\n",
        },
    )
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "ana",
        "GIT_AUTHOR_EMAIL": "ana@example.com",
        "GIT_COMMITTER_NAME": "ana",
        "GIT_COMMITTER_EMAIL": "ana@example.com",
    }

    def commit(when: str, *paths: str) -> None:
        dated = {**env, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
        subprocess.run(["git", "add", *paths], cwd=source, check=True, env=dated)
        subprocess.run(["git", "commit", "-qm", when], cwd=source, check=True, env=dated)

    subprocess.run(["git", "init", "-q"], cwd=source, check=True, env=env)
    commit("2020-05-01T08:00:00Z", "committed.md", "dated.md")
    (source / "committed.md").write_text("Written in 2020, edited in 2021!\n", encoding="utf-8")
    commit("2021-07-02T09:00:00Z", "committed.md")
    stamp = 1_600_000_000  # 2020-09-13T12:26:40Z
    os.utime(source / "untracked.md", (stamp, stamp))
    report = import_source(vault, source, "markdown", prefix="repo")
    dates = {e["item"]: (e["created"], e["updated"]) for e in report["imported"]}
    assert dates == {
        "dated.md": ("2024-03-05T00:00:00Z", "2024-03-09T10:00:00Z"),
        "committed.md": ("2020-05-01T08:00:00Z", "2021-07-02T09:00:00Z"),
        "untracked.md": ("2020-09-13T12:26:40Z", "2020-09-13T12:26:40Z"),
    }
    assert vault.read("repo/committed")["created"] == "2020-05-01T08:00:00Z"


def test_reimporting_changes_nothing_and_a_changed_note_is_reported(vault, vault_path, source):
    import_source(vault, source, "markdown", prefix="work")
    state = snapshot(vault_path)
    again = import_source(vault, source, "markdown", prefix="work")
    assert snapshot(vault_path) == state and again["imported"] == []
    reasons = {s["item"]: s["reason"] for s in again["skipped"]}
    assert reasons["People/Ana Lima.md"].startswith("already in the vault")
    (source / "People/Ana Lima.md").write_text("Ana left the team.\n", encoding="utf-8")
    changed = import_source(vault, source, "markdown", prefix="work")
    reason = {s["item"]: s["reason"] for s in changed["skipped"]}["People/Ana Lima.md"]
    assert "work/People/Ana Lima.md" in reason and "different" in reason
    assert snapshot(vault_path) == state


# --- the command -------------------------------------------------------------------------


def new_vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    invoke_json("init", root)
    return root


def test_the_command_exits_with_the_skipped_code_and_prints_the_report(tmp_path, source):
    root = new_vault(tmp_path)
    args = ("import", source, "--format", "markdown", "--prefix", "work", "--vault", root)
    done = invoke(*args, "--json")
    assert done.exit_code == SKIPPED_EXIT != 0, done.stderr
    report = json.loads(done.stdout)
    assert report["counts"]["imported"] == 4 and report["counts"]["skipped"] == 3
    assert git(root, "log", "-1", "--format=%s").startswith("Import 4 memories")
    other = tmp_path / "other"
    invoke_json("init", other)
    text = invoke(*args[:-2], "--vault", other)
    assert text.exit_code == SKIPPED_EXIT
    assert "Empty.md:" in text.stdout
    assert "Unresolved links (2):" in text.stdout  # no vault memory to name here
    assert "Projects/Billing migration.md: [[Nowhere]]" in text.stdout


def test_an_import_that_skips_nothing_exits_0_and_so_does_running_it_again(tmp_path, source):
    for name in ("Empty.md", "Blank.md", "Only front matter.md"):
        (source / name).unlink()
    root = new_vault(tmp_path)
    args = ("import", source, "--format", "markdown", "--vault", root, "--json")
    assert invoke(*args).exit_code == 0
    again = invoke(*args)
    assert again.exit_code == 0, again.stdout
    assert json.loads(again.stdout)["counts"]["imported"] == 0


@pytest.mark.parametrize("prefix", ["/abs", "../out", "a/../b", ".hidden", "a\\b"])
def test_an_unusable_prefix_exits_2(tmp_path, source, prefix):
    root = new_vault(tmp_path)
    done = invoke("import", source, "--format", "markdown", "--prefix", prefix, "--vault", root)
    assert done.exit_code == 2, done.stdout
    assert "--prefix" in done.stderr


@pytest.mark.parametrize("hook", [False, True], ids=["plumbing", "git-commit"])
def test_a_commit_whose_message_outgrows_one_argument_is_made(vault_path, hook):
    # An import of a few thousand notes names each in a trailer: far past the 128 KiB
    # the system allows one command-line argument.
    if hook:  # a hook of the person's: commits go through `git commit`
        marker = vault_path.parent / "hook.ran"
        script = vault_path / ".git" / "hooks" / "post-commit"
        script.parent.mkdir(exist_ok=True)
        script.write_text(f'#!/bin/sh\necho ran >> "{marker}"\n')
        script.chmod(0o755)
    trailers = "".join(f"Memory-Id: work/area/topic/Note number {i}\n" for i in range(4000))
    message = f"Import 4000 memories from notes\n\n{trailers}Client: import"
    (vault_path / "n.md").write_text("# A note\n", encoding="utf-8")
    store = Store.open(vault_path)
    try:
        sha = store.commit_paths(["n.md"], message)
    finally:
        store.close()
    assert sha == git(vault_path, "rev-parse", "HEAD")
    assert git(vault_path, "log", "-1", "--format=%B") == message
    assert (vault_path.parent / "hook.ran").exists() == hook


def test_a_prefix_with_another_format_exits_2(tmp_path):
    root = new_vault(tmp_path)
    source = tmp_path / "memory.jsonl"
    source.write_text("", encoding="utf-8")
    done = invoke("import", source, "--format", "kg-jsonl", "--prefix", "x", "--vault", root)
    assert done.exit_code == 2
    assert "--prefix: applies to --format markdown only" in done.stderr
