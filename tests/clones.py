"""A team's vault for tests: a bare remote and clones of one vault, in temp folders."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from tests.helpers import create_args, delta, git
from vault_tool.core.memory import parse
from vault_tool.engine.vault import Vault
from vault_tool.storage.repo_state import conflict_line


def team(tmp_path: Path, members: int = 2) -> tuple[Path, list[Path]]:
    """A bare remote (branch main) and `members` clones of a vault pushed to it first."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--quiet", "--bare", "-b", "main", str(remote)], check=True)
    first = tmp_path / "member0"
    Vault.create(first)
    with Vault.open(first, client="member0") as vault:
        vault.team.add_remote("origin", str(remote))
        assert vault.team.sync().status == "synced"
    clones = [first]
    for n in range(1, members):
        clones.append(clone(remote, tmp_path / f"member{n}"))
    return remote, clones


def clone(remote: Path, path: Path) -> Path:
    """A person's `git clone` of the team's vault, then opened once (which registers the
    merge driver in the clone's .git/config)."""
    subprocess.run(["git", "clone", "--quiet", str(remote), str(path)], check=True)
    git(path, "config", "user.name", f"Person {path.name}")
    git(path, "config", "user.email", f"{path.name}@example.com")
    Vault.open(path, client=path.name).close()
    return path


def fact(subject: str, predicate: str, obj: str, **validity: str) -> dict[str, str]:
    return {"subject": subject, "predicate": predicate, "object": obj, **validity}


def memory_args(title: str, body: str, facts: list[dict[str, str]], tags: list[str]) -> dict:
    """A create call whose entities declare every fact's subject and object."""
    names = sorted({f["subject"] for f in facts} | {f["object"] for f in facts})
    entities = [{"n": n, "kind": "thing", "is": f"what the team calls {n}"} for n in names]
    args = create_args(title, body)
    args["semantic_delta"] = delta(title, entities=entities, facts=facts, tags=tags)
    return args


def staging_on_both(tmp_path: Path) -> tuple[Path, Path, dict[str, Any]]:
    """Two clones of a team's vault that both hold one memory (Staging cluster runs on
    k3s), made by agent-a and synced to the other: what each test then edits on both."""
    _, (a_path, b_path) = team(tmp_path)
    with Vault.open(a_path, client="agent-a") as a:
        made = a.remember(
            memory_args(
                "Staging cluster",
                "# Staging cluster\n\nRuns on k3s.\n",
                [fact("staging", "runs_on", "k3s")],
                ["infra"],
            )
        )
        a.team.sync()
    with Vault.open(b_path, client="agent-b") as b:
        b.team.sync()
    return a_path, b_path, made


def update_args(made: dict[str, Any], vault: Vault, **changes: Any) -> dict[str, Any]:
    """An update of a memory as it is now in this clone, with some parts changed:
    body (a function of the old body), facts/tags (functions of the old lists)."""
    doc = vault.find(made["memory_id"])
    memory = parse((vault.root / doc.path).read_text(encoding="utf-8"), doc.path)
    facts = [f.to_dict() for f in memory.facts]
    facts = changes.get("facts", lambda old: old)(facts)
    names = sorted({f["subject"] for f in facts} | {f["object"] for f in facts})
    kept = {e.n: e.to_dict() for e in memory.entities}
    entities = [
        kept.get(n) or {"n": n, "kind": "thing", "is": f"what the team calls {n}"} for n in names
    ]
    body = changes.get("body", lambda old: old)(memory.body)
    return {
        "mode": "update",
        "memory_id": made["memory_id"],
        "expected_version_id": doc.version_id,
        "content_md": body,
        "semantic_delta": {
            **memory.semantic_delta(),
            "entities": entities,
            "facts": facts,
            "tags": changes.get("tags", lambda old: old)(list(memory.tags)),
        },
    }


def tree(path: Path) -> str:
    """The tree HEAD holds: two clones with equal trees hold the same files."""
    return git(path, "rev-parse", "HEAD^{tree}")


def memory_problems(path: Path) -> list[str]:
    """Every committed memory file parses and holds no conflict marker in its front matter."""
    found = []
    listed = git(path, "ls-files", "-z").split("\0")
    for rel in filter(None, listed):
        if not rel.endswith(".md") or rel == "README.md":
            continue
        data = (path / rel).read_bytes()
        marker = conflict_line(data)
        front_end = data.find(b"\n---", 3)
        if marker is not None and data.count(b"\n", 0, front_end) + 1 >= marker:
            found.append(f"{rel}: a conflict marker in the front matter (line {marker})")
        try:
            parse(data.decode("utf-8"), rel)
        except Exception as problem:  # (listed, whatever it is)
            found.append(f"{rel}: does not parse: {problem}")
    return found
