"""A person's `git clean` that runs after a create's commit read the new file and before
git's index has it: git takes the file for untracked and removes it. The write was
committed and is acknowledged, so the file is put back: the folder must hold what the
commit holds, and the watcher must find nothing to take in (no "Delete (hand edit)")."""

from __future__ import annotations

import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from tests.helpers import create_args, eventually, git
from vault_tool.engine.vault import Vault
from vault_tool.storage import changes
from vault_tool.storage.commits import Committer
from vault_tool.storage.processes import CLEAN, git_processes

# Stands for a `git clean` that read git's index before a write's commit put the new file
# there, and walks the folder only after the file appeared: it removes every note made
# since it started. (A real clean cannot be held in that state on purpose; this process
# looks like one where it counts: named git, `clean` on its command line, in the vault.)
# "Made since it started" is "not listed when it started": a file's time stamp could fall in
# the same clock tick as a marker's.
SLOW_CLEAN = """#!/bin/sh
notes() { find . -name .git -prune -o -name '*.md' -print | sort; }
notes > "$LISTED" && touch "$LISTED.done"
new() { notes | comm -13 "$LISTED" -; }
while [ -z "$(new)" ]; do sleep 0.01; done
sleep 0.5
new | xargs rm -f
"""


def _stand_in(tmp_path: Path, script: str) -> Path:
    """A shell script named git, to run as a person's `git clean` would run."""
    stand_in = tmp_path / "bin" / "git"
    stand_in.parent.mkdir()
    stand_in.write_text(script)
    stand_in.chmod(0o755)
    return stand_in


def test_a_new_file_git_clean_removed_before_the_index_had_it_is_put_back(
    vault: Vault, vault_path: Path, monkeypatch: pytest.MonkeyPatch
):
    stage = Committer._stage

    def clean_first(self, *args, **kwargs):  # the person's git runs just before the index update
        subprocess.run(["git", "clean", "-fdq"], cwd=vault_path, check=True)
        return stage(self, *args, **kwargs)

    monkeypatch.setattr(Committer, "_stage", clean_first)
    made = vault.remember(create_args("Staging needs the VPN"))
    monkeypatch.undo()

    assert git(vault_path, "rev-parse", "HEAD") == made["version_id"]
    on_disk = vault_path / made["path"]
    assert on_disk.is_file()
    assert git(vault_path, "show", f"HEAD:{made['path']}") == on_disk.read_text().strip()
    assert git(vault_path, "status", "--porcelain", "--", made["path"]) == ""
    assert vault.uncommitted() == []
    assert vault.read(made["memory_id"])["version_id"] == made["version_id"]


