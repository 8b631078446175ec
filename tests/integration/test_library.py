"""The README's Python example runs as written, through the public interface only."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from vault_tool import Vault, VersionConflict
from vault_tool.ops.sample import create_sample_vault

README = Path(__file__).parents[2] / "README.md"


def readme_example() -> str:
    section = README.read_text(encoding="utf-8").split("### From Python", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_example_runs_on_the_sample_vault(tmp_path: Path, monkeypatch) -> None:
    create_sample_vault(tmp_path / "demo-vault")
    monkeypatch.chdir(tmp_path)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(readme_example(), "README.md", "exec"), {})
    lines = printed.getvalue().splitlines()
    assert lines and all(re.match(r"^[0-9a-f]{10} \S", line) for line in lines)


def test_a_stale_write_through_the_library_raises_the_exported_error(tmp_path: Path) -> None:
    create_sample_vault(tmp_path / "v")
    with Vault.open(tmp_path / "v", client="script") as vault:
        hit = vault.search({"query": "billing service"})["selected_hits"][0]
        memory = vault.read(hit["memory_id"])
        update = {
            "mode": "update",
            "memory_id": memory["memory_id"],
            "expected_version_id": memory["version_id"],
            "content_md": memory["content_md"] + "\nOne more line.\n",
            "semantic_delta": memory["semantic_delta"],
        }
        assert vault.remember(update)["status"] == "updated"
        with pytest.raises(VersionConflict) as refused:
            vault.remember(update)  # the same expected version again: now stale
        assert refused.value.code == "version_conflict"
        assert "expected_version_id" in refused.value.message
