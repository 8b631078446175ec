"""verify, doctor, gc and the ontology commands, run in-process as `main` runs them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cli_support import invoke, isolated
from tests.helpers import create_args, delta, git, snapshot
from vault_tool.engine.vault import Vault
from vault_tool.storage.store import Store

DESIGNER = {"n": "Ana", "kind": "person", "is": "product designer of the checkout flow"}
CHECKOUT = {"n": "checkout", "kind": "service", "is": "the web checkout flow"}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    """Three memories: two about Ana the engineer (owns billing), one about Ana the designer."""
    with isolated(tmp_path_factory.mktemp("home")):
        root = tmp_path_factory.mktemp("template") / "vault"
        Store.init(root).close()
        designs = delta(
            "Ana designs checkout",
            entities=[DESIGNER, CHECKOUT],
            facts=[{"subject": "Ana", "predicate": "designs", "object": "checkout"}],
        )
        with Vault.open(root, client="pytest") as vault:
            made = [
                vault.remember(create_args("Ana owns the billing service")),
                vault.remember(create_args("Ana is paged for billing")),
                vault.remember(
                    {
                        "mode": "create",
                        "content_md": "# Ana designs checkout\n\nShe leads the redesign.\n",
                        "semantic_delta": designs,
                    }
                ),
            ]
    return root, made


@pytest.fixture
def copy(tmp_path: Path, template: tuple[Path, list[dict]]) -> tuple[Path, list[dict]]:
    """This test's own copy of the template vault."""
    path = tmp_path / "vault"
    shutil.copytree(template[0], path, symlinks=True)
    return path, template[1]


# --- verify and doctor -----------------------------------------------------------------------


def test_a_clean_vault_passes_verify_and_doctor_with_exit_0(copy):
    root, _ = copy
    verified = invoke("verify", "--vault", str(root), "--json")
    assert verified.exit_code == 0, verified.stdout + verified.stderr
    assert json.loads(verified.stdout)["healthy"] is True
    doctored = invoke("doctor", "--vault", str(root))
    assert doctored.exit_code == 0, doctored.stdout + doctored.stderr
    assert "The vault is healthy." in doctored.stdout
    assert "watcher" in doctored.stdout and "git" in doctored.stdout


def break_yaml(root: Path, made: list[dict]) -> None:
    (root / made[0]["path"]).write_text("---\ntitle: a: b\n---\n# Broken\n")


def delete_index(root: Path, made: list[dict]) -> None:
    shutil.rmtree(root / ".vault" / "index")


def delete_file(root: Path, made: list[dict]) -> None:
    (root / made[1]["path"]).unlink()


def leave_git_lock(root: Path, made: list[dict]) -> None:
    (root / ".git" / "index.lock").write_bytes(b"")


def leave_journal_entry(root: Path, made: list[dict]) -> None:
    journal = root / ".vault" / "run" / "journal"
    journal.mkdir(parents=True, exist_ok=True)
    entry = {"message": "Create note: X\n\nClient: pytest\n", "entries": []}
    (journal / "1700000000000000000-4242.json").write_text(json.dumps(entry))


def edit_without_commit(root: Path, made: list[dict]) -> None:
    with (root / made[2]["path"]).open("a") as file:
        file.write("\nA person added this.\n")


FAULTS = [
    # (inject, an issue kind verify lists, a check doctor fails)
    (break_yaml, "unparseable", "files"),
    (leave_git_lock, "stale_git_lock", "git_locks"),
    (leave_journal_entry, "interrupted_write", "journal"),
]


@pytest.mark.parametrize(("inject", "kind", "failing"), FAULTS, ids=[f[0].__name__ for f in FAULTS])
def test_each_injected_fault_makes_verify_and_doctor_exit_8(copy, inject, kind, failing):
    root, made = copy
    inject(root, made)
    verified = invoke("verify", "--vault", str(root), "--json")
    assert verified.exit_code == 8, verified.stderr
    report = json.loads(verified.stdout)
    assert report["healthy"] is False
    assert kind in {issue["kind"] for issue in report["issues"]}
    doctored = invoke("doctor", "--vault", str(root), "--json")
    assert doctored.exit_code == 8, doctored.stderr
    checks = {c["name"]: c for c in json.loads(doctored.stdout)["checks"]}
    assert checks[failing]["status"] == "fail" and checks[failing]["fix"]


def test_doctor_text_names_the_broken_file_its_line_and_the_fix(copy):
    root, made = copy
    break_yaml(root, made)
    done = invoke("doctor", "--vault", str(root))
    assert done.exit_code == 8
    assert f"{made[0]['path']}:2" in done.stdout
    assert "not valid YAML" in done.stdout and "fix:" in done.stdout
    assert "The vault is unhealthy: files." in done.stdout


@pytest.mark.parametrize("inject", [edit_without_commit, delete_file])
def test_a_hand_edit_with_no_watcher_needs_attention_and_exits_0(copy, inject):
    root, made = copy
    inject(root, made)
    done = invoke("doctor", "--vault", str(root))
    assert done.exit_code == 0, done.stdout + done.stderr
    assert "The vault needs attention: uncommitted." in done.stdout
    assert "index_drift" in done.stdout and "unhealthy" not in done.stdout
    report = json.loads(invoke("doctor", "--vault", str(root), "--json").stdout)
    assert report["verdict"] == "needs attention" and report["healthy"] is True


