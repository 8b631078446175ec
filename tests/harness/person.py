"""A person editing the vault by hand while the crash harness kills the tool's processes.

The person edits memory files the tool wrote (in place and by atomic rename), writes new
notes, appends to them, moves and deletes them, and now and then saves a file broken on
purpose. lost_edits() checks afterwards that the tool never overwrote or removed what
the person wrote, and committed it.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

from tests.harness import consistency
from tests.harness.consistency import Ack


class Person:
    """What the person last wrote to each path (None: deleted by hand), and what is broken."""

    def __init__(self, vault: Path, rng: random.Random) -> None:
        self.vault = vault
        self.rng = rng
        self.hand: dict[str, bytes | None] = {}
        self.broken: set[str] = set()
        self._counter = 0

    def edit(self, tag: str, live: list[Ack]) -> bool:
        """One thing a person does in an editor: edit, create, rename, delete, break.

        False when the memory picked to edit is not on disk (nothing was done).
        """
        self._counter += 1
        k = self._counter
        roll = self.rng.random()
        notes = [
            p
            for p, data in self.hand.items()
            if p.startswith("notes/") and data is not None and p not in self.broken
        ]
        if roll < 0.3 and live:
            ack = self.rng.choice(live)
            path = _path_of(self.vault, ack.memory_id)
            if path is None:
                return False
            data = (self.vault / path).read_bytes() + f"\nHand note {k}.\n".encode()
            self._write(path, data, atomic=self.rng.random() < 0.5)
        elif roll < 0.6 or not notes:
            path = f"notes/{tag}-hand-{k}.md"
            self._write(path, f"# Hand note {k}\n\nWritten by a person ({tag}).\n".encode())
        elif roll < 0.72:
            path = self.rng.choice(notes)
            data = self.hand[path] or b""
            self._write(path, data + f"\nMore words {k}.\n".encode(), atomic=False)
        elif roll < 0.82:
            old = self.rng.choice(notes)
            new = f"notes/moved/{tag}-moved-{k}.md"
            (self.vault / new).parent.mkdir(parents=True, exist_ok=True)
            os.replace(self.vault / old, self.vault / new)
            self.hand[new], self.hand[old] = self.hand[old], None
        elif roll < 0.92:
            path = self.rng.choice(notes)
            (self.vault / path).unlink()
            self.hand[path] = None
        else:
            path = f"notes/{tag}-broken-{k}.md"
            self.broken.add(path)
            self._write(path, b"---\ntitle: [unclosed\n---\n# Broken on purpose\n")
        return True

    def remove_broken(self) -> None:
        """The broken files were reported; the person now deletes them."""
        for path in self.broken:
            (self.vault / path).unlink(missing_ok=True)
            self.hand.pop(path, None)
        self.broken.clear()

    def lost_edits(self) -> list[str]:
        """The tool never overwrote or removed what the person wrote, and committed it."""
        from vault_tool.storage.git import blob_sha

        problems = []
        head = consistency.git(self.vault, "-c", "core.quotepath=off", "ls-tree", "-r", "HEAD")
        committed = {line.split("\t", 1)[1]: line.split()[2] for line in head.splitlines()}
        for path, expected in self.hand.items():
            target = self.vault / path
            actual = target.read_bytes() if target.is_file() else None
            # A memory file the writer updated since the hand edit is no longer the person's.
            if actual != expected and not self._rewritten_by_tool(path):
                problems.append(f"{path}: hand edit lost (disk differs from what was written)")
                continue
            if path in self.broken or actual != expected:
                continue
            if expected is None and path in committed:
                problems.append(f"{path}: deleted by hand but still committed")
            elif expected is not None and committed.get(path) != blob_sha(expected):
                problems.append(f"{path}: hand edit not committed")
        return problems

    def _write(self, path: str, data: bytes, *, atomic: bool = True) -> None:
        target = self.vault / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if atomic:
            tmp = target.with_name(f".{target.name}.swp")
            tmp.write_bytes(data)
            os.replace(tmp, target)
        else:
            with open(target, "wb") as out:  # truncate, then write: a reader may see either
                out.write(data)
        self.hand[path] = data

    def _rewritten_by_tool(self, path: str) -> bool:
        subject = consistency.git(self.vault, "log", "-1", "--format=%s", "--", path)
        by_hand = subject.startswith(("Hand edit", "Move ")) or subject.endswith("(hand edit)")
        return not by_hand and not path.startswith("notes/")


def _path_of(vault: Path, memory_id: str) -> str | None:
    found = consistency.git(vault, "grep", "-l", f"^id: {memory_id}$", "HEAD", check=False)
    lines = [line.split(":", 1)[1] for line in found.splitlines() if ":" in line]
    return lines[0] if lines and (vault / lines[0]).is_file() else None
