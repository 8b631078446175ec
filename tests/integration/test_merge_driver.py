"""The merge driver under real git: merges, rebases and cherry-picks of one memory edited on
two branches (storage/merge_driver.py over core/merge.py)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import git
from vault_tool.core.memory import parse
from vault_tool.core.yaml_safe import load_yaml

PATH = "fact/2026-06/ana-owns-billing.md"
DRIVER = (
    "import sys; from pathlib import Path; from vault_tool.storage.merge_driver import run; "
    "sys.exit(run(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]), "
    "sys.argv[5]))"
)
BASE = """\
---
id: 01JDXK3M6Q8W1J4T0P9R7V2B5C
memory_type: fact
title: Ana owns billing
entities:
  - n: Ana
    kind: person
    is: backend engineer
  - n: billing
    kind: service
    is: the invoicing service
facts:
  - subject: Ana
    predicate: owns
    object: billing
tags:
  - billing
created: 2026-06-01T09:00:00Z
updated: 2026-06-01T09:00:00Z
---
# Ana owns billing

Ana owns the billing service.

She took it over from the payments team in May.

Questions about invoices go to her first.

On-call for billing follows the platform rota.
"""


def _ours(text: str) -> str:
    """Branch `ours`: a fact, a tag, Ana's gloss, the first paragraph."""
    return (
        text.replace("is: backend engineer", "is: staff backend engineer")
        .replace(
            "    object: billing\n",
            "    object: billing\n  - subject: Ana\n    predicate: reviews\n    object: billing\n",
            1,
        )
        .replace("  - billing\n", "  - billing\n  - ana\n", 1)
        .replace("updated: 2026-06-01T09:00:00Z", "updated: 2026-06-02T09:00:00Z")
        .replace("Ana owns the billing service.", "Ana owns the billing service and its jobs.")
    )


