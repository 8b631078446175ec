"""A secret in a note's file name: the note is never taken in, and the name is never written
out whole either: not to the server's log, not to the record of problems (private to its
owner, as the logs are), not in what doctor, verify, commit or init print. Each names the
file with the secret redacted, so a person can still find it."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from tests.cli_support import invoke, invoke_json
from tests.e2e.mcp_client import anyio_backend, call, stdio_session  # noqa: F401
from tests.helpers import eventually_async, git

pytestmark = pytest.mark.anyio

TOKEN = "gh" + "p_" + "Zq8Wx5Yv2" * 4
NAME = f"notes/deploy {TOKEN}.md"
SHOWN = "notes/deploy [REDACTED:github-token].md"


def _text(path: Path) -> str:
    return path.read_text() if path.exists() else ""


async def test_a_secret_in_a_file_name_is_written_to_no_log_record_or_output(
    vault_path: Path,
) -> None:
    run = vault_path / ".vault" / "run"
    async with stdio_session(vault_path) as (session, _):
        await call(session, "search", {"query": "deploy"})  # (the server leads the watching)
        (vault_path / "notes").mkdir()
        (vault_path / NAME).write_text("# Deploy\n\nHow we deploy.\n")

        async def reported() -> bool:
            refused = f"refused {SHOWN}" in _text(run / "server.log")
            return refused and SHOWN in _text(run / "problems.json")

        await eventually_async(reported, timeout=20, what="the refusal in the log and record")
    for private in ("problems.json", "server.log", "audit.jsonl"):
        assert TOKEN not in (run / private).read_text(), private
        assert stat.S_IMODE((run / private).stat().st_mode) == 0o600, private
    outputs = [invoke(*args, "--vault", vault_path) for args in (
        ("doctor",), ("doctor", "--json"), ("verify",), ("verify", "--json"), ("commit",),
        ("commit", "--json"),
    )]  # fmt: skip
    for done in outputs:
        assert TOKEN not in done.stdout + done.stderr, done.stdout
        assert SHOWN in done.stdout, done.stdout
    assert "refused_name" in outputs[3].stdout  # (its kind: a name, not what the file holds)
    assert TOKEN not in git(vault_path, "log", "--all", "--name-only")  # never committed


def test_init_names_a_note_with_a_secret_in_its_name_redacted(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    (root / "notes").mkdir(parents=True)
    (root / NAME).write_text("# Deploy\n\nHow we deploy.\n")
    (root / "Plain.md").write_text("plain\n")
    adopted = invoke_json("init", root)
    shown = invoke("verify", "--vault", root)
    assert list(adopted["held_back"]) == [SHOWN]
    assert TOKEN not in str(adopted) and TOKEN not in shown.stdout
    assert TOKEN not in (root / ".vault" / "run" / "problems.json").read_text()
