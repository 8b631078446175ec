"""Plain git shows a memory's meaning: the diff driver registered by init (and by every open)
makes `git log -p`, `git show` and `git diff` print facts, entities and keys as lines above
the body; a fresh clone shows raw files until it is opened once; doctor names a clone
without it; the tool's own history patches stay raw. Real git, the real driver process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_support import invoke
from tests.clones import fact, memory_args, team, update_args
from tests.helpers import create_args, git
from tests.integration.test_team_checks import check
from vault_tool.core import light_yaml
from vault_tool.core.diff_lines import for_diff, meaning_lines
from vault_tool.core.yaml_safe import load_yaml
from vault_tool.engine.vault import Vault
from vault_tool.storage import diff_setup

SAMPLE = Path(__file__).parents[2] / "sample-vault"
FACT_LINE = "+fact: Ana owns billing service (valid from 2026-03-01)"


def remember_dated(vault: Vault) -> dict:
    facts = [fact("Ana", "owns", "billing service", valid_from="2026-03-01")]
    return vault.remember(memory_args("Ana owns billing", "She took it over.", facts, ["billing"]))


# --- what the driver prints ----------------------------------------------------------------


def test_a_memory_prints_its_meaning_as_lines_above_its_body() -> None:
    text = (SAMPLE / "rule/2026-06/no-billing-deploys-on-fridays.md").read_text()
    shown = meaning_lines(text)
    assert shown is not None
    head, _, body = shown.partition("\n\n")
    lines = head.splitlines()
    assert lines[:2] == ["type: rule", "title: No billing deploys on Fridays"]
    assert "pinned: true" in lines
    assert any(line.startswith("entity: billing service (service): ") for line in lines)
    assert any(line.startswith("fact: ") for line in lines)
    assert not any(line.startswith(("id:", "created:", "updated:")) for line in lines)
    assert body == text.split("\n---\n", 1)[1]


def test_validity_supersedes_and_expiry_are_lines() -> None:
    text = (
        "---\nmemory_type: decision\ntitle: T\nkey: staging.region\n"
        "facts:\n  - subject: Bo\n    predicate: leads_on_call\n    object: platform team\n"
        "    valid_from: '2026-01-01'\n    valid_until: 2026-02-28\n"
        "  - subject: Cy\n    predicate: leads\n    object: ops\n    valid_until: 2026-05-01\n"
        "supersedes:\n- 01AAA\n- 01BBB\nexpires_at: 2026-12-20T00:00:00Z\nstatus_note: mine\n"
        "---\n# T\n"
    )
    lines = meaning_lines(text).splitlines()
    assert "fact: Bo leads on call platform team (valid from 2026-01-01 until 2026-02-28)" in lines
    assert "fact: Cy leads ops (valid until 2026-05-01)" in lines
    assert lines.index("supersedes: 01AAA") < lines.index("supersedes: 01BBB")
    assert "expires_at: 2026-12-20T00:00:00Z" in lines
    assert "key: staging.region" in lines and "status_note: mine" in lines


def test_a_note_without_front_matter_and_a_file_that_does_not_parse_print_as_they_are() -> None:
    for data in (
        b"# Groceries\n\n- milk\n",
        b"---\ntitle: [unclosed\n---\n# T\n",  # not YAML
        b"---\ntitle: never closed\n# T\n",
        b"---\n- a list\n---\n# T\n",  # not a mapping
        b"\xff\xfe not text",
        b"",
    ):
        assert for_diff(data) == data


def test_control_characters_in_values_are_escaped() -> None:
    shown = meaning_lines('---\ntitle: "a\\e[31mred"\n---\n# T\n')
    assert "title: a\\x1b[31mred" in shown.splitlines()


def test_the_light_reader_agrees_with_the_yaml_parser_or_declines() -> None:
    raws = [p.read_text().split("---\n")[1] for p in SAMPLE.rglob("*.md") if p.name != "README.md"]
    raws += [
        "title: 'it''s'\ntags:\n- a\n- b\n",
        'title: "plain quoted"\nkey: k\n',
        "title: x # a comment\n",
        "tags: [a, b]\n",
        "title: >\n  folded\n",
        "title: two\n  lines\n",
        "entities:\n  - n: Ana\n    aliases:\n      - A\n",
        "a: &x 1\nb: *x\n",
        'title: "esc\\"aped"\n',
        "title:\n",
    ]
    taken = 0
    for raw in raws:
        read = light_yaml.read(raw)
        if read is None:
            continue
        taken += 1
        assert read == _as_text(load_yaml(raw, "x.md")), raw
    assert taken >= len(raws) - 10  # every sample memory is read without PyYAML


def _as_text(value: object) -> object:
    if isinstance(value, dict):
        return {k: _as_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_text(v) for v in value]
    if isinstance(value, bool):
        return "true" if value else "false"
    return None if value is None else str(value)


# --- git shows it ----------------------------------------------------------------------------


def test_git_log_show_and_diff_print_fact_lines_in_a_vault_made_by_init(
    vault: Vault, vault_path: Path
) -> None:
    made = remember_dated(vault)
    update = update_args(
        made,
        vault,
        facts=lambda old: [{**old[0], "valid_from": "2026-04-01"}],
        body=lambda old: old.replace("took it over", "took it over in April"),
    )
    vault.remember(update)
    patch = git(vault_path, "log", "-p", "-2")
    assert FACT_LINE in patch
    assert "-fact: Ana owns billing service (valid from 2026-03-01)" in patch
    assert "+fact: Ana owns billing service (valid from 2026-04-01)" in patch
    assert "+entity: Ana (thing): what the team calls Ana" in patch
    assert "predicate:" not in patch
    assert "+fact: Ana owns billing service (valid from 2026-04-01)" in git(
        vault_path, "show", "HEAD"
    )
    raw = git(vault_path, "log", "-p", "-1", "--no-textconv")
    assert "+    valid_from: '2026-04-01'" in raw or "+    valid_from: 2026-04-01" in raw
    # A person's edit in the working tree: git diff shows the changed line.
    file = vault_path / made["path"]
    file.write_text(file.read_text().replace("object: billing service", "object: billing API"))
    assert "+fact: Ana owns billing API (valid from 2026-04-01)" in git(vault_path, "diff")
    # The tool's own patch (history) stays the file as it is.
    entry = vault.history(made["memory_id"], patch=True)[0]
    assert "valid_from" in entry["patch"] and "fact:" not in entry["patch"]


def test_a_fresh_clone_shows_fact_lines_once_it_is_opened(tmp_path: Path) -> None:
    remote, (first,) = team(tmp_path, members=1)
    with Vault.open(first, client="agent") as vault:
        remember_dated(vault)
        assert vault.team.sync().status == "synced"
    fresh = tmp_path / "fresh"
    subprocess.run(["git", "clone", "--quiet", str(remote), str(fresh)], check=True)
    # Not opened yet: .gitattributes names the driver, git has no command for it and shows
    # the raw file (no error).
    raw = git(fresh, "log", "-p")
    assert "+    predicate: owns" in raw and "fact:" not in raw
    assert check(fresh, "diff_driver").status == "warn"
    Vault.open(fresh, client="person").close()  # any vault-tool command, once
    assert FACT_LINE in git(fresh, "log", "-p")
    assert check(fresh, "diff_driver").status == "ok"


def test_the_driver_without_its_python_runs_vault_tool_on_path_else_prints_the_file(
    vault: Vault, vault_path: Path
) -> None:
    remember_dated(vault)
    git(vault_path, "config", "diff.vault-tool.textconv", diff_setup.textconv_command("/gone/py"))
    scripts = str(Path(sys.executable).parent)
    on_path = {**os.environ, "PATH": f"{scripts}{os.pathsep}/usr/bin{os.pathsep}/bin"}
    assert FACT_LINE in _git_log(vault_path, on_path)
    bare = {**os.environ, "PATH": f"/usr/bin{os.pathsep}/bin"}
    if subprocess.run(["sh", "-c", "command -v vault-tool"], env=bare).returncode == 0:
        pytest.skip("a vault-tool is installed system-wide")
    shown = _git_log(vault_path, bare)
    assert "+    predicate: owns" in shown  # the raw file, and git did not stop


def _git_log(path: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        ["git", "log", "-p"], cwd=path, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def test_a_path_that_reads_as_an_option_is_a_path(tmp_path: Path) -> None:
    (tmp_path / "-h.md").write_text("---\ntitle: Dash\n---\n# Dash\n")
    done = subprocess.run(
        [sys.executable, "-m", "vault_tool", "textconv", "--", "-h.md"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.startswith("title: Dash\n\n# Dash")
    assert "textconv" not in invoke("--help").stdout  # git's, not a person's or an agent's


# --- doctor ----------------------------------------------------------------------------------


def test_doctor_names_a_clone_without_the_diff_driver(vault_path: Path) -> None:
    Vault.open(vault_path, client="pytest").close()
    assert check(vault_path, "diff_driver").status == "ok"
    git(vault_path, "config", "--unset-all", "diff.vault-tool.textconv")
    found = check(vault_path, "diff_driver")
    assert found.status == "warn" and "diff.vault-tool.textconv is unset" in found.summary
    assert "git config diff.vault-tool.textconv" in found.fix
    (vault_path / ".gitattributes").write_text(
        (vault_path / ".gitattributes").read_text().replace(diff_setup.ATTRIBUTE_LINE, "")
    )
    found = check(vault_path, "diff_driver")
    assert diff_setup.ATTRIBUTE_LINE in found.summary and diff_setup.ATTRIBUTE_LINE in found.fix
    done = invoke("doctor", "--vault", vault_path, "--json")
    (shown,) = [c for c in json.loads(done.stdout)["checks"] if c["name"] == "diff_driver"]
    assert shown["status"] == "warn"
    Vault.open(vault_path, client="pytest").close()  # an open registers it again
    assert check(vault_path, "diff_driver").status == "ok"


def test_create_args_are_a_memory_the_driver_reads_without_yaml(vault: Vault) -> None:
    made = vault.remember(create_args())
    raw = (vault.root / made["path"]).read_text().split("---\n")[1]
    assert light_yaml.read(raw) == _as_text(load_yaml(raw, "x.md"))
