"""A folder that is already a git repository, adopted with a note holding secrets in its
history: what the tool keeps out of git it keeps out of the index and every answer, as it
does for a folder it gives a new repository, and doctor says how to purge the history."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_support import invoke, invoke_json
from tests.e2e.mcp_client import anyio_backend, call, stdio_session  # noqa: F401
from tests.helpers import git

pytestmark = pytest.mark.anyio

PASSWORD = "Wombat-Burrow-42"
URL_PASSWORD = "Tr0ub4dor-3"
DEPLOY = (
    "# Deploy notes\n\n"
    f"The deploy password: {PASSWORD}\n"
    f"Connect with postgres://deploy:{URL_PASSWORD}@db.example.com/prod\n"
)


async def test_a_secret_committed_before_init_reaches_no_agent_and_doctor_names_it(
    tmp_path: Path,
) -> None:
    root = tmp_path / "notes"
    (root / "ops").mkdir(parents=True)
    (root / "ops" / "Deploy.md").write_text(DEPLOY)
    (root / "ops" / "Runbook.md").write_text("# Runbook\n\nDeploy notes live beside this.\n")
    git(root.parent, "init", "-q", "-b", "main", str(root))
    git(root, "add", "-A")
    git(root, "-c", "user.name=P", "-c", "user.email=p@x", "commit", "-qm", "My notes")

    adopted = invoke_json("init", root)

    assert adopted["kept_git_history"] is True and adopted["memories"] == 1
    assert "ops/Deploy.md" in adopted["secrets_in_git"]
    async with stdio_session(root) as (session, _):
        found = await call(session, "search", {"query": "deploy notes password"})
        read = await call(session, "search", {"memory_id": "ops/Deploy"})
    assert [h["path"] for h in found.structured_content["selected_hits"]] == ["ops/Runbook.md"]
    assert read.is_error and read.structured_content["error"]["code"] == "not_found"
    for answer in (found, read):
        said = json.dumps(answer.structured_content) + answer.content[0].text
        assert PASSWORD not in said and URL_PASSWORD not in said
    doctor = invoke("doctor", "--json", "--vault", root)
    files = next(c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "files")
    assert files["status"] == "fail"
    row = next(d for d in files["details"] if d["path"] == "ops/Deploy.md")
    assert "committed" in row["reason"] and "git filter-repo" in row["fix"]
    assert PASSWORD not in doctor.stdout and URL_PASSWORD not in doctor.stdout
