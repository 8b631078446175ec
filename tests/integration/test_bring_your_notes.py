"""An existing folder of notes (an Obsidian vault) made a vault in place: nothing rewritten,
every note searchable, its git history kept or begun with one commit."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from tests.cli_support import invoke_json
from vault_tool.engine.vault import Vault

OBSIDIAN_FOLDER = {
    # Titles come from a front matter title, an H1 the note opens with, else the file name
    # (a lower heading is a section's, as Obsidian shows it).
    "Daily/2026-11-30.md": "Standup: #billing migration is blocked on [[Lena]].\n",
    "Projects/Alpha/Kickoff notes.md": (
        "Met with [[Lena|the DBA]] about the ![[diagram.png]] and the [[Lena#Tools]].\n\n"
        "She prefers psql over pgAdmin. #project/alpha #people\n"
    ),
    "People/Lena.md": (
        "---\naliases: [Lena K, LK]\ntags: people, dba\ncreated: 2025-03-01\n"
        "status: draft\n---\nLena runs the Postgres clusters.\n\n## Tools\n\n- psql\n"
    ),
    "Reading/Books.md": "---\ntitle: Books to read\ntype: note\n---\n- Designing Data Systems\n",
    "Inbox.md": "## Quick capture\n\nRemember the wombat burrow survey.\n",
    "Setext.md": "Wombat facts\n============\n\nThey have cube-shaped droppings.\n",
}
NOT_NOTES = {
    ".obsidian/app.json": '{"theme": "dark"}\n',
    ".obsidian/workspace.json": "{}\n",
    ".trash/old idea.md": "An old idea.\n",
    "Projects/Alpha/diagram.png": "\x89PNG not really\n",
    "Canvas.canvas": '{"nodes": []}\n',
}
TITLES = {
    "Daily/2026-11-30.md": "2026-11-30",
    "Projects/Alpha/Kickoff notes.md": "Kickoff notes",
    "People/Lena.md": "Lena",
    "Reading/Books.md": "Books to read",
    "Inbox.md": "Inbox",
    "Setext.md": "Wombat facts",
}


def make_folder(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def digests(root: Path, files: dict[str, str]) -> dict[str, str]:
    return {rel: hashlib.sha256((root / rel).read_bytes()).hexdigest() for rel in files}


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


def test_an_obsidian_folder_becomes_a_vault_in_place(tmp_path: Path):
    root = tmp_path / "Notes"
    make_folder(root, {**OBSIDIAN_FOLDER, **NOT_NOTES})
    before = digests(root, {**OBSIDIAN_FOLDER, **NOT_NOTES})

    result = invoke_json("init", root)

    assert result["memories"] == len(OBSIDIAN_FOLDER)
    assert result["kept_git_history"] is False and result["held_back"] == {}
    assert result["attachments_left_out"] == 2  # the png and the canvas: said, not hidden
    assert digests(root, {**OBSIDIAN_FOLDER, **NOT_NOTES}) == before  # no byte changed
    assert git(root, "log", "--format=%s").splitlines() == ["Initialize vault"]
    committed = set(git(root, "ls-files").splitlines())
    assert set(OBSIDIAN_FOLDER) <= committed
    assert not committed & set(NOT_NOTES)  # attachments and dot folders are the person's
    # The notes went into one pack, not a loose object each (no automatic gc follows).
    blobs = [git(root, "rev-parse", f"HEAD:{rel}").strip() for rel in OBSIDIAN_FOLDER]
    objects = root / ".git" / "objects"
    assert not [b for b in blobs if (objects / b[:2] / b[2:]).exists()]
    assert len(list((objects / "pack").glob("*.pack"))) == 1
    assert git(root, "fsck", "--strict", "--no-dangling") == ""
    with Vault.open(root) as vault:
        for rel, title in TITLES.items():
            hits = vault.search({"query": title})["selected_hits"]
            assert hits and hits[0]["path"] == rel, (title, hits[:2])
        words = vault.search({"query": "cube-shaped droppings"})["selected_hits"]
        assert words[0]["title"] == "Wombat facts"
        tagged = vault.search({"query": "migration", "tags": ["billing"]})["selected_hits"]
        assert [h["path"] for h in tagged] == ["Daily/2026-11-30.md"]  # an inline #tag
        lena = vault.read("People/Lena")
        assert lena["semantic_delta"]["tags"] == ["people", "dba"]  # tags as one string
        assert lena["created"] == "2025-03-01"


def test_a_folder_with_its_own_history_keeps_it_and_gains_one_commit(tmp_path: Path):
    root = tmp_path / "notes"
    make_folder(root, {**OBSIDIAN_FOLDER, ".gitignore": ".obsidian/workspace.json\n"})
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "-c", "user.name=P", "-c", "user.email=p@x", "commit", "-qm", "My notes")
    before = digests(root, OBSIDIAN_FOLDER)

    result = invoke_json("init", root)

    assert result["kept_git_history"] is True and result["memories"] == len(OBSIDIAN_FOLDER)
    assert git(root, "log", "--format=%s").splitlines() == ["Initialize vault", "My notes"]
    added = git(root, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(added) == [".gitattributes", ".gitignore", ".vault/config.toml"]
    ignore = (root / ".gitignore").read_text()
    assert ignore.startswith(".obsidian/workspace.json\n")  # the person's lines stay first
    assert ".vault/index/" in ignore and ".vault/run/" in ignore
    assert digests(root, OBSIDIAN_FOLDER) == before
    assert git(root, "status", "--porcelain") == ""  # the caches stay out of git


def test_a_note_holding_a_secret_stays_out_of_the_first_commit_and_is_named(tmp_path: Path):
    root = tmp_path / "notes"
    key = "AKIA" + "IOSFODNN7EXAMPLE"
    files = {"Keys.md": f"the deploy key is {key}\n", "Plain.md": "plain\n", "Empty.md": "\n"}
    make_folder(root, files)

    result = invoke_json("init", root)

    assert sorted(result["held_back"]) == ["Empty.md", "Keys.md"]
    assert result["unreadable"] == {}  # each file is named once, under why it stays out
    assert "secret" in result["held_back"]["Keys.md"]
    assert key not in git(root, "log", "-p", "--all")
    assert "Keys.md" not in git(root, "ls-files")
    assert (root / "Keys.md").read_text() == f"the deploy key is {key}\n"  # left as it was


def test_an_agents_update_of_a_persons_note_keeps_its_own_values_and_still_reads(tmp_path):
    root = tmp_path / "notes"
    note = OBSIDIAN_FOLDER["People/Lena.md"].replace(
        "created: 2025-03-01", "created: last spring\nsource: https://example.com/clip"
    )
    make_folder(root, {"Lena.md": note})
    invoke_json("init", root)
    with Vault.open(root, client="agent") as vault:
        read = vault.read("Lena")
        updated = vault.remember(
            {
                "mode": "update",
                "memory_id": "Lena",
                "expected_version_id": read["version_id"],
                "content_md": "# Lena\n\nLena runs the Postgres clusters and the backups.\n",
                "semantic_delta": {
                    "memory_type": "fact",
                    "title": "Lena",
                    "entities": [{"n": "Lena", "kind": "person", "is": "the team's DBA"}],
                    "facts": [{"subject": "Lena", "predicate": "runs", "object": "Lena"}],
                    "tags": ["people"],
                },
            }
        )
        text = (root / "Lena.md").read_text()
        for kept in ("status: draft", "Lena K", "created: last spring", "example.com/clip"):
            assert kept in text  # the person's own values stay
        assert vault.problems() == {}
        again = vault.read(updated["memory_id"])  # and the file reads as a memory after
        assert again["memory_type"] == "fact" and "backups" in again["content_md"]
        # The update gave the note an id; the path it was known by still finds it.
        assert updated["memory_id"] != "Lena"
        assert vault.read("Lena")["memory_id"] == updated["memory_id"]
        assert len(vault.history("Lena")) == 2


def test_a_note_holding_a_secret_is_not_searchable_either(tmp_path: Path):
    # Catch-up (any CLI read, a server's start) reads files git does not hold as it is:
    # one holding a secret is kept out of the index too, as a hand edit of it would be.
    root = tmp_path / "notes"
    key = "AKIA" + "IOSFODNN7EXAMPLE"
    make_folder(root, {"Keys.md": f"the deploy key is {key}\n", "Plain.md": "plain\n"})
    invoke_json("init", root)
    with Vault.open(root) as vault:
        assert vault.at_path("Keys.md") is None
        assert "secret" in vault.problems()["Keys.md"]["reason"]
        assert vault.search({"query": "deploy key"})["selected_hits"] == []
        assert vault.at_path("Plain.md") is not None


def test_a_secret_a_person_commits_with_git_is_searchable_only_once_it_is_gone(tmp_path: Path):
    root = tmp_path / "notes"
    make_folder(root, {"Plain.md": "plain\n"})
    invoke_json("init", root)
    key = "AKIA" + "IOSFODNN7EXAMPLE"
    make_folder(root, {"Keys.md": f"# Deploy keys\n\nthe deploy key is {key}\n"})
    git(root, "add", "Keys.md")
    git(root, "-c", "user.name=P", "-c", "user.email=p@x", "commit", "-qm", "Keys")  # by hand
    with Vault.open(root) as vault:
        assert vault.search({"query": "deploy keys"})["selected_hits"] == []
        assert "committed to git" in vault.problems()["Keys.md"]["reason"]
        make_folder(root, {"Keys.md": f"# Deploy keys\n\nthe deploy key is {key}, for now\n"})
        vault.commit_hand_edits()  # (an edit that keeps it: still the history's to purge)
        assert "git filter-repo" in vault.problems()["Keys.md"]["hint"]
        make_folder(root, {"Keys.md": "# Deploy keys\n\nthe deploy key is in the vault\n"})
        vault.commit_hand_edits()
        assert [h["path"] for h in vault.search({"query": "deploy keys"})["selected_hits"]] == [
            "Keys.md"
        ]
        assert vault.problems() == {}


def test_a_fact_only_gits_history_holds_is_shown_with_its_secret_redacted(tmp_path: Path):
    root = tmp_path / "notes"
    url = "postgres://deploy:Tr0ub4dor-3@db.example.com/prod"
    facts = "facts:\n  - subject: billing db\n    predicate: reached_at\n    object: {}\n"
    note = "---\n" + facts + "---\n# Billing db\n\nWhere the billing database lives.\n"
    make_folder(root, {"Billing db.md": note.format(url)})
    git(root.parent, "init", "-q", "-b", "main", str(root))
    git(root, "add", "-A")
    git(root, "-c", "user.name=P", "-c", "user.email=p@x", "commit", "-qm", "Billing db")
    invoke_json("init", root)
    make_folder(root, {"Billing db.md": note.format("db.example.com")})  # the secret taken out
    with Vault.open(root) as vault:
        vault.commit_hand_edits()
        history = vault.views.facts("billing db", include_superseded=True)
    objects = [f["object"] for f in history["facts"]]
    assert "db.example.com" in objects and len(objects) == 2
    assert "Tr0ub4dor-3" not in str(history)
