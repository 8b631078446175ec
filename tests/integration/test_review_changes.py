"""`vault-tool review`: what a range of commits changed in meaning, in its three outputs
(terminal, --json, --markdown), for each kind of change. Real git, real index, the CLI
in process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli_support import invoke
from tests.clones import fact, memory_args, team
from tests.helpers import create_args, git
from vault_tool.engine.vault import Vault


def review(vault_path: Path, *args: str) -> tuple[dict[str, Any], str, str]:
    """(the --json data, the terminal text, the Markdown) of one review."""
    outputs = []
    for extra in (["--json"], [], ["--markdown"]):
        done = invoke("review", *args, "--vault", vault_path, *extra)
        assert done.exit_code == 0, done.stdout + done.stderr
        outputs.append(done.stdout)
    return json.loads(outputs[0]), outputs[1], outputs[2]


def head(path: Path) -> str:
    return git(path, "rev-parse", "HEAD")


def update(vault: Vault, made: dict[str, Any], **delta: Any) -> dict[str, Any]:
    """An update of the memory create_args() made, its delta changed as given."""
    memory_id = made["memory_id"]
    current = vault.read(memory_id)
    args = create_args(
        delta.pop("title", current["title"]), body=delta.pop("body", "She took it over.")
    )
    args["semantic_delta"].update(delta)
    version = git(vault.root, "log", "-1", "--format=%H", "--", current["path"])
    return vault.remember(
        {**args, "mode": "update", "memory_id": memory_id, "expected_version_id": version}
    )


def test_create_shows_every_fact_entity_and_tag(vault: Vault, vault_path: Path):
    base = head(vault_path)
    made = vault.remember(create_args())
    data, text, markdown = review(vault_path, f"{base}..HEAD")
    (entry,) = data["memories"]
    assert entry["kind"] == "created" and entry["memory_id"] == made["memory_id"]
    assert entry["changes"]["facts"]["added"] == [
        {"subject": "Ana", "predicate": "owns", "object": "billing service"}
    ]
    assert [e["n"] for e in entry["changes"]["entities"]["added"]] == ["Ana", "billing service"]
    assert entry["changes"]["tags"] == {"added": ["billing"]}
    assert data["clients"] == {"pytest": 1} and data["facts_changed"] == 1
    assert "+ Ana owns billing service" in text and "created decision: Ana owns" in text
    assert "| + | Ana owns billing service | decision: Ana owns the billing service |" in markdown
    assert "- **created** decision: Ana owns the billing service" in markdown


UPDATES = {
    "object": (
        {"facts": [fact("Ana", "owns", "Ana")]},
        lambda c: c["facts"]["changed"][0]["what"] == ["object"],
        "~ Ana owns billing service -> Ana owns Ana",
    ),
    "validity": (
        {"facts": [fact("Ana", "owns", "billing service", valid_from="2026-03-01")]},
        lambda c: c["facts"]["changed"][0]["what"] == ["validity"],
        "-> Ana owns billing service (valid from 2026-03-01)",
    ),
    "fact removed": (
        {"facts": [fact("billing service", "run_by", "Ana")]},
        lambda c: (
            c["facts"]["removed"][0]["object"] == "billing service"
            and c["facts"]["added"][0]["predicate"] == "run_by"
        ),
        "- Ana owns billing service",
    ),
    "gloss": (
        {
            "entities": [
                {"n": "Ana", "kind": "person", "is": "staff engineer"},
                {"n": "billing service", "kind": "service", "is": "the invoice service"},
            ]
        },
        lambda c: [e["n"] for e in c["entities"]["reglossed"]] == ["Ana", "billing service"],
        "Ana re-glossed: person: backend engineer on the platform team -> person: staff engineer",
    ),
    "tags": (
        {"tags": ["money"]},
        lambda c: c["tags"] == {"added": ["money"], "removed": ["billing"]},
        "+ tag money",
    ),
    "type": (
        {"memory_type": "fact"},
        lambda c: c["fields"]["memory_type"] == {"before": "decision", "after": "fact"},
        "memory_type decision -> fact",
    ),
    "title": (
        {"title": "Ana runs billing"},
        lambda c: c["fields"]["title"]["after"] == "Ana runs billing",
        "title Ana owns the billing service -> Ana runs billing",
    ),
    "key": (
        {"key": "billing-owner"},
        lambda c: c["fields"]["key"] == {"before": None, "after": "billing-owner"},
        "key (none) -> billing-owner",
    ),
    "expiry": (
        {"expires_at": "2030-01-01T00:00:00Z"},
        lambda c: c["fields"]["expires_at"]["after"] == "2030-01-01T00:00:00Z",
        "expires_at (none) -> 2030-01-01T00:00:00Z",
    ),
    "body": (
        {"body": "She handed it to Bo."},
        lambda c: (
            [(s["removed"], s["added"]) for s in c["body"]]
            == [("took", "handed"), ("over.", "to Bo.")]
        ),
        "…billing service She [-took-] {+handed+}",
    ),
}


@pytest.mark.parametrize("name", list(UPDATES))
def test_update_of_each_field_is_one_change(vault: Vault, vault_path: Path, name: str):
    made = vault.remember(create_args())
    base = head(vault_path)
    delta, check, line = UPDATES[name]
    update(vault, made, **dict(delta))
    data, text, markdown = review(vault_path, f"{base}..HEAD")
    (entry,) = data["memories"]
    assert entry["kind"] == "updated"
    assert check(entry["changes"]), entry["changes"]
    assert line in text
    signed = line[:2] in ("~ ", "+ ", "- ")
    words = {"[-": "~~", "-]": "~~", "{+": "**", "+}": "**"}
    for old, new in words.items():
        line = line.replace(old, new)
    assert (line[2:] if signed else line) in markdown.replace("\\", "")


def test_supersession_is_shown(vault: Vault, vault_path: Path):
    old = vault.remember(create_args("Bo owns billing"))
    base = head(vault_path)
    made = vault.remember(
        {
            **create_args(),
            "semantic_delta": {**create_args()["semantic_delta"], "supersedes": [old["memory_id"]]},
        }
    )
    data, text, markdown = review(vault_path, f"{base}..HEAD")
    entry = next(e for e in data["memories"] if e["memory_id"] == made["memory_id"])
    assert entry["changes"]["supersedes"] == {"added": [old["memory_id"]]}
    assert f"+ supersedes {old['memory_id']}" in text
    assert f"supersedes {old['memory_id']}" in markdown


def test_move_delete_and_restore(vault: Vault, vault_path: Path):
    made = vault.remember(create_args())
    base = head(vault_path)
    (vault_path / "teams").mkdir()
    git(vault_path, "mv", made["path"], "teams/ana.md")
    git(vault_path, "commit", "-q", "-m", "Move by hand")
    data, text, markdown = review(vault_path, f"{base}..HEAD")
    (entry,) = data["memories"]
    assert (entry["kind"], entry["old_path"], entry["path"]) == (
        "moved",
        made["path"],
        "teams/ana.md",
    )
    assert entry["changes"] == {}
    assert (
        f"moved decision: Ana owns the billing service  {made['memory_id']}, "
        f"{made['path']} -> teams/ana.md" in text
    )
    assert "**moved**" in markdown

    vault.catch_up()
    moved = head(vault_path)
    version = git(vault_path, "log", "-1", "--format=%H", "--", "teams/ana.md")
    vault.remember(
        {"mode": "delete", "memory_id": made["memory_id"], "expected_version_id": version}
    )
    data, text, markdown = review(vault_path, f"{moved}..HEAD")
    (entry,) = data["memories"]
    assert entry["kind"] == "deleted"
    assert entry["changes"]["facts"]["removed"][0]["object"] == "billing service"
    assert "deleted decision" in text and "**deleted**" in markdown

    deleted = head(vault_path)
    vault.restore(made["memory_id"])
    data, text, markdown = review(vault_path, f"{deleted}..HEAD")
    (entry,) = data["memories"]
    assert entry["kind"] == "restored"
    assert "restored decision" in text and "**restored**" in markdown
    # Over the whole range, deleted then restored in place: a restore.
    whole, _, _ = review(vault_path, f"{moved}..HEAD")
    assert [e["kind"] for e in whole["memories"]] == ["restored"]


def test_batch_is_one_commit_of_many_memories(vault: Vault, vault_path: Path):
    base = head(vault_path)
    items = [
        {"content_md": f"# {t}\n\nText.\n", "semantic_delta": create_args(t)["semantic_delta"]}
        for t in ("One", "Two", "Three")
    ]
    vault.remember({"mode": "create", "items": items})
    data, text, markdown = review(vault_path, f"{base}..HEAD")
    assert data["commits"] == 1
    assert [(e["kind"], e["title"]) for e in data["memories"]] == [
        ("created", t) for t in ("One", "Three", "Two")
    ]
    assert text.count("created decision") == 3 and markdown.count("**created**") == 3


def test_an_agent_rewriting_a_persons_note_is_flagged(vault: Vault, vault_path: Path):
    (vault_path / "ana.md").write_text("# Ana owns the billing service\n\nMy own words.\n")
    vault.commit_hand_edits()
    base = head(vault_path)
    hand = review(vault_path, "HEAD~1..HEAD")[0]
    assert [(e["kind"], e["clients"]) for e in hand["memories"]] == [("created", ["hand-edit"])]
    version = git(vault_path, "log", "-1", "--format=%H", "--", "ana.md")
    args = create_args(body="An agent's words.")
    vault.remember({**args, "mode": "update", "memory_id": "ana", "expected_version_id": version})
    data, text, markdown = review(vault_path, f"{base}..HEAD")
    (entry,) = data["memories"]
    assert entry["flags"] == [
        {"kind": "persons_note_rewritten", "message": "pytest rewrote a person's note"}
    ]
    assert "Flags" in text and "pytest rewrote a person's note" in text
    assert "### Flags" in markdown


def test_contradiction_redaction_and_broken_links_are_flagged(vault: Vault, vault_path: Path):
    vault.remember(
        memory_args(
            "Staging region", "Where staging runs.", [fact("staging", "runs_in", "eu-west-1")], []
        )
    )
    linked = vault.remember(create_args("Old runbook"))
    (vault_path / "index.md").write_text("# Index\n\nSee [[Old runbook]].\n")
    vault.commit_hand_edits()
    base = head(vault_path)
    vault.remember(
        memory_args(
            "Staging moved",
            "Token ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8 here.",
            [fact("staging", "runs_in", "us-east-1")],
            [],
        )
    )
    version = git(vault_path, "log", "-1", "--format=%H", "--", linked["path"])
    vault.remember(
        {"mode": "delete", "memory_id": linked["memory_id"], "expected_version_id": version}
    )
    data, text, markdown = review(vault_path, f"{base}..HEAD")
    flags = {f["kind"]: f["message"] for e in data["memories"] for f in e["flags"]}
    assert flags["contradiction"].startswith(
        "staging runs_in us-east-1 contradicts staging runs_in eu-west-1 in Staging region"
    )
    assert flags["redacted"] == "1 secret(s) redacted on the way in"
    assert flags["linked_deleted"] == "deleted while 1 note(s) link to it: index.md"
    for message in flags.values():
        assert message[:30] in text
        assert message[:20] in markdown.replace("\\", "")


def test_merge_shows_the_merged_result_and_values_set_aside(tmp_path: Path):
    _, (one, two) = team(tmp_path)
    with Vault.open(one, client="agent-one") as vault:
        made = vault.remember(
            memory_args(
                "Wombats dig burrows",
                "They dig at night.",
                [fact("wombats", "dig", "burrows")],
                ["wombats"],
            )
        )
        assert vault.team.sync().status == "synced"
    with Vault.open(two, client="agent-two") as vault:
        assert vault.team.sync().status == "synced"
        update(vault, made, title="Wombats dig at dusk", tags=["night"])
    with Vault.open(one, client="agent-one") as vault:
        update(vault, made, title="Wombats dig at dawn", tags=["day"])
        assert vault.team.sync().status == "synced"
    with Vault.open(two, client="agent-two") as vault:
        mine = head(two)
        vault.team.sync()
        assert len(git(two, "log", "-1", "--format=%P").split()) == 2
    data, text, markdown = review(two, f"{mine}..HEAD")
    (entry,) = data["memories"]
    assert entry["merged"] is True
    assert [f["kind"] for f in entry["flags"]] == ["merge_conflicts"]
    assert "merged" in text and "merge_conflicts" in markdown.replace("\\", "")


def test_session_of_fifty_writes_shows_every_fact_change_in_the_first_screen(
    vault: Vault, vault_path: Path
):
    base = head(vault_path)
    expected = []
    made = []
    for n in range(25):
        title = f"Service {n} owner"
        made.append(
            vault.remember(
                memory_args(
                    title, f"Owner of service {n}.", [fact(f"svc{n}", "owned_by", f"team{n}")], []
                )
            )
        )
        expected.append(f"+ svc{n} owned_by team{n}")
    for n in range(25):
        current = vault.read(made[n]["memory_id"])
        args = memory_args(
            f"Service {n} owner",
            f"Owner of service {n}, since March.",
            [fact(f"svc{n}", "owned_by", f"group{n}")],
            [],
        )
        version = git(vault_path, "log", "-1", "--format=%H", "--", current["path"])
        vault.remember(
            {
                **args,
                "mode": "update",
                "memory_id": made[n]["memory_id"],
                "expected_version_id": version,
            }
        )
        expected[n] = f"+ svc{n} owned_by group{n}"
    data, text, markdown = review(vault_path, f"{base}..HEAD")
    assert data["commits"] == 50 and len(data["memories"]) == 25
    first_screen = text.splitlines()[:40]
    facts = [line.strip().split("  ")[0] for line in first_screen if line.startswith("  + ")]
    assert facts == expected  # every fact, in the order the session wrote them
    table = [line for line in markdown.splitlines() if line.startswith("| + |")]
    assert [line.split(" | ")[1].replace("\\", "") for line in table] == [e[2:] for e in expected]


def test_filters_and_a_bad_range(vault: Vault, vault_path: Path):
    base = head(vault_path)
    vault.remember(create_args())
    other = Vault.open(vault_path, client="other-agent")
    try:
        other.remember(create_args("Bo owns payments"))
    finally:
        other.close()
    data, _, _ = review(vault_path, f"{base}..HEAD", "--client", "other-agent")
    assert [e["title"] for e in data["memories"]] == ["Bo owns payments"]
    data, _, _ = review(vault_path, "--since", "1d")
    assert len(data["memories"]) == 2
    done = invoke("review", "nope..HEAD", "--vault", vault_path)
    assert done.exit_code == 2 and "fix:" in done.stderr
    done = invoke("review", "--vault", vault_path)
    assert done.exit_code == 2 and "vault-tool review --since 1d" in done.stderr
