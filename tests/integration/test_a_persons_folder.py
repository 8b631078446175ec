"""A person's own folder as they keep it: Obsidian's templates and daily notes, their own
ignore rules, their README, a folder inside another repository, what their .gitignore
leaves out. What is not a memory is not one anywhere: index, watcher, verify, doctor, init."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.cli_support import invoke, invoke_json
from tests.helpers import eventually
from vault_tool.engine.vault import Vault
from vault_tool.watcher import Watcher

TEMPLATE = "---\ncreated: {{date}}\ntags: {{tags}}\n---\n# {{title}}\n\n## Tasks\n"
FOLDER = {
    ".obsidian/templates.json": json.dumps({"folder": "Meta/Templates"}),
    ".obsidian/plugins/templater-obsidian/data.json": json.dumps(
        {"templates_folder": "Templater", "trigger_on_file_creation": True}
    ),
    "Meta/Templates/Daily.md": TEMPLATE,
    "Meta/Templates/Meeting.md": "# {{title}}\n\nAttendees of the meeting:\n",
    "Templater/Weekly.md": "---\ndate: <% tp.date.now() %>\n---\n# Week {{date}}\n",
    ".vaultignore": "# not memories\nArchive/\n*.excalidraw.md\n",
    "Archive/Old plan.md": "The old plan for the wombat survey.\n",
    "Drawing.excalidraw.md": "---\nexcalidraw-plugin: parsed\n---\nwombat sketch\n",
    "Notes/Wombats.md": "# Wombats\n\nWombats dig burrows with their claws.\n",
}
LEFT_OUT = [
    "Archive/Old plan.md",
    "Drawing.excalidraw.md",
    "Meta/Templates/Daily.md",
    "Meta/Templates/Meeting.md",
    "Templater/Weekly.md",
]


def make_folder(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


def hits(vault: Vault, query: str) -> list[str]:
    return [h["path"] for h in vault.search({"query": query, "top_k": 20})["selected_hits"]]


def test_templates_and_ignored_files_are_not_memories_anywhere(tmp_path: Path):
    root = tmp_path / "Notes"
    make_folder(root, FOLDER)

    result = invoke_json("init", root)

    assert result["memories"] == 1
    assert sorted(result["left_out"]) == LEFT_OUT
    assert "templates" in result["left_out"]["Meta/Templates/Daily.md"]
    assert ".vaultignore" in result["left_out"]["Archive/Old plan.md"]
    assert result["unreadable"] == {} and result["held_back"] == {}
    assert not set(LEFT_OUT) & set(git(root, "ls-files").splitlines())  # the person's to version
    said = invoke("init", tmp_path / "Other").stdout  # (a plain folder: nothing left out)
    assert "left out" not in said
    assert invoke("verify", "--vault", root).exit_code == 0
    assert invoke("verify", "--files", "--vault", root).exit_code == 0
    doctor = invoke("doctor", "--vault", root)
    assert doctor.exit_code == 0, doctor.stdout
    with Vault.open(root) as vault:
        assert hits(vault, "title") == [] and hits(vault, "attendees meeting") == []
        assert hits(vault, "wombat") == ["Notes/Wombats.md"]
        watcher = Watcher(vault).start()
        try:
            assert watcher.ready.wait(10)
            make_folder(root, {"Meta/Templates/Standup.md": TEMPLATE, "Archive/x.md": "wombat\n"})
            make_folder(root, {"Notes/Burrows.md": "# Burrows\n\nA wombat tunnel is 30 m.\n"})
            eventually(lambda: "Notes/Burrows.md" in git(root, "ls-files"))
            eventually(lambda: hits(vault, "tunnel") == ["Notes/Burrows.md"])
            assert sorted(hits(vault, "wombat")) == ["Notes/Burrows.md", "Notes/Wombats.md"]
            assert vault.problems() == {}
            assert "Standup" not in git(root, "ls-files") and "Archive" not in git(root, "ls-files")
        finally:
            watcher.stop()
        vault.reindex()
        assert vault.count() == 2
    assert invoke("doctor", "--vault", root).exit_code == 0


def test_a_note_git_ignores_is_not_a_memory_and_init_says_how_many(tmp_path: Path):
    root = tmp_path / "notes"
    make_folder(
        root,
        {
            ".gitignore": "Private/\nscratch.md\n",
            "Private/Diary.md": "Dear diary, the wombat ate my homework.\n",
            "scratch.md": "wombat scratch\n",
            "Wombats.md": "# Wombats\n\nWombats dig.\n",
        },
    )

    done = invoke("init", root)

    assert done.exit_code == 0, done.stdout + done.stderr
    assert "2 notes left out" in done.stdout and ".gitignore" in done.stdout
    with Vault.open(root) as vault:
        assert vault.count() == 1 and hits(vault, "wombat") == ["Wombats.md"]
    assert git(root, "status", "--porcelain") == ""
    # A repository of the person's own: what its .gitignore leaves out is not indexed either.
    other = tmp_path / "repo"
    make_folder(other, {".gitignore": "*.private.md\n", "a.md": "# A\n\nwombat\n"})
    git(other, "init", "-q", "-b", "main")
    make_folder(other, {"c.private.md": "# C\n\nwombat, committed all the same\n"})
    git(other, "add", "-A")
    git(other, "add", "-f", "c.private.md")  # (a file git tracks is never one it ignores)
    git(other, "-c", "user.name=P", "-c", "user.email=p@x", "commit", "-qm", "mine")
    make_folder(other, {"b.private.md": "wombat private\n"})
    result = invoke_json("init", other)
    assert result["memories"] == 2 and list(result["left_out"]) == ["b.private.md"]


def test_init_inside_another_repository_asks_for_a_flag(tmp_path: Path):
    outer = tmp_path / "project"
    make_folder(outer, {"README.md": "# A project\n"})
    git(outer, "init", "-q", "-b", "main")
    inside = outer / "docs" / "notes"

    refused = invoke("init", inside)

    assert refused.exit_code != 0
    said = refused.stdout + refused.stderr
    assert str(outer) in said and "--nested" in said
    assert not (inside / ".git").exists()
    assert invoke_json("init", "--nested", inside)["memories"] == 0
    assert (inside / ".git").is_dir()


def test_init_inside_a_repository_that_ignores_the_folder_needs_no_flag(tmp_path: Path):
    outer = tmp_path / "project"
    make_folder(outer, {"README.md": "# A project\n", ".gitignore": "demo-vault/\n"})
    git(outer, "init", "-q", "-b", "main")

    made = invoke_json("init", "--sample", outer / "demo-vault")

    assert made["memories"] == 28 and (outer / "demo-vault" / ".git").is_dir()
    assert git(outer, "status", "--porcelain").split() == ["??", ".gitignore", "??", "README.md"]


def test_a_daily_note_is_titled_by_its_file_name_and_dated_by_its_front_matter(tmp_path: Path):
    root = tmp_path / "notes"
    make_folder(
        root,
        {
            "Daily/2026-11-30.md": "---\ndate: 2026-11-30\n---\n## Tasks\n\n- [ ] call Lena\n",
            "Daily/2026-12-01.md": "## Tasks\n\n- [ ] feed the wombat\n",
            "Meeting.md": "---\ncreated: 2025-02-03T09:30\n---\n# Kickoff with Lena\n\nAgenda\n",
            "Linked.md": '---\ncreated: "[[2025-04-05]]"\n---\nSee the daily note.\n',
        },
    )
    invoke_json("init", root)
    with Vault.open(root) as vault:
        assert vault.read("Daily/2026-12-01")["title"] == "2026-12-01"
        daily = vault.read("Daily/2026-11-30")
        assert daily["title"] == "2026-11-30" and daily["created"] == "2026-11-30"
        meeting = vault.read("Meeting")
        assert meeting["title"] == "Kickoff with Lena" and meeting["created"] == "2025-02-03T09:30"
        assert vault.read("Linked")["created"] == "2025-04-05"
    text = (root / "Daily/2026-11-30.md").read_text()
    assert text == "---\ndate: 2026-11-30\n---\n## Tasks\n\n- [ ] call Lena\n"  # read, not written


def test_the_root_readme_is_said_to_be_no_memory_unless_the_person_keeps_it_one(tmp_path):
    root = tmp_path / "notes"
    make_folder(
        root,
        {
            "README.md": "# How I keep notes\n\nOne wombat a day.\n",
            "a.md": "wombat\n",
            "p.png": "x",
        },
    )
    result = invoke_json("init", root)
    assert result["attachments_left_out"] == 1  # the png: the README is not an attachment
    assert result["readme"] == "README.md"
    with Vault.open(root) as vault:
        assert hits(vault, "wombat") == ["a.md"]
    said = invoke("init", tmp_path / "b" / "again")  # (no README: nothing said of one)
    assert "README" not in said.stdout
    mine = tmp_path / "mine"
    make_folder(
        mine,
        {
            "README.md": "# How I keep notes\n\nOne wombat a day.\n",
            ".vaultignore": "!/README.md\n",
        },
    )
    kept = invoke("init", mine)
    assert kept.exit_code == 0 and "README" not in kept.stdout
    with Vault.open(mine) as vault:
        assert hits(vault, "wombat") == ["README.md"]
        make_folder(mine, {"README.md": "# How I keep notes\n\nOne numbat a day.\n"})
        assert [c.paths for c in vault.commit_hand_edits().commits] == [["README.md"]]
        assert hits(vault, "numbat") == ["README.md"]
    assert "README.md" in git(mine, "ls-files")
    make_folder(tmp_path / "fourth", {"README.md": "# Readme\n"})
    told = invoke("init", tmp_path / "fourth").stdout
    assert "README.md is the folder's readme, not a memory" in told and "!/README.md" in told


def test_a_file_left_out_later_takes_its_recorded_problem_with_it(tmp_path: Path):
    root = tmp_path / "notes"
    make_folder(root, {"Wombats.md": "# Wombats\n\nThey dig.\n"})
    invoke_json("init", root)
    make_folder(root, {"Templates/Daily.md": TEMPLATE})  # (before the folder had a rule)
    with Vault.open(root) as vault:
        assert list(vault.problems()) == ["Templates/Daily.md"]
    make_folder(root, {".vaultignore": "Templates/\n"})
    with Vault.open(root) as vault:
        assert vault.problems() == {}