def test_a_new_file_a_checkout_of_an_older_commit_removed_after_the_commit_stays_removed(
    vault: Vault, vault_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # The person checks out an older commit right after the write's commit landed: git
    # removes the new file, rightly. Put back, it was an untracked file in the way of
    # `git checkout main` ("untracked working tree files would be overwritten"): the
    # torture's person could not get back to their branch.
    vault.remember(create_args("Warm up"))
    before = git(vault_path, "rev-parse", "HEAD")
    waits = changes.wait_out_cleans

    def checkout_first(root):
        git(vault_path, "checkout", "-q", "--detach", before)
        return waits(root)

    monkeypatch.setattr(changes, "wait_out_cleans", checkout_first)
    made = vault.remember(create_args("Staging needs the VPN"))
    monkeypatch.undo()

    assert not (vault_path / made["path"]).exists()  # (as the older commit has it)
    assert git(vault_path, "status", "--porcelain") == ""
    git(vault_path, "checkout", "-q", "main")
    assert git(vault_path, "rev-parse", "HEAD") == made["version_id"]
    assert git(vault_path, "show", f"HEAD:{made['path']}") == (
        (vault_path / made["path"]).read_text().strip()
    )


def test_a_git_clean_that_read_the_index_before_the_commit_is_waited_out(
    vault: Vault, vault_path: Path, tmp_path: Path
):
    stand_in = _stand_in(tmp_path, SLOW_CLEAN)
    listed = tmp_path / "listed"
    env = {"PATH": "/usr/bin:/bin", "LISTED": str(listed)}
    clean = subprocess.Popen([str(stand_in), "clean", "-xfd"], cwd=vault_path, env=env)
    try:
        eventually(lambda: (tmp_path / "listed.done").exists())  # (it knows the notes there)
        eventually(lambda: git_processes(vault_path.resolve(), CLEAN) == [clean.pid])
        made = vault.remember(create_args("Staging needs the VPN"))
        answered_after_the_clean = clean.poll() is not None
    finally:
        clean.kill()
        clean.wait()
    assert answered_after_the_clean
    on_disk = vault_path / made["path"]
    assert on_disk.is_file()
    assert git(vault_path, "show", f"HEAD:{made['path']}") == on_disk.read_text().strip()
    assert git(vault_path, "status", "--porcelain", "--", made["path"]) == ""
    assert vault.uncommitted() == []


def test_only_a_clean_that_removes_files_is_waited_for(vault_path: Path, tmp_path: Path):
    stand_in = tmp_path / "bin" / "git"
    stand_in.parent.mkdir()
    stand_in.write_text("#!/bin/sh\nsleep 30\n")
    stand_in.chmod(0o755)
    runs = {
        options: subprocess.Popen([str(stand_in), *options], cwd=vault_path)
        for options in (("clean", "-xfd"), ("clean", "-nxfd"), ("clean", "-i"),
                        ("clean", "--dry-run"), ("status",))
    }  # fmt: skip
    try:
        every = sorted(p.pid for p in runs.values())
        eventually(lambda: sorted(git_processes(vault_path.resolve())) == every)  # all started
        assert git_processes(vault_path.resolve(), CLEAN) == [runs[("clean", "-xfd")].pid]
    finally:
        for process in runs.values():
            process.kill()
            process.wait()


# Stands for a `git clean` that read git's index before the watcher's commit of a person's
# new note put it there: it removes the note once HEAD has it, then runs on until released.
CLEAN_AFTER_THE_COMMIT = """#!/bin/sh
until "$GIT" cat-file -e "HEAD:$NOTE" 2>/dev/null; do sleep 0.01; done
rm -f "$NOTE"
until [ -e "$RELEASE" ]; do sleep 0.01; done
"""


def test_a_persons_new_note_a_git_clean_removes_as_it_is_committed_is_put_back(
    vault: Vault, vault_path: Path, tmp_path: Path
):
    # Seen in the torture: the note was committed, removed by such a clean, and its
    # removal committed as a hand edit ("Delete note"): the person's note left the folder.
    stand_in = _stand_in(tmp_path, CLEAN_AFTER_THE_COMMIT)
    note, release = "notes/vpn.md", tmp_path / "release"
    env = {"PATH": "/usr/bin:/bin", "GIT": shutil.which("git") or "git", "NOTE": note}
    clean = subprocess.Popen(
        [str(stand_in), "clean", "-xfd"], cwd=vault_path, env={**env, "RELEASE": str(release)}
    )
    try:
        eventually(lambda: git_processes(vault_path.resolve(), CLEAN) == [clean.pid])
        (vault_path / "notes").mkdir(exist_ok=True)
        (vault_path / note).write_text("# Staging needs the VPN\n")
        syncing = threading.Thread(target=vault.sync_paths, args=([note],))
        syncing.start()
        eventually(lambda: not (vault_path / note).exists())  # removed after its commit
        release.touch()
        syncing.join(timeout=60)
    finally:
        release.touch()
        clean.kill()
        clean.wait()
    assert (vault_path / note).read_text() == "# Staging needs the VPN\n"
    assert git(vault_path, "status", "--porcelain", "--", note) == ""
    assert vault.uncommitted() == []
    assert git(vault_path, "log", "--format=%s", "--", note).splitlines() == [
        "Hand edit: Staging needs the VPN"
    ]


def test_a_note_removed_by_its_person_right_after_its_commit_stays_removed(
    vault: Vault, vault_path: Path
):
    # With no `git clean` running, a new note gone after its commit was removed by the
    # person: it is not put back.
    (vault_path / "notes").mkdir(exist_ok=True)
    note = vault_path / "notes" / "vpn.md"
    note.write_text("# Staging needs the VPN\n")
    commit = Committer.commit

    def removed_right_after(self, *args, **kwargs):
        sha = commit(self, *args, **kwargs)
        note.unlink()
        return sha

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Committer, "commit", removed_right_after)
        vault.sync_paths(["notes/vpn.md"])
    assert not note.exists()
