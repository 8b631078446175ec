"""A tool write's commit, made with git's plumbing: the same commit `git commit -- <paths>`
would make, on real git repositories."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers import create_args, git, install_hook
from vault_tool.engine.vault import Vault
from vault_tool.errors import VaultError, VaultUnavailable
from vault_tool.storage import refs
from vault_tool.storage.store import Store
from vault_tool.storage.trees import edit_tree

NAMES = [
    "a.md",
    "a-b.md",
    "a/x.md",
    "a/y/z.md",
    "ab/c.md",
    "b c/ü é.md",
    "notes/2026-11/deep.md",
]


def _read_tree(repo: Path):
    def read(binsha: bytes) -> bytes:
        return subprocess.run(
            ["git", "cat-file", "tree", binsha.hex()], cwd=repo, capture_output=True, check=True
        ).stdout

    return read


@pytest.mark.parametrize(
    "changes",
    [
        {"a.md": "new", "a/q.md": "new", "new/folder/n.md": "new"},
        {"a/y/z.md": None},  # the folder a/y becomes empty and disappears
        {"a/x.md": None, "a/y/z.md": None, "a.md": "new"},  # so does a
        {"b c/ü é.md": "new", "a-b.md": None, "a.b.md": "new"},
    ],
)
def test_new_trees_are_the_ones_git_builds_from_its_index(tmp_path: Path, changes: dict):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    for name in NAMES:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(f"{name}\n")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "base")
    new_blob = (
        subprocess.run(
            ["git", "hash-object", "-w", "--stdin"],
            cwd=repo,
            input=b"changed\n",
            capture_output=True,
        )
        .stdout.decode()
        .strip()
    )
    for path, blob in changes.items():
        if blob is None:
            git(repo, "rm", "-q", "--cached", "--", path)
        else:
            git(repo, "update-index", "--add", "--cacheinfo", f"100644,{new_blob},{path}")
    expected = git(repo, "write-tree")

    root = bytes.fromhex(git(repo, "rev-parse", "HEAD^{tree}"))
    wanted = {path: (new_blob if blob else None) for path, blob in changes.items()}
    new_root, trees = edit_tree(_read_tree(repo), root, wanted)

    assert new_root is not None and new_root.hex() == expected
    # Every tree git built that HEAD did not have is among ours (children first).
    listed = git(repo, "ls-tree", "-r", "-t", expected).splitlines()
    assert len(trees) == 1 + sum(
        1
        for line in listed
        if line.split()[1] == "tree"
        and any(p.startswith(line.split("\t")[1] + "/") for p in changes)
    )


def test_a_tool_write_commits_only_its_file_and_leaves_a_clean_status(vault: Vault):
    root = vault.root
    # The person has their own work staged and unstaged; neither may enter our commit.
    (root / "mine.txt").write_text("staged work\n")
    git(root, "add", "mine.txt")
    (root / ".gitignore").write_text((root / ".gitignore").read_text() + "extra\n")

    result = vault.remember(create_args())

    assert git(root, "show", "--format=", "--name-only", "HEAD") == result["path"]
    assert git(root, "log", "-1", "--format=%s%n%n%b") == (
        "Create decision: Ana owns the billing service\n\n"
        f"Memory-Id: {result['memory_id']}\nClient: pytest"
    )
    assert git(root, "reflog", "-1", "--format=%gs") == (
        "commit: Create decision: Ana owns the billing service"
    )
    assert git(root, "diff", "--cached", "--name-only") == "mine.txt"
    assert git(root, "diff", "--name-only") == ".gitignore"
    assert git(root, "fsck", "--no-progress", "--no-dangling") == ""


def test_a_delete_removes_the_file_and_folders_left_empty(vault: Vault):
    created = vault.remember(create_args())
    folder = created["path"].split("/")[0]
    vault.remember(
        {
            "mode": "delete",
            "memory_id": created["memory_id"],
            "expected_version_id": created["version_id"],
        }
    )
    listed = git(vault.root, "ls-tree", "--name-only", "HEAD").splitlines()
    assert folder not in listed
    assert git(vault.root, "status", "--porcelain") == ""


def test_a_vault_with_a_commit_hook_commits_through_git_commit(vault_path: Path):
    marker = vault_path.parent / "post-commit.ran"
    install_hook(vault_path, "post-commit", f'echo ran >> "{marker}"')
    with Vault.open(vault_path) as vault:
        vault.remember(create_args())
    assert marker.read_text() == "ran\n"
    assert git(vault_path, "status", "--porcelain") == ""


def test_commit_gpgsign_makes_tool_writes_signed(vault_path: Path, tmp_path: Path):
    # A stand-in for gpg that answers the way git expects from a successful signing.
    fake_gpg = tmp_path / "fake-gpg"
    fake_gpg.write_text(
        "#!/bin/sh\ncat > /dev/null\n"
        'echo "[GNUPG:] BEGIN_SIGNING" >&2\necho "[GNUPG:] SIG_CREATED D 1 8 00 1 X" >&2\n'
        "printf -- '-----BEGIN PGP SIGNATURE-----\\n\\nfake\\n-----END PGP SIGNATURE-----\\n'\n"
    )
    fake_gpg.chmod(0o755)
    git(vault_path, "config", "gpg.program", str(fake_gpg))
    git(vault_path, "config", "commit.gpgsign", "true")
    with Vault.open(vault_path) as vault:
        vault.remember(create_args())
    assert "gpgsig -----BEGIN PGP SIGNATURE-----" in git(vault_path, "cat-file", "commit", "HEAD")


def test_a_head_moved_by_another_tool_meanwhile_is_built_upon(vault: Vault):
    # A script moves HEAD with plumbing (no index lock) while our commit is being built.
    root = vault.root
    commits = vault._store.commits
    write_trees = commits._write_trees

    def script_commits_meanwhile(trees):
        if "Their script" not in git(root, "log", "--format=%s"):
            tree = git(root, "rev-parse", "HEAD^{tree}")
            theirs = git(root, "commit-tree", tree, "-p", "HEAD", "-m", "Their script")
            git(root, "update-ref", "HEAD", theirs)
        write_trees(trees)

    commits._write_trees = script_commits_meanwhile
    result = vault.remember(create_args())

    assert git(root, "log", "--format=%s", "-2").splitlines() == [
        "Create decision: Ana owns the billing service",
        "Their script",
    ]
    assert result["version_id"] == git(root, "rev-parse", "HEAD")
    assert git(root, "status", "--porcelain") == ""


def test_a_persons_git_commit_during_ours_waits_for_the_index_and_reverts_nothing(
    vault: Vault,
):
    # While our commit holds git's index lock, the person's `git commit` is refused (as
    # with two gits at once); once it is free, their commit has only their file, and
    # ours is intact in HEAD.
    root = vault.root
    (root / "mine.txt").write_text("my own work\n")
    git(root, "add", "mine.txt")
    commits = vault._store.commits
    write_trees = commits._write_trees
    refused = []

    def person_commits_meanwhile(trees):
        attempt = subprocess.run(
            ["git", "commit", "-q", "-m", "My own change"], cwd=root, capture_output=True
        )
        refused.append(attempt.returncode != 0 and b"index.lock" in attempt.stderr)
        write_trees(trees)

    commits._write_trees = person_commits_meanwhile
    result = vault.remember(create_args())
    git(root, "commit", "-q", "-m", "My own change")

    assert refused == [True]
    assert git(root, "show", "--format=", "--name-only", "HEAD") == "mine.txt"
    assert git(root, "show", "--format=", "--name-only", "HEAD^") == result["path"]
    assert git(root, "status", "--porcelain") == ""


# git's reference-transaction hook runs as a ref is about to move ("prepared"), with
# "<old> <new> <ref>" lines: this one writes how git's index differs from the new commit.
INDEX_AS_HEAD_MOVES = """[ "$1" = prepared ] || exit 0
while read old new ref; do
  git diff --cached --name-status "$new" >> "{log}"; echo "$ref moves" >> "{log}"
