"""The crash harness's team: a bare remote and a peer clone of its vault, so that a
`vault-tool sync` can be killed inside its merge and the vault checked afterwards.

Before each sync the peer pulls, creates memories and adds a fact to a memory both sides
share, and pushes; the vault (in this process) creates one and adds another fact to the
same shared memory, so the sync must merge, through the memory merge driver. The sync is
then killed (crash.py): at a random moment, or by git at a chosen point of the merge
(tests/sync_kills.py). Once the vault is recovered, settle() syncs it and counts what
was lost: a peer's write that never arrived (lost_writes), a fact added on either side
missing from the shared memory (lost_facts), and a commit that took the merge's files in
as a person's hand edits (misattributed_commits).
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path
from typing import Any

from tests.harness import consistency
from tests.harness.consistency import Ack
from tests.harness.writers import body, delta

# A shared memory takes this many facts before a new one is started (a memory holds 100).
FACTS_PER_SHARED = 60


class Team:
    """The remote, the peer, and the facts each shared memory must hold."""

    def __init__(self, vault: Path, scratch: Path, rng: random.Random) -> None:
        self.vault = vault
        self.remote = scratch / "remote.git"
        self.peer = scratch / "peer"
        self.rng = rng
        self.shared: dict[str, set[tuple[str, str, str]]] = {}  # memory id -> facts it holds
        self.arriving: list[Ack] = []  # the peer's writes, not synced into the vault yet

    def _set_up(self) -> None:
        """The remote (the vault pushed to it) and the peer's clone, once."""
        if self.peer.exists():
            return
        from vault_tool.engine.vault import Vault

        branch = consistency.git(self.vault, "rev-parse", "--abbrev-ref", "HEAD")
        subprocess.run(["git", "init", "-q", "--bare", "-b", branch, str(self.remote)], check=True)
        with consistency.open_when_free(self.vault, client="harness", timeout=60) as vault:
            vault.team.add_remote("origin", str(self.remote))
            vault.team.sync()
        subprocess.run(["git", "clone", "-q", str(self.remote), str(self.peer)], check=True)
        consistency.git(self.peer, "config", "user.name", "Peer")
        consistency.git(self.peer, "config", "user.email", "peer@example.com")
        Vault.open(self.peer, client="peer").close()  # (registers the merge driver)

    def write_both(self, tag: str) -> list[tuple[str, str, str, int]]:
        """The peer's writes, pushed, then the vault's: (kind, id, version, revision) of
        each of the vault's acknowledged writes."""
        self._set_up()
        self._peer_writes(tag)
        return self._vault_writes(tag)

    def _peer_writes(self, tag: str) -> None:
        from vault_tool.engine.vault import Vault

        with Vault.open(self.peer, client="peer") as peer:
            peer.team.sync()
            for k in range(2):
                title = f"{tag} peer {k}"
                made = peer.remember(
                    {
                        "mode": "create",
                        "content_md": body(title, 1, f"{tag}p"),
                        "semantic_delta": delta(title),
                    }
                )
                self.arriving.append(Ack(made["memory_id"], made["version_id"], 1))
            here = [m for m in self.shared if peer.find(m) is not None]
            if here:
                self._add_fact(peer, self.rng.choice(here), f"noted_{tag}_peer", keep_body=True)
            peer.team.sync()

    def _vault_writes(self, tag: str) -> list[tuple[str, str, str, int]]:
        acks = []
        with consistency.open_when_free(self.vault, client="harness", timeout=60) as vault:
            title = f"{tag} local"
            made = vault.remember(
                {
                    "mode": "create",
                    "content_md": body(title, 1, tag),
                    "semantic_delta": delta(title),
                }
            )
            acks.append(("write", made["memory_id"], made["version_id"], 1))
            open_shared = [m for m, facts in self.shared.items() if len(facts) < FACTS_PER_SHARED]
            if open_shared:
                memory_id = self.rng.choice(open_shared)
                version, revision = self._add_fact(vault, memory_id, f"noted_{tag}_vault", tag)
                acks.append(("write", memory_id, version, revision))
            else:  # a new one: the peer adds to it once a sync has brought it there
                title = f"{tag} shared"
                made = vault.remember(
                    {
                        "mode": "create",
                        "content_md": body(title, 1, tag),
                        "semantic_delta": delta(title),
                    }
                )
                self.shared[made["memory_id"]] = {
                    (f["subject"], f["predicate"], f["object"]) for f in delta(title)["facts"]
                }
                acks.append(("write", made["memory_id"], made["version_id"], 1))
        return acks

    def _add_fact(
        self, vault: Any, memory_id: str, predicate: str, tag: str = "", *, keep_body: bool = False
    ) -> tuple[str, int]:
        """Add a fact to a shared memory (its body's revision counted up unless keep_body);
        its new version and revision."""
        current = vault.read(memory_id)
        found = consistency.REVISION_RE.search(current["content_md"])
        revision = int(found.group(1)) if found else 0
        semantic = current["semantic_delta"]
        fact = {"subject": "Ana", "predicate": predicate, "object": "billing"}
        if not keep_body:
            revision += 1
        made = vault.remember(
            {
                "mode": "update",
                "memory_id": memory_id,
                "expected_version_id": current["version_id"],
                "content_md": current["content_md"]
                if keep_body
                else body(current["title"], revision, tag),
                "semantic_delta": {**semantic, "facts": [*semantic["facts"], fact]},
            }
        )
        self.shared[memory_id].add(("Ana", predicate, "billing"))
        return made["version_id"], revision

    def settle(self, vault: Any, before: str) -> dict[str, list[str]]:
        """After the vault was recovered: sync it, and what was lost (counter -> problems).
        The peer's writes that arrived join acks (the caller's), checked from then on."""
        problems: dict[str, list[str]] = {
            "recovery_errors": [],
            "lost_facts": [],
            "misattributed_commits": [],
        }
        try:
            vault.team.sync()
        except Exception as problem:  # counted and shown: the harness goes on
            problems["recovery_errors"].append(
                f"sync after recovery: {type(problem).__name__}: {problem}"
            )
            return problems
        for memory_id, facts in self.shared.items():
            doc = vault.find(memory_id)
            if doc is None:
                continue  # (not synced yet: checked once it is)
            held = {
                (f["subject"], f["predicate"], f["object"])
                for f in vault.read(memory_id)["semantic_delta"]["facts"]
            }
            problems["lost_facts"] += [
                f"{memory_id}: fact {fact} lost" for fact in sorted(facts - held)
            ]
        subjects = consistency.git(self.vault, "log", "--format=%s", f"{before}..HEAD")
        problems["misattributed_commits"] += [
            f"a merge's file committed as a person's: {s}"
            for s in subjects.splitlines()
            if s.startswith("Hand edit")
        ]
        return problems

    def arrived(self) -> list[Ack]:
        """The peer's writes a sync has brought into the vault (taken out of arriving)."""
        head = set(consistency.git(self.vault, "rev-list", "HEAD").split())
        came = [ack for ack in self.arriving if ack.version in head]
        self.arriving = [ack for ack in self.arriving if ack.version not in head]
        return came
