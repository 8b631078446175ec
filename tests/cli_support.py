"""Running `vault-tool` in-process, through the same path as the installed entry point."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from vault_tool.cli.app import cli

# The sample vault's "Invoice run failed after gateway timeout change" (an event of 2026-08).
SAMPLE_ID = "01KZG5WWPGVD0WV8B798AXKW6H"
UNKNOWN_ID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"

MEMORY_FILE = """\
---
memory_type: gotcha
title: Staging needs the VPN
entities:
  - n: staging
    kind: environment
    is: the pre-production environment
  - n: VPN
    kind: tool
    is: the company WireGuard VPN
facts:
  - subject: staging
    predicate: requires
    object: VPN
tags: [staging]
---
# Staging needs the VPN

Deploys to staging time out without it.
"""


def invoke(*args: str | Path, input: str | None = None) -> Result:
    """vault-tool ARGS in this process: the group's main maps errors to exit codes, as `main`.

    stdout and stderr are kept apart (result.stdout, result.stderr); an exception that is
    not an exit propagates, so a crash shows its traceback instead of a bare exit code 1.
    """
    return CliRunner().invoke(cli, [str(a) for a in args], input=input, catch_exceptions=False)


def invoke_json(*args: str | Path, input: str | None = None) -> Any:
    """vault-tool ARGS --json, which must exit 0; its stdout parsed."""
    done = invoke(*args, "--json", input=input)
    assert done.exit_code == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


@contextlib.contextmanager
def isolated(home: Path) -> Iterator[None]:
    """The autouse isolation, for module-scoped fixtures (which run outside it)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        patch.setenv("GIT_CONFIG_GLOBAL", str(home / "gitconfig"))
        patch.setenv("GIT_CONFIG_NOSYSTEM", "1")
        patch.delenv("VAULT_TOOL_VAULT", raising=False)
        for name in (
            "GIT_AUTHOR_NAME",
            "GIT_AUTHOR_EMAIL",
            "GIT_COMMITTER_NAME",
            "GIT_COMMITTER_EMAIL",
        ):
            patch.delenv(name, raising=False)
        yield


def make_sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sample vault made by `init --sample` with its own isolated environment."""
    root = tmp_path_factory.mktemp("sample") / "vault"
    with isolated(tmp_path_factory.mktemp("sample-home")):
        invoke_json("init", "--sample", root)
    return root