done"""


def _create_update_delete(vault: Vault) -> None:
    made = vault.remember(create_args())
    changed = vault.remember(
        {
            "mode": "update",
            "memory_id": made["memory_id"],
            "expected_version_id": made["version_id"],
            "content_md": "# Ana owns the billing service\n\nSince May.\n",
            "semantic_delta": create_args()["semantic_delta"],
        }
    )
    vault.remember(
        {
            "mode": "delete",
            "memory_id": made["memory_id"],
            "expected_version_id": changed["version_id"],
        }
    )


# `git commit` reads HEAD, then reads the index before it takes the index lock, and writes
# the index it read. Were HEAD to name a write's commit before git's index had its files, a
# person's commit could read the one and not the other and commit the files' removal (the
# torture run: "My own change" deleting an agent's memory, left in the folder untracked).


def test_gits_index_holds_a_writes_files_before_git_moves_head(vault_path: Path):
    log = vault_path.parent / "index-as-head-moves.log"
    install_hook(vault_path, "reference-transaction", INDEX_AS_HEAD_MOVES.format(log=log))
    with Vault.open(vault_path) as vault:
        _create_update_delete(vault)
    lines = log.read_text().splitlines()
    assert lines.count("refs/heads/main moves") == 3
    assert [line for line in lines if not line.endswith(" moves")] == []


def test_gits_index_holds_a_writes_files_before_the_branch_moves_in_process(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
):
    root, move_branch, differences = vault.root, refs.move_branch, []

    def look_then_move(git_dir, branch, new, *args):
        differences.append(git(root, "diff", "--cached", "--name-status", new))
        return move_branch(git_dir, branch, new, *args)

    monkeypatch.setattr(refs, "move_branch", look_then_move)
    _create_update_delete(vault)
    assert differences == ["", "", ""]


def test_a_head_that_does_not_move_leaves_gits_index_as_it_was(vault_path: Path):
    install_hook(vault_path, "reference-transaction", '[ "$1" = prepared ] && exit 1; exit 0')
    index = vault_path / ".git" / "index"
    before = index.read_bytes()
    with Vault.open(vault_path) as vault, pytest.raises(VaultError):
        vault.remember(create_args())
    assert index.read_bytes() == before
    assert git(vault_path, "status", "--porcelain") == ""
    assert list((vault_path / ".vault" / "run" / "index-pending").iterdir()) == []


@pytest.mark.parametrize("index_there", [True, False])
def test_an_index_published_then_withdrawn_is_the_one_before(vault_path: Path, index_there):
    # (no index at all: as `rm .git/index`, the first half of doctor's way out, leaves it)
    index, lock = vault_path / ".git" / "index", vault_path / ".git" / "index.lock"
    store = Store.open(vault_path)
    try:
        if not index_there:
            index.unlink()
        before = index.read_bytes() if index_there else None
        with store.commits._index_locked() as locked:
            locked.replace(b"DIRC the new index")
            locked.publish()
            assert index.read_bytes() == b"DIRC the new index" and lock.exists()
            locked.withdraw()
        assert (index.read_bytes() if index.exists() else None) == before
        assert not lock.exists()
    finally:
        store.close()


def test_a_sha256_repository_is_refused_with_the_way_out(tmp_path: Path):
    path = tmp_path / "vault"
    path.mkdir()
    git(path, "init", "-q", "--object-format=sha256")
    with pytest.raises(VaultUnavailable) as caught:
        Store.init(path)
    assert "sha256" in caught.value.message
    assert "--object-format=sha1" in caught.value.hint
    assert not (path / ".vault").exists()


def test_a_hand_edit_commits_the_checked_bytes_even_if_the_file_changed_since(
    vault_path: Path,
):
    note = vault_path / "notes" / "n.md"
    note.parent.mkdir()
    checked = b"# A checked note\n\nAll there.\n"
    note.write_bytes(b"# A checked note\n\nStill typ")  # saved again after the check
    store = Store.open(vault_path)
    try:
        sha = store.commit_paths(
            ["notes/n.md", "notes/gone.md"], "Hand edit: A checked note",
            snapshot={"notes/n.md": checked, "notes/gone.md": None},
        )  # fmt: skip
    finally:
        store.close()
    assert sha == git(vault_path, "rev-parse", "HEAD")
    assert git(vault_path, "show", "HEAD:notes/n.md") == checked.decode().strip()
    # git's index holds the checked bytes too: the later save shows as a plain edit.
    assert git(vault_path, "diff", "--cached", "--name-only") == ""
    assert git(vault_path, "status", "--porcelain") == "M notes/n.md"


def test_a_writer_killed_holding_the_index_lock_never_lets_a_commit_revert_its_write(
    vault: Vault,
):
    # Another writer committed `theirs.md` (HEAD moved) and was killed before putting it in
    # git's index: its note and the index lock stay. The next write here takes the stale
    # lock over and brings the index up to HEAD first, so the person's plain
    # `git commit` afterwards cannot commit the file's removal.
    root = vault.root
    relpath = "notes/theirs.md"
    (root / "notes").mkdir()
    (root / relpath).write_text("# Theirs\n\nCommitted before the kill.\n")
    blob = git(root, "hash-object", "-w", relpath)
    git(root, "update-index", "--add", "--cacheinfo", f"100644,{blob},{relpath}")
    tree = git(root, "write-tree")
    git(root, "rm", "-q", "--cached", relpath)
    git(root, "update-ref", "HEAD", git(root, "commit-tree", tree, "-p", "HEAD", "-m", "Theirs"))
    pending = root / ".vault" / "run" / "index-pending"
    pending.mkdir(parents=True, exist_ok=True)
    (pending / "1-99999.json").write_text(json.dumps([relpath]))
    (root / ".git" / "index.lock").write_bytes(b"")

    vault.remember(create_args())
    (root / "mine.txt").write_text("my own work\n")
    git(root, "add", "mine.txt")
    git(root, "commit", "-q", "-m", "My own change")

    assert git(root, "show", "--format=", "--name-only", "HEAD") == "mine.txt"
    assert git(root, "show", f"HEAD:{relpath}").startswith("# Theirs")
    assert git(root, "status", "--porcelain") == ""
    assert list(pending.iterdir()) == []
