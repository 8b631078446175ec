"""The folder and its git repository: init, open, path safety, which files are memories."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers import create_args, git
from vault_tool.engine.vault import Vault
from vault_tool.errors import InvalidInput, VaultUnavailable
from vault_tool.storage.store import Store

# --- init ----------------------------------------------------------------------------------


def test_init_on_an_empty_folder_makes_one_initial_commit_and_a_clean_tree(tmp_path: Path):
    root = tmp_path / "vault"
    root.mkdir()
    Store.init(root).close()

    assert git(root, "rev-list", "--count", "HEAD") == "1"
    assert git(root, "log", "-1", "--format=%s") == "Initialize vault"
    assert git(root, "status", "--porcelain", "--ignored=no") == ""
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert ".vault/index/" in (root / ".gitignore").read_text().splitlines()
    assert "* -text" in (root / ".gitattributes").read_text().splitlines()
    assert (root / ".vault" / "config.toml").is_file()
    committed = set(git(root, "ls-tree", "-r", "--name-only", "HEAD").splitlines())
    assert committed == {".gitignore", ".gitattributes", ".vault/config.toml"}


def test_init_creates_a_missing_folder_with_parents(tmp_path: Path):
    root = tmp_path / "a" / "b" / "vault"
    Store.init(root).close()
    assert git(root, "rev-parse", "--show-toplevel") == str(root.resolve())


def test_init_without_a_git_identity_commits_as_vault_tool_and_writes_work(tmp_path: Path):
    # The autouse fixture points GIT_CONFIG_GLOBAL at an empty file and drops GIT_AUTHOR_*.
    assert "user.name" not in git(tmp_path, "config", "--list", "--show-origin")
    root = tmp_path / "vault"
    Store.init(root).close()
    assert git(root, "log", "-1", "--format=%an <%ae>") == "vault-tool <vault-tool@localhost>"

    with Vault.open(root, client="pytest") as vault:
        result = vault.remember(create_args())
    assert result["status"] == "created"
    # The client's write is authored by the client, committed as vault-tool.
    assert git(root, "log", "-1", "--format=%an <%ae>|%cn") == (
        "pytest <pytest@vault-tool>|vault-tool"
    )
    assert git(root, "rev-list", "--count", "HEAD") == "2"


IDENTITY = "[user]\n\tname = Ana Example\n\temail = ana@example.com\n"


def test_init_keeps_the_users_identity_from_home_gitconfig(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    gitconfig = Path(os.environ["HOME"]) / ".gitconfig"
    gitconfig.write_text(IDENTITY)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    root = tmp_path / "vault"
    Store.init(root).close()
    assert git(root, "log", "-1", "--format=%an <%ae>") == "Ana Example <ana@example.com>"
    assert "[user]" not in (root / ".git" / "config").read_text()  # (no fallback identity)


def test_init_keeps_the_users_identity_from_git_config_global(tmp_path: Path):
    # git reads the global config from $GIT_CONFIG_GLOBAL when it is set; so must the tool.
    Path(os.environ["GIT_CONFIG_GLOBAL"]).write_text(IDENTITY)
    assert git(tmp_path, "config", "user.name") == "Ana Example"
    root = tmp_path / "vault"
    Store.init(root).close()
    assert git(root, "log", "-1", "--format=%an <%ae>") == "Ana Example <ana@example.com>"
    assert "[user]" not in (root / ".git" / "config").read_text()  # (no fallback identity)


def test_init_refuses_a_folder_that_is_already_a_vault(vault_path: Path):
    head = git(vault_path, "rev-parse", "HEAD")
    config = (vault_path / ".vault" / "config.toml").read_bytes()
    with pytest.raises(InvalidInput) as caught:
        Store.init(vault_path)
    assert "already a vault" in caught.value.message
    assert git(vault_path, "rev-parse", "HEAD") == head
    assert (vault_path / ".vault" / "config.toml").read_bytes() == config


def test_init_refuses_a_path_that_is_a_file(tmp_path: Path):
    target = tmp_path / "file.txt"
    target.write_text("not a folder")
    with pytest.raises(InvalidInput):
        Store.init(target)
    assert target.read_text() == "not a folder"


# --- open ----------------------------------------------------------------------------------


def test_open_on_a_folder_that_is_not_a_vault_says_how_to_make_one(tmp_path: Path):
    with pytest.raises(VaultUnavailable) as caught:
        Store.open(tmp_path)
    assert "vault-tool init" in caught.value.hint
    assert list(tmp_path.iterdir()) == []


def test_open_on_a_missing_folder_does_not_create_it(tmp_path: Path):
    missing = tmp_path / "nowhere"
    with pytest.raises(VaultUnavailable):
        Store.open(missing)
    assert not missing.exists()


def test_open_on_a_plain_git_repository_is_not_a_vault(tmp_path: Path):
    git(tmp_path, "init", "--quiet")
    with pytest.raises(VaultUnavailable) as caught:
        Store.open(tmp_path)
    assert "vault-tool init" in caught.value.hint
    assert not (tmp_path / ".vault").exists()


def test_vault_nested_in_another_repository_commits_only_into_its_own(tmp_path: Path):
    outer = tmp_path / "outer"
    outer.mkdir()
    git(outer, "init", "--quiet", "--initial-branch=main")
    git(outer, "config", "user.name", "Outer")
    git(outer, "config", "user.email", "outer@example.com")
    (outer / "README.md").write_text("outer project\n")
    git(outer, "add", "README.md")
    git(outer, "commit", "--quiet", "-m", "outer first")
    outer_head = git(outer, "rev-parse", "HEAD")

    inner = outer / "notes" / "vault"
    Store.init(inner, nested=True).close()  # (asked for: refused without it)
    with Vault.open(inner, client="pytest") as vault:
        vault.remember(create_args())

    assert (inner / ".git").is_dir()
    assert git(outer, "rev-parse", "HEAD") == outer_head
    assert git(outer, "rev-list", "--count", "HEAD") == "1"
    assert git(outer, "diff", "--cached", "--name-only") == ""
    assert git(inner, "rev-list", "--count", "HEAD") == "2"
    assert git(inner, "rev-parse", "--show-toplevel") == str(inner.resolve())


def test_git_environment_variables_do_not_redirect_writes(
    tmp_path: Path, vault_path: Path, monkeypatch: pytest.MonkeyPatch
):
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    git(decoy, "init", "--quiet")
    monkeypatch.setenv("GIT_DIR", str(decoy / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(decoy))
    with Vault.open(vault_path, client="pytest") as vault:
        vault.remember(create_args())
    monkeypatch.delenv("GIT_DIR", raising=False)
    monkeypatch.delenv("GIT_WORK_TREE", raising=False)
    assert git(vault_path, "rev-list", "--count", "HEAD") == "2"
    assert git(decoy, "rev-list", "--all", "--count") == "0"


# --- resolve -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "relpath",
    [
        "..",
        "../outside.md",
        "notes/../../outside.md",
        "notes/./x.md",
        "/etc/passwd",
        "notes//x.md",
        "notes\\x.md",
        "",
        "a\x00b.md",
    ],
)
def test_resolve_refuses_paths_that_could_leave_the_vault(vault_path: Path, relpath: str):
    store = Store.open(vault_path)
    try:
        with pytest.raises(InvalidInput):
            store.resolve(relpath)
    finally:
        store.close()


def test_resolve_refuses_a_symlinked_folder_pointing_outside(tmp_path: Path, vault_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n")
    (vault_path / "linked").symlink_to(outside, target_is_directory=True)
    store = Store.open(vault_path)
    try:
        with pytest.raises(InvalidInput) as caught:
            store.resolve("linked/secret.md")
        assert "out of the vault" in caught.value.message
        assert store.read_bytes("notes/none.md") is None
        with pytest.raises(InvalidInput):
            store.read_bytes("linked/secret.md")
    finally:
        store.close()


def test_resolve_refuses_a_symlinked_file(tmp_path: Path, vault_path: Path):
    outside = tmp_path / "outside.md"
    outside.write_text("# Outside\n")
    (vault_path / "notes").mkdir()
    (vault_path / "notes" / "link.md").symlink_to(outside)
    store = Store.open(vault_path)
    try:
        with pytest.raises(InvalidInput) as caught:
            store.resolve("notes/link.md")
        assert "symlink" in caught.value.message
    finally:
        store.close()


def test_resolve_accepts_an_ordinary_nested_path(vault_path: Path):
    store = Store.open(vault_path)
    try:
        assert store.resolve("decision/2026-11/x.md") == vault_path / "decision/2026-11/x.md"
    finally:
        store.close()


# --- which files are memories --------------------------------------------------------------


def test_iter_memory_paths_lists_only_memory_files(tmp_path: Path, vault_path: Path):
    def put(relpath: str, text: str = "# T\n") -> None:
        target = vault_path / relpath
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)

    wanted = {"notes/wombat.md", "decision/2026-11/a.md", "top.md", "notes/sub/README.md"}
    for relpath in wanted:
        put(relpath)
    put("README.md")
    put("notes/.hidden.md")
    put(".dotfolder/x.md")
    put("notes/.wombat.md.swp")
    put("notes/x.md~")
    put("notes/#x.md#")
    put("notes/~x.md")
    put("notes/.#x.md")
    put("notes/x.txt")
    put("notes/x.markdown")
    put("notes/x.md.orig")
    put(".vault/stray.md")
    put(".git/stray.md")
    put("notes/.x.md.vault-tmp-0a1b2c3d")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "o.md").write_text("# O\n")
    (vault_path / "linked-folder").symlink_to(outside, target_is_directory=True)
    (vault_path / "notes" / "linked.md").symlink_to(outside / "o.md")
    (vault_path / "notes" / "inner-link.md").symlink_to(vault_path / "top.md")

    store = Store.open(vault_path)
    try:
        found = dict(store.iter_memory_paths())
    finally:
        store.close()
    assert set(found) == wanted
    assert all(stat.st_size == 4 for stat in found.values())


def test_a_file_removed_while_the_folder_is_listed_is_left_out(vault_path: Path):
    """A person's checkout, stash or clean removes files while the watcher lists the folder:
    the files listed but gone by their stat are left out, not a crash of the listing."""
    folder = vault_path / "notes"
    folder.mkdir()
    for name in ("a.md", "b.md", "c.md"):
        (folder / name).write_text(f"# {name}\n")
    store = Store.open(vault_path)
    try:
        listing = store.iter_memory_paths()
        first, _ = next(listing)  # the folder is read whole; its entries are stat-ed in turn
        for name in ("a.md", "b.md", "c.md"):
            if f"notes/{name}" != first:
                (folder / name).unlink()
        assert list(listing) == []
    finally:
        store.close()
