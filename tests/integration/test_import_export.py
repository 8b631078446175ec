"""Import and export against a real git repository and a real Whoosh index.

The fixtures under tests/fixtures/import/ follow the public formats: an Obsidian-style folder,
a Basic Memory project, the MCP memory server's memory.jsonl, and our own export.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import create_args, git, snapshot
from tests.import_fixtures import SECRETS, SOURCES, materialise
from vault_tool.core.memory import parse
from vault_tool.engine.vault import Vault
from vault_tool.ops.transfer import export_lines, export_records, import_source
from vault_tool.storage.store import Store

REPORT_KEYS = {
    "source",
    "format",
    "dry_run",
    "version_id",
    "subject",
    "imported",
    "skipped",
    "redactions",
    "notes",
    "counts",
}


def commits(path: Path) -> int:
    return int(git(path, "rev-list", "--count", "HEAD"))


def by_title(vault: Vault, report: dict) -> dict[str, tuple[dict, object]]:
    """title -> (addressed read, parsed file) of every memory the import wrote."""
    out = {}
    for entry in report["imported"]:
        read = vault.read(entry["memory_id"])
        memory = parse((vault.root / read["path"]).read_text(encoding="utf-8"), read["path"])
        out[read["title"]] = (read, memory)
    return out


def reasons(report: dict) -> dict[str, str]:
    return {s["item"]: s["reason"] for s in report["skipped"]}


# --- one commit per import ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "imported", "skipped", "name"),
    [
        ("markdown", 5, 1, "markdown"),
        ("basic-memory", 4, 1, "basic-memory"),
        ("kg-jsonl", 4, 6, "memory.jsonl"),
        ("jsonl", 4, 3, "export.jsonl"),
    ],
)
def test_each_format_imports_its_fixture_as_one_commit_with_the_import_subject(
    vault, vault_path, tmp_path, fmt, imported, skipped, name
):
    before = commits(vault_path)
    report = import_source(vault, materialise(fmt, tmp_path), fmt)
    assert set(report) >= REPORT_KEYS
    assert report["counts"]["imported"] == imported == len(report["imported"])
    assert report["counts"]["skipped"] == skipped == len(report["skipped"])
    assert all(s["reason"] for s in report["skipped"])
    assert commits(vault_path) == before + 1
    assert report["version_id"] == git(vault_path, "rev-parse", "HEAD")
    message = git(vault_path, "log", "-1", "--format=%B")
    assert message.splitlines()[0] == f"Import {imported} memories from {name}"
    assert "Client: import" in message.splitlines()
    for entry in report["imported"]:
        assert f"Memory-Id: {entry['memory_id']}" in message
    changed = git(vault_path, "show", "--name-only", "--format=", "HEAD").splitlines()
    assert sorted(changed) == sorted(e["path"] for e in report["imported"])
    assert git(vault_path, "status", "--porcelain", "--untracked-files=all") == ""


@pytest.mark.parametrize("fmt", list(SOURCES))
def test_reimporting_a_source_skips_every_item_and_makes_no_commit(
    vault, vault_path, tmp_path, fmt
):
    source = materialise(fmt, tmp_path)
    first = import_source(vault, source, fmt)
    state = snapshot(vault_path)
    again = import_source(vault, source, fmt)
    assert snapshot(vault_path) == state
    assert again["version_id"] is None and again["imported"] == []
    skipped_again = reasons(again)
    for entry in first["imported"]:
        assert skipped_again[entry["item"]].startswith("already in the vault")
        assert entry["memory_id"] in skipped_again[entry["item"]]


def test_a_changed_item_with_an_id_already_in_the_vault_is_skipped(vault, vault_path, tmp_path):
    source = materialise("jsonl", tmp_path)
    import_source(vault, source, "jsonl")
    first_line = json.loads(source.read_text(encoding="utf-8").splitlines()[0])
    first_line["content_md"] += "\nA later edit.\n"
    changed = tmp_path / "changed.jsonl"
    changed.write_text(json.dumps(first_line) + "\n", encoding="utf-8")
    head = git(vault_path, "rev-parse", "HEAD")
    report = import_source(vault, changed, "jsonl")
    assert report["imported"] == []
    assert "a memory with id 01JDXK3M6Q8W1J4T0P9R7V2B5C is at" in report["skipped"][0]["reason"]
    assert git(vault_path, "rev-parse", "HEAD") == head


def test_dry_run_returns_the_diff_and_writes_nothing(vault, vault_path, tmp_path):
    source = materialise("markdown", tmp_path)
    state = snapshot(vault_path)
    indexed = vault.count()
    report = import_source(vault, source, "markdown", dry_run=True)
    assert snapshot(vault_path) == state
    assert vault.count() == indexed
    assert report["dry_run"] is True and report["version_id"] is None
    assert report["counts"]["imported"] == 5
    assert "+++ b/Projects/Billing migration.md" in report["diff"]
    assert "+title: Billing migration plan" in report["diff"]
    assert import_source(vault, source, "markdown")["counts"]["imported"] == 5


def test_secrets_in_every_fixture_never_reach_git_history(vault, vault_path, tmp_path):
    redacted = []
    for fmt in SOURCES:
        report = import_source(vault, materialise(fmt, tmp_path / fmt), fmt)
        redacted.extend((r["kind"], r["field"]) for r in report["redactions"])
    history = git(vault_path, "log", "-p", "--all")
    for secret in SECRETS.values():
        assert secret not in history
        assert all(secret not in p.read_text() for p in vault_path.rglob("*.md"))
    assert "[REDACTED:aws-access-key-id]" in history
    kinds = {kind for kind, _ in redacted}
    assert kinds == {"url-credentials", "aws-access-key-id", "github-token", "npm-token"}
    assert ("url-credentials", "entities[2].n") in redacted  # a Basic Memory observation


# --- the mappings ------------------------------------------------------------------------


def test_markdown_notes_keep_title_tags_dates_and_foreign_front_matter(vault, tmp_path):
    report = import_source(vault, materialise("markdown", tmp_path), "markdown")
    memories = by_title(vault, report)
    read, memory = memories["Billing migration plan"]
    assert read["memory_type"] == "note"
    assert read["content_md"].startswith("# Billing migration\n")
    assert list(memory.tags) == ["billing", "q3-roadmap", "infra/payments"]
    assert {"planning", "todo/later"} <= set(memory.inline_tags)  # read from the body
    assert memory.created == "2024-03-05T09:30:00Z"
    assert memory.extra["aliases"] == ["billing move"]
    assert memory.extra["status"] == "in-progress"  # a person's own status, as written
    assert memory.entities == () and memory.facts == ()
    assert "[[Billing Service]]" in read["content_md"]
    daily, daily_memory = memories["2024-03-06"]
    assert daily["content_md"].startswith("Standup notes.")  # the body as it was: no H1 added
    assert daily["path"] == "Daily/2024-03-06.md"
    assert list(daily_memory.inline_tags) == ["gotcha"]
    _, idea = memories["Cache invoice PDFs"]
    assert list(idea.tags) == ["idea", "backlog"]
    assert idea.created == "2024-02-01T00:00:00Z"
    skipped = reasons(report)
    assert "front matter is not valid YAML" in skipped["Broken.md"]
    assert set(skipped) == {"Broken.md"}  # a copy is a note of its own at its own path
    assert {
        "item": "Projects/Billing migration.md",
        "note": "front matter status: 'in-progress' is not vault-tool's; kept as written",
    } in report["notes"]


def test_basic_memory_observations_and_relations_become_entities_and_facts(vault, tmp_path):
    report = import_source(vault, materialise("basic-memory", tmp_path), "basic-memory")
    memories = by_title(vault, report)
    memory = memories["Coffee Brewing Methods"][1]
    entities = {e.n: e for e in memory.entities}
    assert entities["Coffee Brewing Methods"].kind == "note"
    assert (
        entities["Coffee Brewing Methods"].gloss == "note in the Basic Memory project basic-memory"
    )
    assert entities["Ana Lima"].kind == "person"  # resolved from people/Ana Lima.md
    assert entities["Coffee Bean Origins"].kind == "note"  # not in the folder
    observation = entities["Ethiopian beans work well with lighter roasts"]
    assert (observation.kind, observation.gloss) == (
        "observation",
        "preference observation about Coffee Brewing Methods",
    )
    facts = {(f.subject, f.predicate, f.object) for f in memory.facts}
    assert ("Coffee Brewing Methods", "recommended_by", "Ana Lima") in facts
    assert (
        "Coffee Brewing Methods",
        "has_technique",
        "Water temperature at 205°F extracts optimal compounds",
    ) in facts
    assert len(memory.facts) == 6  # the `- [ ] task` line is not an observation
    assert all(f.subject in entities and f.object in entities for f in memory.facts)
    assert list(memory.tags) == ["coffee", "brewing"]
    assert memory.extra == {"type": "note", "permalink": "coffee/coffee-brewing-methods"}
    assert memories["Use Postgres for invoices"][0]["memory_type"] == "decision"
    assert memories["Ana Lima"][0]["memory_type"] == "note"  # Person is no memory type of ours
    scratch = memories["Scratch"][0]
    assert scratch["content_md"].startswith("# Scratch\n\nA note with no observations")
    assert "Bad.md" in reasons(report)


def test_kg_jsonl_makes_one_memory_per_entity_with_its_relations_as_facts(vault, tmp_path):
    report = import_source(vault, materialise("kg-jsonl", tmp_path), "kg-jsonl")
    memories = by_title(vault, report)
    assert set(memories) == {"David Barnett", "QuintoAndar", "Billing Service", "Staging"}
    read, david = memories["David Barnett"]
    assert read["memory_type"] == "fact"
    assert (
        read["content_md"]
        == "# David Barnett\n\n- Speaks fluent Spanish\n- Prefers morning meetings\n"
    )
    assert [(f.subject, f.predicate, f.object) for f in david.facts] == [
        ("David Barnett", "works_at", "QuintoAndar"),
        ("David Barnett", "is_on_call_for", "Billing Service"),
    ]
    assert [(e.n, e.kind, e.gloss) for e in david.entities] == [
        ("David Barnett", "person", "person in the MCP memory graph"),
        ("QuintoAndar", "organization", "organization in the MCP memory graph"),
        ("Billing Service", "service", "service in the MCP memory graph"),
    ]
    _, billing = memories["Billing Service"]
    assert [(f.predicate, f.object) for f in billing.facts] == [("depends_on", "Postgres")]
    assert ("Postgres", "thing") in [(e.n, e.kind) for e in billing.entities]
    assert memories["Staging"][0]["content_md"] == "# Staging\n"
    assert reasons(report) == {
        "memory.jsonl:8": "relation Nobody Known -> Staging: no entity named 'Nobody Known' "
        "in the graph",
        "memory.jsonl:9": "same relation as memory.jsonl:5",
        "memory.jsonl:10": "not valid JSON (Expecting value at column 1)",
        "memory.jsonl:11": "type 'metadata' is neither entity nor relation",
        "memory.jsonl:12": "entity 'QuintoAndar' already appears at memory.jsonl:2 "
        "(entity QuintoAndar)",
        "memory.jsonl:13": "name is missing or not text",
    }


def test_jsonl_fixture_keeps_ids_paths_and_dates_and_skips_bad_lines(vault, tmp_path):
    report = import_source(vault, materialise("jsonl", tmp_path), "jsonl")
    ana = vault.read("01JDXK3M6Q8W1J4T0P9R7V2B5C")
    assert ana["path"] == "decision/2026-11/ana-owns-the-billing-service.md"
    assert ana["created"] == "2026-11-29T19:46:45Z"
    wombat = vault.read("notes/wombat")  # a hand-made file: same path, so the same id
    assert wombat["path"] == "notes/wombat.md"
    assert "id:" not in (vault.root / "notes/wombat.md").read_text().split("---")[1]
    moved = vault.read("01JDXK3M6Q8W1J4T0P9R7V2B5G")
    assert moved["path"] == "note/2026-09/path-outside.md"
    skipped = reasons(report)
    assert "content_md" in skipped["export.jsonl:4"]
    assert "predicate" in skipped["export.jsonl:5"] and "snake_case" in skipped["export.jsonl:5"]
    assert "not a valid memory id" in skipped["export.jsonl:6"]
    assert not (vault.root.parent / "outside.md").exists()


def test_imported_memories_are_searchable(vault, tmp_path):
    import_source(vault, materialise("basic-memory", tmp_path), "basic-memory")
    hits = vault.search({"query": "pour over flavor clarity"})["selected_hits"]
    assert hits and hits[0]["title"] == "Coffee Brewing Methods"


# --- export ------------------------------------------------------------------------------


def test_export_jsonl_into_a_fresh_vault_reproduces_ids_paths_and_files(
    vault, vault_path, tmp_path
):
    made = vault.remember(create_args("Ana owns the billing service", tags=["billing"]))
    import_source(vault, materialise("markdown", tmp_path / "src"), "markdown")
    (vault_path / "notes").mkdir()
    (vault_path / "notes" / "wombat.md").write_text("---\ntags: [animals]\n---\n# Wombats\n")
    vault.sync_paths(["notes/wombat.md"], commit=True)
    exported = tmp_path / "export.jsonl"
    exported.write_text("".join(line + "\n" for line in export_lines(vault, "jsonl")))
    records = [json.loads(line) for line in exported.read_text().splitlines()]
    assert len(records) == 7
    assert {r["memory_id"] for r in records} >= {made["memory_id"], "notes/wombat"}

    Store.init(tmp_path / "fresh").close()
    with Vault.open(tmp_path / "fresh", client="pytest") as fresh:
        report = import_source(fresh, exported, "jsonl")
        assert report["counts"] == {"imported": 7, "skipped": 0, "redacted": 0, "left_out": 0}
        for record in records:
            read = fresh.read(record["memory_id"])
            assert read["path"] == record["path"]
            assert read["semantic_delta"] == record["semantic_delta"]
            assert read["content_md"] == record["content_md"]
            if record["memory_id"] != "notes/wombat":  # tool-written files come back byte for byte
                original = (vault_path / record["path"]).read_bytes()
                assert (tmp_path / "fresh" / record["path"]).read_bytes() == original
        assert [json.loads(line) for line in export_lines(fresh, "jsonl")] != []


def test_export_records_cover_every_memory_file_in_path_order(vault, tmp_path):
    import_source(vault, materialise("kg-jsonl", tmp_path), "kg-jsonl")
    records = list(export_records(vault))
    assert [r["path"] for r in records] == sorted(r["path"] for r in records)
    assert len(records) == 4
    for record in records:
        assert set(record) >= {
            "memory_id",
            "version_id",
            "path",
            "semantic_delta",
            "content_md",
            "created",
            "updated",
            "source",
        }
        assert record["source"] == "import/kg-jsonl"


def test_export_kg_jsonl_has_the_mcp_memory_server_shape(vault, tmp_path):
    vault.remember(create_args("Ana owns the billing service"))
    designer = create_args("Ana designed the invoice page")
    designer["semantic_delta"]["entities"][0]["is"] = "product designer on the web team"
    vault.remember(designer)
    import_source(vault, materialise("kg-jsonl", tmp_path), "kg-jsonl")
    lines = [json.loads(line) for line in export_lines(vault, "kg-jsonl")]
    entities = [line for line in lines if line["type"] == "entity"]
    relations = [line for line in lines if line["type"] == "relation"]
    assert len(entities) + len(relations) == len(lines)
    assert lines.index(entities[-1]) < lines.index(relations[0])  # entities first, as the server
    for entity in entities:
        assert set(entity) == {"type", "name", "entityType", "observations"}
        assert all(isinstance(o, str) for o in entity["observations"])
    names = [e["name"] for e in entities]
    assert len(names) == len(set(names))
    assert "Ana (backend engineer on the platform team)" in names
    assert "Ana (product designer on the web team)" in names
    for relation in relations:
        assert set(relation) == {"type", "from", "to", "relationType"}
        assert relation["from"] in names and relation["to"] in names
    assert {
        "type": "relation",
        "from": "David Barnett",
        "to": "QuintoAndar",
        "relationType": "works_at",
    } in relations
    david = next(e for e in entities if e["name"] == "David Barnett")
    assert david["entityType"] == "person"
    assert david["observations"][0] == "person in the MCP memory graph"


def test_a_kg_jsonl_export_imports_back_with_no_skipped_lines(vault, tmp_path):
    import_source(vault, materialise("basic-memory", tmp_path), "basic-memory")
    graph = tmp_path / "graph.jsonl"
    graph.write_text("".join(line + "\n" for line in export_lines(vault, "kg-jsonl")))
    Store.init(tmp_path / "fresh").close()
    with Vault.open(tmp_path / "fresh", client="pytest") as fresh:
        report = import_source(fresh, graph, "kg-jsonl")
    entities = sum(1 for line in graph.read_text().splitlines() if '"type":"entity"' in line)
    assert report["skipped"] == []
    assert report["counts"]["imported"] == entities
