"""`vault-tool verify --files`: only the files, for a hook or a CI job on a fresh clone.

A clone has no index (it is machine-local), so verify would only say so. This checks what a
merge made anywhere (a forge's web UI, a person's plain `git merge`) can break in the files
themselves: each parses, holds no conflict markers, and no two share an id or a key. Every
file is parsed; nothing is compared with an index, nothing is written.
"""

from __future__ import annotations

from vault_tool.checks.checkup import Checkup
from vault_tool.checks.verify import (
    Doc,
    Issue,
    Progress,
    VerifyReport,
    duplicates,
    markers_issue,
    parsed_or_issue,
    read_or_issue,
)


def verify_files(checkup: Checkup, progress: Progress | None = None) -> VerifyReport:
    """Each file parses, holds no conflict markers, and no two share an id or a key."""
    store = checkup.store
    on_disk = sorted(p for p, _ in store.iter_memory_paths())
    report = VerifyReport(files=len(on_disk), index="not read")
    parsed: dict[str, Doc] = {}
    for n, path in enumerate(on_disk, 1):
        if progress:
            progress(n, len(on_disk))
        data = read_or_issue(store, path)
        if isinstance(data, Issue):
            report.issues.append(data)
            continue
        if data is None:
            continue
        if marked := markers_issue(data, path, store.matches_head(path, data)):
            report.issues.append(marked)
            continue
        memory = parsed_or_issue(data, path)
        if isinstance(memory, Issue):
            report.issues.append(memory)
            continue
        parsed[path] = Doc(memory.id or "", "", "", memory.key or "")
    report.issues += duplicates(parsed, set(parsed), "memory_id", "duplicate_id", "id")
    report.issues += duplicates(parsed, set(parsed), "key", "duplicate_key", "key")
    return report
