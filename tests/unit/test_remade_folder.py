"""Machine-state folders (.vault/run, the ledger) a person's `git clean -xfd` removes at any
moment: a file made in one is made again when its folder vanishes between the folder's
mkdir and the file's creation (the leader's lease lock failed so during a torture run)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from vault_tool.storage.durable import REMADE_ATTEMPTS, in_remade_folder


def test_a_folder_removed_before_the_file_is_made_again(tmp_path: Path):
    folder = tmp_path / ".vault" / "run"
    removed = []

    def create() -> int:
        if not removed:  # a clean, right after the mkdir
            removed.append(True)
            shutil.rmtree(tmp_path / ".vault")
        return os.open(folder / "leader.lock", os.O_RDWR | os.O_CREAT, 0o644)

    fd = in_remade_folder(folder, create)
    os.close(fd)
    assert (folder / "leader.lock").is_file() and removed == [True]


def test_a_folder_that_keeps_vanishing_fails_after_a_few_tries(tmp_path: Path):
    folder = tmp_path / "run"
    tries = []

    def create() -> None:
        tries.append(True)
        shutil.rmtree(folder)
        (folder / "x").write_text("x")

    with pytest.raises(FileNotFoundError):
        in_remade_folder(folder, create)
    assert len(tries) == REMADE_ATTEMPTS
