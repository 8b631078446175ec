"""A command whose reader has gone (`vault-tool ... | head -3`) ends quietly with 141."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.mcp_client import server_env

SCRIPT = Path(sys.executable).parent / "vault-tool"
CLI = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "vault_tool"]
SIGPIPE_STATUS = 141  # 128 + SIGPIPE: what a shell reports for `cat big | head -1`


def run_with_closed_stdout(*args: str) -> subprocess.CompletedProcess:
    """Run the CLI with stdout a pipe whose reading end is already closed: every write to
    it fails with EPIPE, as after `head` has read its lines and exited."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [*CLI, *args], stdout=write_end, stderr=subprocess.PIPE, text=True,
            env=server_env(), timeout=60,
        )  # fmt: skip
    finally:
        os.close(write_end)


@pytest.mark.parametrize(
    "args",
    [
        ("connect", "opencode"),  # rich console output
        ("skill",),  # click.echo
        ("export",),  # sys.stdout.write, line by line
        ("search", "billing", "--json"),  # JSON through click.echo
        ("--help",),  # click's own help, before any command runs
    ],
    ids=lambda args: " ".join(args),
)
def test_a_closed_stdout_ends_the_command_quietly_with_141(args: tuple[str, ...], tmp_path: Path):
    vault = tmp_path / "vault"
    made = subprocess.run([*CLI, "init", "--sample", str(vault)], capture_output=True,
                          text=True, env=server_env(), timeout=120)  # fmt: skip
    assert made.returncode == 0, made.stderr
    command = [*args] if args == ("--help",) else [*args, "--vault", str(vault)]
    done = run_with_closed_stdout(*command)
    assert done.returncode == SIGPIPE_STATUS, done.stderr
    assert done.stderr == ""
