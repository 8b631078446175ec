"""The pull-request workflow a team vault ships with: the CI job in docs/ names real
commands and options, and README's Review commands run as written."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import yaml

from tests.cli_support import invoke
from tests.clones import fact, memory_args
from vault_tool.cli.app import cli
from vault_tool.engine.vault import Vault

ROOT = Path(__file__).resolve().parents[2]


def vault_tool_calls(script: str) -> list[list[str]]:
    """Each `vault-tool ...` command of a shell script, as its words (up to a redirect)."""
    found = []
    for line in script.splitlines():
        line = line.split("#", 1)[0] if not line.lstrip().startswith("vault-tool") else line
        if line.strip().startswith("vault-tool"):
            words = shlex.split(line.split(">>", 1)[0].split(" > ", 1)[0])
            found.append(words[1:])
    return found


def check_names_real_options(words: list[str]) -> None:
    command = cli.commands[words[0]]
    options = {opt: p for p in command.params for opt in getattr(p, "opts", [])}
    rest = iter(words[1:])
    for word in rest:
        if word.startswith("--"):
            assert word in options, f"{words[0]} has no option {word}"
            if not getattr(options[word], "is_flag", False):
                next(rest)  # its value
        else:
            assert any(isinstance(p, click.Argument) for p in command.params), words


def test_the_ci_job_runs_verify_and_the_review_on_every_pull_request():
    job = yaml.safe_load((ROOT / "docs" / "vault-pr-review.yml").read_text())
    assert "pull_request" in job[True]  # (YAML reads the key `on` as true)
    (steps,) = [j["steps"] for j in job["jobs"].values()]
    assert steps[0]["uses"].startswith("actions/checkout@")
    assert steps[0]["with"]["fetch-depth"] == 0  # the review walks the base's history
    calls = [c for step in steps if "run" in step for c in vault_tool_calls(step["run"])]
    assert [c[0] for c in calls] == ["verify", "review"]
    for words in calls:
        check_names_real_options(words)
    assert "--markdown" in calls[1] and calls[1][1].startswith("origin/${{ github.base_ref }}..")


def test_team_doc_shows_the_review_as_a_pull_requests_description():
    text = (ROOT / "docs" / "team.md").read_text()
    assert "vault-tool review origin/main..HEAD --markdown" in text
    assert "vault-pr-review.yml" in text


def test_readme_review_commands_run_as_written(vault_path: Path):
    with Vault.open(vault_path, client="claude-code") as vault:
        for n in range(3):
            vault.remember(
                memory_args(f"Service {n}", "Its owner.", [fact(f"svc{n}", "owned_by", "ops")], [])
            )
    readme = (ROOT / "README.md").read_text()
    section = readme.split("### Review\n", 1)[1].split("\n### ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block is not None
    calls = vault_tool_calls(block.group(1))
    assert calls and all(c[0] == "review" for c in calls)
    for words in calls:
        check_names_real_options(words)
        done = invoke(*words, "--vault", vault_path)
        assert done.exit_code == 0, done.stdout + done.stderr
        assert "svc2 owned_by ops" in done.stdout.replace("\\", "")
