"""whole_tree reads the tree git's index holds from its cache-tree extension, in every index
version git writes, and answers None when the index does not name one (something staged by
path since) or cannot be read. Indexes written by real git in a temporary repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers import git
from vault_tool.storage.index_tree import whole_tree


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "config", "user.name", "Ana")
    git(tmp_path, "config", "user.email", "ana@example.com")
    for n in range(30):
        folder = tmp_path / f"d{n % 4}"
        folder.mkdir(exist_ok=True)
        (folder / f"note-{n}-{'x' * n}.md").write_text(f"note {n}\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "notes")
    git(tmp_path, "read-tree", "HEAD")  # a whole cache-tree, as a checkout leaves it
    return tmp_path


def _index(repo: Path) -> bytes:
    return (repo / ".git" / "index").read_bytes()


def _head_tree(repo: Path) -> bytes:
    return bytes.fromhex(git(repo, "rev-parse", "HEAD^{tree}"))


@pytest.mark.parametrize("version", ["2", "3", "4"])
def test_each_index_version_names_the_tree_it_holds(repo: Path, version: str):
    git(repo, "update-index", "--index-version", version)
    assert whole_tree(_index(repo)) == _head_tree(repo)


@pytest.mark.parametrize("version", ["2", "4"])
def test_a_name_longer_than_its_length_field_is_read_to_its_nul(repo: Path, version: str):
    """An entry's name length has 12 bits: a longer name (a path of 4,400 characters, in
    the index only) is read up to the NUL that ends it."""
    blob = git(repo, "hash-object", "-w", "d0/note-0-.md")
    long_name = "/".join(["z" * 200] * 22) + "/f"
    git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{long_name}")
    tree = git(repo, "write-tree")
    git(repo, "read-tree", tree)
    git(repo, "update-index", "--index-version", version)
    assert whole_tree(_index(repo)) == bytes.fromhex(tree)


def test_extended_entries_are_stepped_over(repo: Path):
    """A skip-worktree entry carries the extended flags: two more bytes (index version 3)."""
    git(repo, "update-index", "--skip-worktree", "d1/note-1-x.md")
    assert whole_tree(_index(repo)) is None  # a flag changed by path invalidates the root
    git(repo, "write-tree")  # which writes the whole cache-tree back
    assert _index(repo)[4:8] == b"\0\0\0\3"
    assert whole_tree(_index(repo)) == _head_tree(repo)


def test_a_path_staged_since_leaves_no_whole_tree(repo: Path):
    (repo / "d1" / "note-1-x.md").write_text("changed\n")
    git(repo, "add", "d1/note-1-x.md")
    assert whole_tree(_index(repo)) is None


def test_a_checkout_names_the_tree_it_checked_out(repo: Path):
    git(repo, "switch", "-q", "-c", "side")
    (repo / "side.md").write_text("side\n")
    git(repo, "add", "side.md")
    git(repo, "commit", "-q", "-m", "side")
    git(repo, "switch", "-q", "main")
    assert whole_tree(_index(repo)) == _head_tree(repo)
    git(repo, "switch", "-q", "side")
    assert whole_tree(_index(repo)) == _head_tree(repo)


@pytest.mark.parametrize(
    "damage",
    [lambda data: b"", lambda data: data[:40], lambda data: b"XXXX" + data[4:],
     lambda data: data[:12] + b"\xff" * (len(data) - 12)],
    ids=["empty", "truncated", "signature", "garbage"],
)  # fmt: skip
def test_an_unreadable_index_names_no_tree(repo: Path, damage):
    assert whole_tree(damage(_index(repo))) is None


def test_conflicts_are_seen_and_a_clean_index_has_none(repo: Path):
    from vault_tool.storage.index_tree import summary

    assert summary(_index(repo)).unmerged is False
    git(repo, "switch", "-q", "-c", "side")
    (repo / "d0" / "note-0-.md").write_text("side\n")
    git(repo, "commit", "-q", "-am", "side")
    git(repo, "switch", "-q", "main")
    (repo / "d0" / "note-0-.md").write_text("main\n")
    git(repo, "commit", "-q", "-am", "main")
    subprocess.run(["git", "merge", "-q", "side"], cwd=repo, capture_output=True)
    found = summary(_index(repo))
    assert found.unmerged is True and found.tree is None
