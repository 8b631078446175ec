"""Sync on a team's vault: a person's notes folder made a vault, pushed, and cloned.

    python -m bench.team --count N [--rounds 20] [--json OUT]

A bench.notes folder becomes a vault (`vault-tool init`'s path), is pushed to a bare
remote and cloned three times: B syncs with `vault-tool sync`'s path (Team.sync), C does
the same work with plain git (the floor), D runs a watcher while its person pulls with
plain git. Each round, A writes a memory and syncs; then:

- sync_nothing_new: B syncs with nothing to do; floor `git fetch` in C;
- sync_fast_forward: B syncs the round's commit (fetch, fast-forward, index the file);
  floor `git pull --ff-only` in C;
- sync_merge: B has written a memory of its own, and syncs A's next one (fetch, merge,
  index, push); floor `git pull --no-rebase` + `git push` of the same work in C;
- pull_to_searchable: D's person runs `git pull`; the time until D's index finds the new
  memory; floor: the watcher's quiet period (debounce_ms), which it waits out on purpose.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.measure import print_figures, summary, write_results
from bench.notes import write_notes
from vault_tool.engine.vault import Vault


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout.strip()


def _timed(action: Any) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def _memory(title: str) -> dict[str, Any]:
    return {
        "mode": "create",
        "content_md": f"# {title}\n\nWritten for the team benchmark.\n",
        "semantic_delta": {
            "memory_type": "note",
            "title": title,
            "entities": [
                {"n": "team", "kind": "team", "is": "the people sharing the vault"},
                {"n": "vault", "kind": "tool", "is": "the memory vault the team shares"},
            ],
            "facts": [{"subject": "team", "predicate": "shares", "object": "vault"}],
            "tags": ["bench"],
        },
    }


def _clone(remote: Path, path: Path) -> Path:
    subprocess.run(["git", "clone", "--quiet", str(remote), str(path)], check=True)
    _git(path, "config", "user.name", f"Bench {path.name}")
    _git(path, "config", "user.email", f"{path.name}@example.com")
    return path


def bench(count: int, rounds: int, workdir: Path) -> dict[str, Any]:
    from vault_tool.watcher import Watcher

    first = workdir / "a"
    write_notes(first, count)
    Vault.create(first)
    remote = workdir / "remote.git"
    subprocess.run(["git", "init", "--quiet", "--bare", "-b", "main", str(remote)], check=True)
    with Vault.open(first, client="bench-a") as a:
        a.team.add_remote("origin", str(remote))
        a.team.sync()
    b_path, c_path, d_path = (_clone(remote, workdir / name) for name in "bcd")
    figures: dict[str, list[float]] = {
        name: []
        for name in (
            "sync_nothing_new",
            "sync_fast_forward",
            "sync_merge",
            "pull_to_searchable",
            "floor_fetch",
            "floor_pull_ff",
            "floor_pull_merge_push",
        )
    }
    with (
        Vault.open(first, client="bench-a") as a,
        Vault.open(b_path, client="bench-b") as b,
        Vault.open(d_path, client="bench-d") as d,
    ):
        watcher = Watcher(d).start()
        assert watcher.ready.wait(60), "the watcher did not start"
        quiet = d.settings.debounce_ms / 1000
        try:
            for n in range(rounds):
                a.remember(_memory(f"Team note {n} from A"))
                a.team.sync()
                figures["sync_fast_forward"].append(_timed(b.team.sync))
                figures["floor_pull_ff"].append(
                    _timed(lambda: _git(c_path, "pull", "-q", "--ff-only"))
                )
                figures["sync_nothing_new"].append(_timed(b.team.sync))
                figures["floor_fetch"].append(_timed(lambda: _git(c_path, "fetch", "-q")))

                b.remember(_memory(f"Team note {n} from B"))
                a.remember(_memory(f"Team note {n}, later, from A"))
                a.team.sync()
                figures["sync_merge"].append(_timed(b.team.sync))
                # C: the same work by hand, its commit then dropped (C stays a mirror).
                (c_path / f"c-{n}.md").write_text(f"# C {n}\n")
                _git(c_path, "add", "--", f"c-{n}.md")
                _git(c_path, "commit", "-qm", f"C {n}")
                figures["floor_pull_merge_push"].append(
                    _timed(
                        lambda: (
                            _git(c_path, "pull", "-q", "--no-rebase", "--no-edit"),
                            _git(c_path, "push", "-q", "--dry-run", "origin", "HEAD:main"),
                        )
                    )
                )
                _git(c_path, "reset", "-q", "--hard", "origin/main")
                a.team.sync()  # (B's merge, for the next round)

                title = f"Team note {n}, later, from A"
                pulled = time.perf_counter()
                _git(d_path, "pull", "-q", "--no-rebase", "--no-edit")
                while title not in [
                    h["title"] for h in d.search({"query": title})["selected_hits"]
                ]:
                    if time.perf_counter() - pulled > 30:
                        raise SystemExit(f"{title} not searchable 30 s after the pull")
                    time.sleep(0.01)
                figures["pull_to_searchable"].append(time.perf_counter() - pulled)
        finally:
            watcher.stop()
    results: dict[str, Any] = {"notes": count, "rounds": rounds}
    results.update({name: summary(values) for name, values in figures.items()})
    results["floor_quiet_period"] = summary([quiet] * rounds)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="vault-team-"))
    try:
        results = bench(args.count, args.rounds, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print_figures(results, f"a team vault of {args.count} hand-made notes")
    print("wrote", write_results(f"team-{args.count}", results, args.json))


if __name__ == "__main__":
    main()
