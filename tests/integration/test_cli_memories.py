"""init, show, history, log, remember, restore and their errors, run in-process as `main` runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli_support import (
    MEMORY_FILE,
    SAMPLE_ID,
    UNKNOWN_ID,
    invoke,
    invoke_json,
    make_sample,
)
from tests.helpers import git

SINGLE_KEYS = {"mode", "status", "memory_id", "version_id", "path", "redactions"}
READ_KEYS = {
    "memory_id",
    "version_id",
    "title",
    "memory_type",
    "content_md",
    "semantic_delta",
    "path",
    "created",
    "updated",
}
COMMIT_KEYS = {"version_id", "date", "author", "subject", "client", "path", "memory_ids"}


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sample vault made once for the tests that only read it."""
    return make_sample(tmp_path_factory)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An empty vault made by `vault-tool init`."""
    path = tmp_path / "vault"
    assert invoke("init", path).exit_code == 0
    return path


# --- init ----------------------------------------------------------------------------------


def test_init_creates_a_vault_and_exits_0(tmp_path: Path):
    root = tmp_path / "vault"
    done = invoke("init", root)
    assert done.exit_code == 0, done.stderr
    assert (root / ".git").is_dir()
    assert (root / ".vault" / "config.toml").is_file()
    assert git(root, "log", "--format=%s") == "Initialize vault"
    assert git(root, "status", "--porcelain") == ""
    assert str(root) in done.stdout


def test_init_json_reports_the_vault_and_its_head(tmp_path: Path):
    root = tmp_path / "vault"
    result = invoke_json("init", root)
    assert result == {
        "vault": str(root),
        "memories": 0,
        "version_id": git(root, "rev-parse", "HEAD"),
        "kept_git_history": False,
        "held_back": {},
        "secrets_in_git": {},
        "unreadable": {},
        "attachments_left_out": 0,
        "left_out": {},
        "readme": None,
    }


def test_init_on_an_existing_vault_is_refused_with_exit_2(root: Path):
    head = git(root, "rev-parse", "HEAD")
    done = invoke("init", root)
    assert done.exit_code == 2
    assert "error:" in done.stderr
    assert git(root, "rev-parse", "HEAD") == head


def test_init_sample_makes_one_commit_per_memory(sample: Path):
    memories = [p for p in sample.rglob("*.md") if ".git" not in p.parts and p.name != "README.md"]
    assert len(memories) == 28
    assert int(git(sample, "rev-list", "--count", "HEAD")) >= 29
    made = git(sample, "log", "--grep", "Client: sample", "--format=%H").splitlines()
    assert len(made) == 28
    for sha in made:
        changed = git(sample, "show", "--name-only", "--format=", sha).splitlines()
        assert len(changed) == 1
        assert git(sample, "log", "-1", "--format=%s", sha).startswith("Create ")
    assert git(sample, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(sample, "log", "--reverse", "--format=%s").splitlines()[0] == "Initialize vault"


def test_init_sample_files_are_the_bundled_files_byte_for_byte(sample: Path):
    bundled = Path(__file__).resolve().parents[2] / "sample-vault"
    for source in bundled.rglob("*.md"):
        relpath = source.relative_to(bundled)
        assert (sample / relpath).read_bytes() == source.read_bytes(), relpath


# --- reading -------------------------------------------------------------------------------


def test_show_json_has_the_addressed_read_shape(sample: Path):
    shown = invoke_json("show", SAMPLE_ID, "--vault", sample)
    assert isinstance(shown, dict)
    assert set(shown) >= READ_KEYS
    assert shown["memory_id"] == SAMPLE_ID
    assert re.fullmatch(r"[0-9a-f]{40}", shown["version_id"])
    assert shown["version_id"] == git(sample, "log", "-1", "--format=%H", "--", shown["path"])
    assert shown["path"] == "event/2026-08/invoice-run-failed-after-gateway-timeout-change.md"
    assert shown["memory_type"] == "event"
    assert shown["content_md"].startswith("# Invoice run failed")
    assert shown["semantic_delta"]["facts"][0]["predicate"] == "routes_through"
    assert shown["file"] == (sample / shown["path"]).read_text(encoding="utf-8")


def test_show_text_prints_the_file(sample: Path):
    done = invoke("show", SAMPLE_ID, "--vault", sample)
    assert done.exit_code == 0, done.stderr
    assert "# Invoice run failed after gateway timeout change" in done.stdout
    assert SAMPLE_ID in done.stdout


def test_history_json_lists_every_version(sample: Path):
    versions = invoke_json("history", SAMPLE_ID, "--vault", sample)
    assert isinstance(versions, list) and len(versions) == 1
    assert set(versions[0]) >= COMMIT_KEYS
    assert versions[0]["client"] == "sample"
    assert versions[0]["subject"] == "Create event: Invoice run failed after gateway timeout change"
    assert versions[0]["date"].startswith("2026-08-08T07:55:14")


def test_log_json_lists_commits_newest_first(sample: Path):
    commits = invoke_json("log", "--vault", sample, "-n", "5")
    assert isinstance(commits, list) and len(commits) == 5
    assert [c["version_id"] for c in commits] == git(
        sample, "log", "-5", "--format=%H"
    ).splitlines()
    for commit in commits:
        assert set(commit) >= COMMIT_KEYS
    # One name per thing: the commit is its version_id, the memories it wrote are named.
    assert all(c["memory_ids"] for c in commits if c["subject"].startswith("Create "))
    only_sample = invoke_json("log", "--vault", sample, "--client", "sample", "-n", "100")
    assert isinstance(only_sample, list) and len(only_sample) == 28


def test_vault_defaults_to_the_vault_tool_vault_variable(
    sample: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("VAULT_TOOL_VAULT", str(sample))
    monkeypatch.chdir(tmp_path)
    shown = invoke_json("show", SAMPLE_ID)
    assert isinstance(shown, dict) and shown["memory_id"] == SAMPLE_ID


def test_vault_defaults_to_the_current_folder(sample: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(sample)
    commits = invoke_json("log", "-n", "1")
    assert isinstance(commits, list) and len(commits) == 1


# --- writing -------------------------------------------------------------------------------


def test_remember_file_creates_then_updates_the_same_memory(root: Path, tmp_path: Path):
    source = tmp_path / "staging-vpn.md"
    source.write_text(MEMORY_FILE, encoding="utf-8")

    created = invoke_json("remember", source, "--vault", root)
    assert isinstance(created, dict) and set(created) >= SINGLE_KEYS
    assert created["status"] == "created"
    assert created["version_id"] == git(root, "rev-parse", "HEAD")
    assert git(root, "log", "-1", "--format=%s") == "Create gotcha: Staging needs the VPN"
    assert "Client: cli" in git(root, "log", "-1", "--format=%B").splitlines()
    assert source.read_text(encoding="utf-8").startswith(f"---\nid: {created['memory_id']}\n")

    source.write_text(
        source.read_text(encoding="utf-8").replace("time out", "hang for ten minutes"),
        encoding="utf-8",
    )
    updated = invoke_json("remember", source, "--vault", root)
    assert isinstance(updated, dict)
    assert updated["status"] == "updated"
    assert updated["memory_id"] == created["memory_id"]
    assert updated["path"] == created["path"]
    assert git(root, "log", "-1", "--format=%s") == "Update gotcha: Staging needs the VPN"
    assert "hang for ten minutes" in (root / created["path"]).read_text(encoding="utf-8")
    assert len(list((root / "gotcha").rglob("*.md"))) == 1


def test_remember_file_with_an_id_updates_that_memory(root: Path, tmp_path: Path):
    source = tmp_path / "m.md"
    source.write_text(MEMORY_FILE, encoding="utf-8")
    created = invoke_json("remember", source, "--vault", root)
    assert isinstance(created, dict)
    edited = tmp_path / "edited.md"
    edited.write_text(
        MEMORY_FILE.replace("---\n", f"---\nid: {created['memory_id']}\n", 1).replace(
            "time out", "fail"
        ),
        encoding="utf-8",
    )
    updated = invoke_json("remember", edited, "--vault", root)
    assert isinstance(updated, dict)
    assert updated["status"] == "updated"
    assert updated["memory_id"] == created["memory_id"]
    assert git(root, "status", "--porcelain") == ""


def test_remember_from_stdin(root: Path):
    created = invoke_json("remember", "-", "--vault", root, input=MEMORY_FILE)
    assert created["status"] == "created"
    assert git(root, "log", "-1", "--format=%s") == "Create gotcha: Staging needs the VPN"


def test_remember_file_without_facts_exits_2_and_changes_nothing(root: Path, tmp_path: Path):
    head = git(root, "rev-parse", "HEAD")
    source = tmp_path / "no-facts.md"
    source.write_text(
        MEMORY_FILE.replace(
            "facts:\n  - subject: staging\n    predicate: requires\n    object: VPN\n", ""
        ),
        encoding="utf-8",
    )
    done = invoke("remember", source, "--vault", root)
    assert done.exit_code == 2
    assert "error:" in done.stderr and "fix:" in done.stderr
    assert "facts" in done.stderr
    assert git(root, "rev-parse", "HEAD") == head
    assert git(root, "status", "--porcelain") == ""


def test_remember_file_with_broken_yaml_exits_2(root: Path, tmp_path: Path):
    source = tmp_path / "broken.md"
    source.write_text("---\ntitle: [unclosed\n---\n# T\n", encoding="utf-8")
    done = invoke("remember", source, "--vault", root, "--json")
    assert done.exit_code == 2
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "unparseable_file"
    assert str(source) in error["message"]


def test_restore_brings_back_a_version_in_one_commit(root: Path, tmp_path: Path):
    source = tmp_path / "m.md"
    source.write_text(MEMORY_FILE, encoding="utf-8")
    created = invoke_json("remember", source, "--vault", root)
    assert isinstance(created, dict)
    first_bytes = (root / created["path"]).read_bytes()
    edited = tmp_path / "edited.md"
    edited.write_text(
        MEMORY_FILE.replace("---\n", f"---\nid: {created['memory_id']}\n", 1).replace(
            "time out", "fail"
        ),
        encoding="utf-8",
    )
    invoke_json("remember", edited, "--vault", root)
    count = int(git(root, "rev-list", "--count", "HEAD"))

    short = created["version_id"][:10]
    restored = invoke_json("restore", created["memory_id"], short, "--vault", root)
    assert isinstance(restored, dict)
    assert restored["status"] == "updated"
    assert int(git(root, "rev-list", "--count", "HEAD")) == count + 1
    assert git(root, "log", "-1", "--format=%s") == (
        f"Restore gotcha: Staging needs the VPN to {short}"
    )
    assert (root / created["path"]).read_bytes() == first_bytes
    history = invoke_json("history", created["memory_id"], "--vault", root)
    assert isinstance(history, list) and len(history) == 3


# --- errors and exit codes -----------------------------------------------------------------


def test_unknown_id_exits_4_with_error_and_fix_on_stderr(sample: Path):
    done = invoke("show", UNKNOWN_ID, "--vault", sample)
    assert done.exit_code == 4
    assert "error:" in done.stderr
    assert "fix:" in done.stderr
    assert UNKNOWN_ID in done.stderr
    assert done.stdout == ""


def test_json_error_is_printed_on_stdout_in_the_error_shape(sample: Path):
    done = invoke("history", UNKNOWN_ID, "--vault", sample, "--json")
    assert done.exit_code == 4
    payload = json.loads(done.stdout)
    assert set(payload) == {"error"}
    assert set(payload["error"]) >= {"code", "message", "hint"}
    assert payload["error"]["code"] == "not_found"
    assert UNKNOWN_ID in payload["error"]["message"]
    assert payload["error"]["hint"]
    assert done.stderr == ""


def test_json_given_to_one_run_does_not_change_the_next_run(sample: Path):
    as_json = invoke("show", UNKNOWN_ID, "--vault", sample, "--json")
    assert json.loads(as_json.stdout)["error"]["code"] == "not_found"
    as_text = invoke("show", UNKNOWN_ID, "--vault", sample)
    assert as_text.exit_code == 4
    assert as_text.stdout == ""
    assert as_text.stderr.startswith("error: ")


def test_malformed_id_exits_2(sample: Path):
    done = invoke("show", "../../etc/passwd", "--vault", sample)
    assert done.exit_code == 2
    assert "error:" in done.stderr


@pytest.mark.parametrize(
    "args",
    [("show", SAMPLE_ID), ("history", SAMPLE_ID), ("log",), ("restore", SAMPLE_ID, "abcdef0")],
    ids=["show", "history", "log", "restore"],
)
def test_commands_on_a_missing_vault_exit_7_and_create_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple
):
    missing = tmp_path / "missing"
    done = invoke(*args, "--vault", missing)
    assert done.exit_code == 7
    assert "error:" in done.stderr
    assert "vault-tool init" in done.stderr
    assert not missing.exists()
    monkeypatch.setenv("VAULT_TOOL_VAULT", str(missing))
    monkeypatch.chdir(tmp_path)
    via_env = invoke(*args)
    assert via_env.exit_code == 7
    assert not missing.exists()
    assert list(tmp_path.iterdir()) == []


def test_a_folder_that_is_not_a_vault_exits_7_and_stays_untouched(tmp_path: Path):
    (tmp_path / "notes.md").write_text("# Notes\n")
    done = invoke("log", "--vault", tmp_path, "--json")
    assert done.exit_code == 7
    assert json.loads(done.stdout)["error"]["code"] == "vault_unavailable"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.md"]
