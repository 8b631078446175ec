"""`vault-tool import` and `vault-tool export`, run in-process as `main` runs them."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_support import invoke
from tests.helpers import git, snapshot
from tests.import_fixtures import SECRETS, materialise
from vault_tool.errors import IMPORT_SKIPPED

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


def new_vault(tmp_path: Path, name: str = "vault") -> Path:
    """An empty vault made by `vault-tool init`."""
    root = tmp_path / name
    done = invoke("init", str(root))
    assert done.exit_code == 0, done.stderr
    return root


def test_import_json_report_lists_imported_skipped_and_redacted_items(tmp_path: Path):
    root = new_vault(tmp_path)
    source = materialise("markdown", tmp_path)
    done = invoke("import", str(source), "--format", "markdown", "--vault", str(root), "--json")
    assert done.exit_code == IMPORT_SKIPPED, done.stderr  # Broken.md
    report = json.loads(done.stdout)
    assert set(report) >= REPORT_KEYS
    assert report["format"] == "markdown" and report["dry_run"] is False
    assert report["version_id"] == git(root, "rev-parse", "HEAD")
    assert report["counts"] == {
        "imported": 5,
        "skipped": 1,
        "redacted": 2,
        "left_out": 1,
        "unresolved_links": 3,
    }
    assert set(report["imported"][0]) >= {"item", "memory_id", "path", "title", "memory_type"}
    assert {s["item"] for s in report["skipped"]} == {"Broken.md"}
    assert {(r["item"], r["kind"]) for r in report["redactions"]} == {
        ("Credentials.md", "url-credentials"),
        ("Credentials.md", "aws-access-key-id"),
    }
    assert git(root, "log", "-1", "--format=%s") == "Import 5 memories from markdown"


def test_import_text_report_names_each_skipped_item_and_its_reason(tmp_path: Path):
    root = new_vault(tmp_path)
    source = materialise("kg-jsonl", tmp_path)
    done = invoke("import", str(source), "--format", "kg-jsonl", "--vault", str(root))
    assert done.exit_code == IMPORT_SKIPPED, done.stderr
    assert "Import 4 memories from memory.jsonl" in done.stdout
    assert "Skipped (6):" in done.stdout
    assert "memory.jsonl:10: not valid JSON" in done.stdout
    assert "Redacted (1):" in done.stdout and "github-token" in done.stdout
    assert SECRETS["GITHUB_TOKEN"] not in git(root, "log", "-p", "--all")


def test_running_an_import_twice_makes_one_commit(tmp_path: Path):
    root = new_vault(tmp_path)
    source = materialise("basic-memory", tmp_path)
    args = ("import", str(source), "--format", "basic-memory", "--vault", str(root))
    assert invoke(*args).exit_code == IMPORT_SKIPPED  # Bad.md
    state = snapshot(root)
    again = invoke(*args, "--json")
    assert again.exit_code == IMPORT_SKIPPED, again.stderr  # Bad.md again; the rest is there
    report = json.loads(again.stdout)
    assert report["version_id"] is None and report["counts"]["imported"] == 0
    assert snapshot(root) == state
    text = invoke(*args)
    assert "Nothing to import" in text.stdout and "no commit" in text.stdout


def test_dry_run_prints_the_diff_and_writes_nothing(tmp_path: Path):
    root = new_vault(tmp_path)
    source = materialise("basic-memory", tmp_path)
    state = snapshot(root)
    done = invoke(
        "import", str(source), "--format", "basic-memory", "--vault", str(root), "--dry-run"
    )
    assert done.exit_code == IMPORT_SKIPPED, done.stderr
    assert "+++ b/note/" in done.stdout
    assert "+    predicate: recommended_by" in done.stdout
    assert "Would import 4 of 5 items; nothing was written." in done.stdout
    assert snapshot(root) == state
    as_json = invoke(
        "import",
        str(source),
        "--format",
        "basic-memory",
        "--vault",
        str(root),
        "--dry-run",
        "--json",
    )
    report = json.loads(as_json.stdout)
    assert report["dry_run"] is True and report["version_id"] is None
    assert report["diff"].startswith("--- /dev/null")
    assert snapshot(root) == state


def test_import_of_a_missing_path_exits_2_with_a_clear_message(tmp_path: Path):
    root = new_vault(tmp_path)
    missing = tmp_path / "no-such-folder"
    done = invoke("import", str(missing), "--format", "markdown", "--vault", str(root))
    assert done.exit_code == 2
    assert f"error: PATH: {missing} does not exist" in done.stderr
    assert "fix:" in done.stderr
    as_json = invoke("import", str(missing), "--format", "markdown", "--vault", str(root), "--json")
    assert as_json.exit_code == 2
    assert json.loads(as_json.stdout)["error"]["code"] == "invalid_input"


def test_import_with_an_unknown_or_missing_format_exits_2(tmp_path: Path):
    root = new_vault(tmp_path)
    source = materialise("markdown", tmp_path)
    unknown = invoke("import", str(source), "--format", "evernote", "--vault", str(root))
    assert unknown.exit_code == 2
    assert "'evernote' is not one of" in unknown.stderr
    missing = invoke("import", str(source), "--vault", str(root))
    assert missing.exit_code == 2
    assert "--format" in missing.stderr
    assert git(root, "rev-list", "--count", "HEAD") == "1"


def test_import_of_a_folder_as_json_lines_exits_2(tmp_path: Path):
    root = new_vault(tmp_path)
    source = materialise("markdown", tmp_path)
    done = invoke("import", str(source), "--format", "kg-jsonl", "--vault", str(root))
    assert done.exit_code == 2
    assert "is not a file" in done.stderr


def test_import_into_a_missing_vault_exits_7_and_creates_nothing(tmp_path: Path):
    source = materialise("markdown", tmp_path)
    missing = tmp_path / "missing-vault"
    done = invoke("import", str(source), "--format", "markdown", "--vault", str(missing))
    assert done.exit_code == 7
    assert not missing.exists()


def test_export_to_a_file_then_import_into_a_fresh_vault_keeps_ids_and_paths(tmp_path: Path):
    root = new_vault(tmp_path)
    source = materialise("markdown", tmp_path)
    done = invoke("import", str(source), "--format", "markdown", "--vault", str(root))
    assert done.exit_code == IMPORT_SKIPPED  # Broken.md
    out = tmp_path / "backup.jsonl"
    done = invoke("export", "--vault", str(root), "--output", str(out), "--json")
    assert done.exit_code == 0, done.stderr
    assert json.loads(done.stdout) == {"format": "jsonl", "output": str(out), "lines": 5}
    exported = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]

    fresh = new_vault(tmp_path, "fresh")
    imported = invoke("import", str(out), "--format", "jsonl", "--vault", str(fresh), "--json")
    assert imported.exit_code == 0, imported.stderr
    report = json.loads(imported.stdout)
    assert git(fresh, "log", "-1", "--format=%s") == "Import 5 memories from backup.jsonl"
    assert {(e["memory_id"], e["path"]) for e in report["imported"]} == {
        (r["memory_id"], r["path"]) for r in exported
    }
    for record in exported:
        assert (fresh / record["path"]).read_bytes() == (root / record["path"]).read_bytes()


def test_export_writes_json_lines_to_standard_output(tmp_path: Path):
    root = new_vault(tmp_path)
    source = materialise("kg-jsonl", tmp_path)
    done = invoke("import", str(source), "--format", "kg-jsonl", "--vault", str(root))
    assert done.exit_code == IMPORT_SKIPPED  # the fixture's bad lines
    jsonl = invoke("export", "--vault", str(root))
    assert jsonl.exit_code == 0, jsonl.stderr
    records = [json.loads(line) for line in jsonl.stdout.splitlines()]
    assert len(records) == 4 and all("semantic_delta" in r for r in records)
    graph = invoke("export", "--format", "kg-jsonl", "--vault", str(root), "--json")
    assert graph.exit_code == 0, graph.stderr
    lines = [json.loads(line) for line in graph.stdout.splitlines()]
    assert {line["type"] for line in lines} == {"entity", "relation"}
    assert {
        "type": "relation",
        "from": "Billing Service",
        "to": "Postgres",
        "relationType": "depends_on",
    } in lines