def _theirs(text: str) -> str:
    """Branch `theirs`: another fact, another tag, billing's gloss, the last paragraph."""
    return (
        text.replace("is: the invoicing service", "is: the invoicing and dunning service")
        .replace("    object: billing\n", "    object: billing\n    valid_from: 2026-05-01\n", 1)
        .replace("  - billing\n", "  - billing\n  - payments\n", 1)
        .replace("updated: 2026-06-01T09:00:00Z", "updated: 2026-06-03T09:00:00Z")
        .replace("follows the platform rota.", "follows the payments rota.")
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with the driver registered and a memory committed on main."""
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "Test")
    git(path, "config", "user.email", "test@example.com")
    command = f"{shlex.quote(sys.executable)} -c {shlex.quote(DRIVER)} %O %A %B %L %P"
    git(path, "config", "merge.vault-tool.driver", command)
    (path / ".gitattributes").write_text("*.md merge=vault-tool\n")
    _commit(path, "base", {".gitattributes": (path / ".gitattributes").read_text(), PATH: BASE})
    return path


def _commit(repo: Path, message: str, files: dict[str, str | bytes]) -> None:
    for name, text in files.items():
        target = repo / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text if isinstance(text, bytes) else text.encode())
    git(repo, "add", "--", *files)
    git(repo, "commit", "-q", "-m", message)


def _branches(repo: Path, ours: str | bytes, theirs: str | bytes) -> None:
    """Branch `theirs` from main with theirs committed, then main with ours committed."""
    git(repo, "checkout", "-q", "-b", "theirs")
    _commit(repo, "theirs", {PATH: theirs})
    git(repo, "checkout", "-q", "main")
    _commit(repo, "ours", {PATH: ours})


def _run(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)


def _front_and_body(text: str) -> tuple[dict, str]:
    _, front, body = text.split("---\n", 2)
    return load_yaml(front, PATH), body


def _assert_both_sides_kept(text: str) -> None:
    front, body = _front_and_body(text)
    assert front["facts"] == [
        {"subject": "Ana", "predicate": "owns", "object": "billing", "valid_from": "2026-05-01"},
        {"subject": "Ana", "predicate": "reviews", "object": "billing"},
    ]
    assert sorted(front["tags"]) == ["ana", "billing", "payments"]
    assert [e["is"] for e in front["entities"]] == [
        "staff backend engineer",
        "the invoicing and dunning service",
    ]
    assert front["updated"] == "2026-06-03T09:00:00Z"
    assert "merge_conflicts" not in front
    assert "and its jobs." in body and "follows the payments rota." in body
    assert "<<<<<<<" not in text


def test_two_branches_editing_one_memory_merge_rebase_and_cherry_pick_cleanly(repo: Path):
    _branches(repo, _ours(BASE), _theirs(BASE))
    results = []
    merged = _run(repo, "merge", "-q", "--no-edit", "theirs")
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert merged.stderr == ""  # the driver is quiet on a clean merge
    results.append((repo / PATH).read_text())
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    rebased = _run(repo, "rebase", "-q", "theirs")
    assert rebased.returncode == 0, rebased.stdout + rebased.stderr
    results.append((repo / PATH).read_text())
    git(repo, "reset", "-q", "--hard", "ORIG_HEAD")
    picked = _run(repo, "cherry-pick", "theirs")
    assert picked.returncode == 0, picked.stdout + picked.stderr
    results.append((repo / PATH).read_text())
    for text in results:
        _assert_both_sides_kept(text)
        parse(text, PATH, strict=True)
    # Merged in either direction, the file is the same bytes.
    assert results[0] == results[1] == results[2]


def test_a_title_changed_on_both_sides_merges_cleanly_and_keeps_the_other_in_a_note(repo: Path):
    ours = _ours(BASE).replace("title: Ana owns billing", "title: Ana runs billing")
    theirs = _theirs(BASE).replace("title: Ana owns billing", "title: Ana leads billing")
    _branches(repo, ours, theirs)
    merged = _run(repo, "merge", "-q", "--no-edit", "theirs")
    assert merged.returncode == 0, merged.stdout + merged.stderr
    front, _ = _front_and_body((repo / PATH).read_text())
    # theirs is the newer side (its `updated` is later)
    assert front["title"] == "Ana leads billing"
    assert front["merge_conflicts"] == [
        {"field": "title", "kept": "Ana leads billing", "set_aside": "Ana runs billing"}
    ]
    parse((repo / PATH).read_text(), PATH, strict=True)


def test_the_same_body_line_edited_on_both_sides_stops_with_markers_only_in_the_body(repo: Path):
    ours = _ours(BASE).replace("in May.", "in early May.")
    theirs = _theirs(BASE).replace("in May.", "in late May.")
    _branches(repo, ours, theirs)
    merged = _run(repo, "merge", "--no-edit", "theirs")
    assert merged.returncode == 1
    assert "the front matter is merged" in merged.stderr + merged.stdout
    assert git(repo, "diff", "--name-only", "--diff-filter=U") == PATH
    text = (repo / PATH).read_text()
    front, body = _front_and_body(text)
    # Each side is named by its branch and last writer, not "ours" and "theirs".
    assert f"<<<<<<< main (Test): {PATH}" in body and f"||||||| base: {PATH}" in body
    assert f">>>>>>> theirs (Test): {PATH}" in body
    assert "in early May." in body and "in late May." in body
    assert sorted(front["tags"]) == ["ana", "billing", "payments"]
    assert len(front["facts"]) == 2
    head = text.split("---\n", 2)[1]
    assert not any(line.startswith(("<<<<<<<", "=======", ">>>>>>>")) for line in head.splitlines())


def test_a_side_that_does_not_parse_falls_back_to_the_text_merge_and_stops(repo: Path):
    broken = _theirs(BASE).replace("title: Ana owns billing", "title: [Ana owns billing")
    _branches(repo, _ours(BASE), broken)
    merged = _run(repo, "merge", "--no-edit", "theirs")
    assert merged.returncode == 1
    assert "theirs does not parse" in merged.stderr + merged.stdout
    text = (repo / PATH).read_text()
    # git's text merge of the whole file: both sides' lines, the broken one included.
    assert "title: [Ana owns billing" in text and "and its jobs." in text
    assert git(repo, "diff", "--name-only", "--diff-filter=U") == PATH


def test_a_file_that_is_not_utf8_falls_back_and_stops(repo: Path):
    latin = _theirs(BASE).replace("May.", "Mai, caf\xe9.").encode("latin-1")
    _branches(repo, _ours(BASE), latin)
    merged = _run(repo, "merge", "--no-edit", "theirs")
    assert merged.returncode == 1
    assert "not UTF-8" in merged.stderr + merged.stdout


def test_the_same_memory_added_on_both_branches_merges_like_a_modification(repo: Path):
    added = "fact/2026-06/ana-runs-billing.md"
    body = BASE.split("---\n", 2)[2]
    git(repo, "checkout", "-q", "-b", "theirs")
    _commit(repo, "theirs adds", {added: _theirs(BASE).rsplit("---\n", 1)[0] + "---\n" + body})
    git(repo, "checkout", "-q", "main")
    _commit(repo, "ours adds", {added: _ours(BASE).rsplit("---\n", 1)[0] + "---\n" + body})
    merged = _run(repo, "merge", "--no-edit", "theirs")
    assert merged.returncode == 0, merged.stdout + merged.stderr
    front, merged_body = _front_and_body((repo / added).read_text())
    assert len(front["facts"]) == 2 and sorted(front["tags"]) == ["ana", "billing", "payments"]
    assert merged_body == body


def test_a_path_that_is_not_a_memory_is_a_plain_text_merge(repo: Path):
    readme = "".join(f"line {n}\n" for n in range(20))
    _commit(repo, "readme", {"README.md": readme})
    git(repo, "checkout", "-q", "-b", "theirs")
    _commit(repo, "theirs", {"README.md": readme.replace("line 18", "line eighteen")})
    git(repo, "checkout", "-q", "main")
    _commit(repo, "ours", {"README.md": readme.replace("line 1\n", "line one\n")})
    merged = _run(repo, "merge", "-q", "--no-edit", "theirs")
    assert merged.returncode == 0, merged.stderr
    text = (repo / "README.md").read_text()
    assert "line one\n" in text and "line eighteen\n" in text
