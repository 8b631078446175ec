"""git's index edited in-process (storage/index_edit.py) is byte for byte what `git
update-index` writes from the same index, for every way a commit stages its paths; where
it cannot be exactly that, it leaves the work to git. Real repositories and real git."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers import create_args, git, install_hook
from vault_tool.engine.vault import Vault
from vault_tool.errors import VaultError
from vault_tool.storage import durable
from vault_tool.storage.index_edit import IndexEditor, as_committed, index_info, on_disk
from vault_tool.storage.objects import object_id


def repository(path: Path) -> Path:
    """A repository with files at several depths, committed."""
    path.mkdir()
    git(path, "init", "-q")
    for name in ("a/b/deep.md", "a/b/other.md", "a/side.md", "c/z.md", "top.md", "zz/last.md"):
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(f"{name}\n")
    git(path, "add", ".")
    git(path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "Start")
    return path


def blob(data: bytes) -> str:
    return object_id(b"blob", data).hex()


def committed(root: Path, paths: list[str]) -> dict[str, str | None]:
    """path -> the blob id a commit of the folder as it is would hold (None: removed)."""
    return {p: blob((root / p).read_bytes()) if (root / p).exists() else None for p in paths}


def by_git(root: Path, index: bytes, args: list[str], stdin: bytes | None = None) -> bytes:
    """What `git update-index <args>` makes of this index."""
    copy = root.parent / "index-copy"
    copy.write_bytes(index)
    env = {**os.environ, "GIT_INDEX_FILE": str(copy)}
    subprocess.run(["git", "update-index", *args], cwd=root, env=env, input=stdin, check=True)
    return copy.read_bytes()


def index_of(root: Path) -> bytes:
    return (root / ".git" / "index").read_bytes()


def test_paths_from_the_folder_are_staged_as_git_stages_them(tmp_path: Path):
    root = repository(tmp_path / "repo")
    (root / "a/b/new.md").write_text("new\n")  # new, beside others
    (root / "n1/n2").mkdir(parents=True)
    (root / "n1/n2/newer.md").write_text("in new folders\n")
    (root / "a/side.md").write_text("changed\n")
    (root / "c/z.md").unlink()
    paths = ["a/b/new.md", "n1/n2/newer.md", "a/side.md", "c/z.md", "not/there.md"]
    before = index_of(root)

    ours = IndexEditor().edited(before, on_disk(root, committed(root, paths)))

    assert ours == by_git(root, before, ["--add", "--remove", "--", *paths])


def test_committed_blobs_are_staged_as_index_info_stages_them(tmp_path: Path):
    root = repository(tmp_path / "repo")
    changes = {"a/b/deep.md": blob(b"snapshot\n"), "fresh/one.md": blob(b"x\n"), "top.md": None}
    before = index_of(root)

    ours = IndexEditor().edited(before, as_committed(changes))

    assert ours == by_git(root, before, ["-z", "--index-info"], index_info(changes))


def test_the_index_it_wrote_last_is_edited_again_as_git_would(tmp_path: Path):
    root = repository(tmp_path / "repo")
    editor = IndexEditor()
    index = index_of(root)
    for n in range(5):
        (root / f"a/b/note-{n}.md").write_text(f"note {n}\n")
        (root / "top.md").write_text(f"top, version {n}\n")
        paths = [f"a/b/note-{n}.md", "top.md"]
        ours = editor.edited(index, on_disk(root, committed(root, paths)))
        assert ours == by_git(root, index, ["--add", "--remove", "--", *paths])
        index = ours


def test_a_name_that_is_a_folder_or_runs_through_a_file_is_left_to_git(tmp_path: Path):
    root = repository(tmp_path / "repo")
    before = index_of(root)
    for path in ("a/b", "top.md/under.md"):
        assert IndexEditor().edited(before, as_committed({path: blob(b"x\n")})) is None


def test_a_file_that_changed_since_its_commit_or_is_executable_is_left_to_git(tmp_path: Path):
    root = repository(tmp_path / "repo")
    changes = committed(root, ["a/side.md"])
    (root / "a/side.md").write_text("saved again since\n")
    assert on_disk(root, changes) is None

    (root / "top.md").chmod(0o755)
    assert on_disk(root, committed(root, ["top.md"])) is None
    (root / "c/z.md").unlink()
    assert on_disk(root, {"c/z.md": blob(b"c/z.md\n")}) is None  # committed, then removed


@pytest.mark.parametrize(
    "setup",
    [
        ["update-index", "--index-version", "4"],
        ["update-index", "--index-version", "3"],
        ["update-index", "--untracked-cache"],
        ["update-index", "--split-index"],
    ],
)
def test_an_index_in_another_format_is_left_to_git(tmp_path: Path, setup: list[str]):
    root = repository(tmp_path / "repo")
    git(root, *setup)
    if "--index-version" in setup and setup[-1] == "3":
        git(root, "update-index", "--skip-worktree", "top.md")  # (what makes git keep v3)
    (root / "a/b/new.md").write_text("new\n")
    staged = on_disk(root, committed(root, ["a/b/new.md"]))
    assert staged is not None
    assert IndexEditor().edited(index_of(root), staged) is None


def test_a_damaged_index_is_left_to_git(tmp_path: Path):
    root = repository(tmp_path / "repo")
    damaged = bytearray(index_of(root))
    damaged[40] ^= 0xFF
    assert IndexEditor().edited(bytes(damaged), as_committed({"x.md": blob(b"x\n")})) is None


def test_writes_leave_git_clean_and_a_persons_staged_edit_staged(vault_path: Path):
    (vault_path / "todo.txt").write_text("one\n")
    git(vault_path, "add", "todo.txt")
    git(vault_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "My todo")
    with Vault.open(vault_path) as vault:
        first = vault.remember(create_args("First of two"))
        (vault_path / "todo.txt").write_text("one\ntwo\n")
        git(vault_path, "add", "todo.txt")  # the person's git writes the index between writes
        vault.remember(create_args("Second of two"))
        (vault_path / first["path"]).unlink()  # a person's delete, committed as a hand edit
        vault.commit_hand_edits()
    assert git(vault_path, "log", "-1", "--format=", "--name-status") == f"D\t{first['path']}"

    # Stat data as git records it: not even a refresh is needed to see the files unchanged.
    assert git(vault_path, "diff-files", "--name-only") == ""
    assert git(vault_path, "diff", "--cached", "--name-only") == "todo.txt"
    assert git(vault_path, "status", "--porcelain") == "M  todo.txt"
    fsck = subprocess.run(["git", "fsck", "--no-progress"], cwd=vault_path, capture_output=True)
    assert fsck.returncode == 0, fsck.stderr


def test_a_shared_repository_has_git_write_its_index(vault_path: Path):
    git(vault_path, "config", "core.sharedRepository", "group")
    with Vault.open(vault_path) as vault:
        vault.remember(create_args("Written in a shared repository"))
    # (git gives the group write access to what it writes there; a file written here
    # would have the process's umask)
    assert (vault_path / ".git" / "index").stat().st_mode & 0o060 == 0o060
    assert git(vault_path, "status", "--porcelain") == ""


def test_a_full_disk_as_the_index_is_written_fails_the_write_before_head_moves(
    vault_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # git's index gets a write's files before HEAD moves (commits.py): an index that cannot
    # be written stops the commit, and nothing is left half done.
    real = durable.os_write

    def full_disk(fd: int, data: bytes) -> int:
        if ".git/index.lock" in os.readlink(f"/proc/self/fd/{fd}"):
            return real(fd, data[: len(data) // 2]) and 0  # (part written, then no room)
        return real(fd, data)

    with Vault.open(vault_path) as vault:
        vault.remember(create_args("Warm up"))
        head = git(vault_path, "rev-parse", "HEAD")
        index_before = (vault_path / ".git" / "index").read_bytes()
        monkeypatch.setattr(durable, "os_write", full_disk)
        with pytest.raises(VaultError) as refused:
            vault.remember(create_args("Written as the disk fills"))
        monkeypatch.undo()
        assert refused.value.message.startswith("the disk is full"), refused.value.message
        assert "nothing was changed" in refused.value.message
        assert git(vault_path, "rev-parse", "HEAD") == head
        assert (vault_path / ".git" / "index").read_bytes() == index_before
        assert not list((vault_path / ".git").glob("index.lock*"))
        assert git(vault_path, "status", "--porcelain") == ""
        vault.remember(create_args("The next write"))
    assert git(vault_path, "status", "--porcelain") == ""


def test_a_post_index_change_hook_has_git_write_the_index_and_runs(vault_path: Path):
    ran = vault_path.parent / "hook-ran"
    install_hook(vault_path, "post-index-change", f'echo "$1 $2" >> "{ran}"')
    with Vault.open(vault_path) as vault:
        vault.remember(create_args("Seen by the hook"))
    assert ran.read_text().strip() != ""
    assert git(vault_path, "status", "--porcelain") == ""