def test_doctor_shows_an_uncommitted_rename_as_one_moved_row(copy):
    root, made = copy
    old = made[0]["path"]
    new = str(Path(old).with_name("renamed.md"))
    (root / old).rename(root / new)
    done = invoke("doctor", "--vault", str(root))
    assert done.exit_code == 0, done.stdout + done.stderr
    assert f"{new}  moved (uncommitted) from {old}" in done.stdout
    assert "missing on disk" not in done.stdout and "new file" not in done.stdout
    assert done.stdout.count("fix:") == 1  # one fix for the one pending edit


def test_doctor_says_a_serve_started_by_hand_watches_only_after_initialize(copy):
    root, _ = copy
    watcher = next(
        line
        for line in invoke("doctor", "--vault", str(root)).stdout.splitlines()
        if "watcher:" in line
    )
    assert "initialize" in watcher
    serving = invoke("serve", "--help").stdout
    assert "initialize" in serving and "vault-tool watch" in serving


def test_doctor_help_names_each_verdict_and_its_exit_code():
    text = " ".join(invoke("doctor", "--help").stdout.split())
    assert "needs attention" in text and "unhealthy" in text
    assert "Exit code 0 when healthy or when it needs attention" in text


def test_doctor_leaves_a_deleted_index_deleted(copy):
    root, made = copy
    delete_index(root, made)
    done = invoke("doctor", "--vault", str(root))
    assert done.exit_code == 0 and "no search index yet" in done.stdout  # built on next open
    assert not (root / ".vault" / "index").exists()


@pytest.mark.parametrize("command", ["verify", "doctor", "gc", "entities", "rename-predicate"])
def test_a_missing_vault_exits_7_and_nothing_is_created(tmp_path: Path, command: str):
    missing = tmp_path / "missing"
    extra = ["owns", "maintains"] if command == "rename-predicate" else []
    done = invoke(command, *extra, "--vault", str(missing))
    assert done.exit_code == 7, done.stderr
    assert not missing.exists()


# --- gc ----------------------------------------------------------------------------------------


def test_gc_reports_sizes_and_leaves_the_vault_healthy(copy):
    root, _ = copy
    done = invoke("gc", "--vault", str(root), "--json")
    assert done.exit_code == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["after"]["index_segments"] == 1
    assert report["before"]["git_loose_objects"] > report["after"]["git_loose_objects"]
    assert report["after"]["git_packs"] >= 1
    assert invoke("verify", "--vault", str(root)).exit_code == 0


# --- ontology ----------------------------------------------------------------------------------


def test_entities_and_predicates_print_json_with_counts(copy):
    root, _ = copy
    found = json.loads(invoke("entities", "--vault", str(root), "--json", "--homonyms").stdout)
    assert [(e["name"], e["mentions"]) for e in found["entities"]] == [("Ana", 2), ("Ana", 1)]
    shown = invoke("entities", "--vault", str(root), "--kind", "service")
    assert "billing service" in shown.stdout and "checkout" in shown.stdout
    assert "Ana" not in shown.stdout
    predicates = json.loads(invoke("predicates", "--vault", str(root), "--json").stdout)
    assert {"predicate": "owns", "facts": 2, "memories": 2} in predicates["predicates"]


def test_rename_entity_dry_run_prints_the_diff_then_the_rename_is_one_commit(copy):
    root, made = copy
    before = snapshot(root)
    count = int(git(root, "rev-list", "--count", "HEAD"))
    args = ("rename-entity", "Ana", "Ana Lima", "--gloss-contains", "backend", "--vault", str(root))
    dry = invoke(*args, "--dry-run")
    assert dry.exit_code == 0, dry.stderr
    assert "+  - n: Ana Lima" in dry.stdout and "-  - n: Ana" in dry.stdout
    assert "nothing was written" in dry.stdout
    assert snapshot(root) == before
    done = invoke(*args, "--json")
    assert done.exit_code == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["subject"] == "Rename entity: Ana -> Ana Lima (2 memories)"
    assert git(root, "log", "-1", "--format=%s") == result["subject"]
    assert int(git(root, "rev-list", "--count", "HEAD")) == count + 1
    assert (root / made[2]["path"]).read_bytes() == before[2][made[2]["path"]]
    hits = json.loads(invoke("search", "Lima", "--vault", str(root), "--json").stdout)
    assert {h["memory_id"] for h in hits["selected_hits"]} == {m["memory_id"] for m in made[:2]}


def test_an_ambiguous_rename_exits_2_and_names_the_candidates(copy):
    root, _ = copy
    done = invoke("rename-entity", "Ana", "Ana Lima", "--vault", str(root))
    assert done.exit_code == 2
    assert "2 entities" in done.stderr and "--gloss-contains" in done.stderr


def test_a_rename_over_a_hand_edited_file_exits_3_and_changes_nothing(copy):
    root, made = copy
    with (root / made[0]["path"]).open("a") as file:
        file.write("\nStill typing.\n")
    before = snapshot(root)
    done = invoke("rename-predicate", "owns", "maintains", "--vault", str(root), "--json")
    assert done.exit_code == 3
    assert json.loads(done.stdout)["error"]["code"] == "version_conflict"
    assert snapshot(root) == before


def test_a_predicate_that_is_not_snake_case_exits_2(copy):
    root, _ = copy
    done = invoke("rename-predicate", "owns", "Looks After", "--vault", str(root))
    assert done.exit_code == 2 and "snake_case" in done.stderr
