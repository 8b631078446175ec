"""A memory's status and lifetime: dismissed or shown again, deleted once it has expired."""

from __future__ import annotations

from datetime import UTC, datetime

from vault_tool.core import changelog
from vault_tool.core.memory import parse
from vault_tool.core.redact import redact_text
from vault_tool.core.times import utc_now
from vault_tool.engine.writer import Planned, PlanResult, Writer
from vault_tool.search.documents import Indexed
from vault_tool.search.index import Index


def set_status(
    writer: Writer,
    doc: Indexed,
    status: str,
    *,
    client: str,
    dry_run: bool = False,
    reason: str | None = None,
) -> PlanResult:
    """Set one memory's status as one commit, the reason (secrets redacted) in its body;
    nothing when it has that status already."""
    data = writer.store.read_bytes(doc.path)
    memory = parse((data or b"").decode("utf-8"), doc.path)
    if memory.status == status:
        return PlanResult([], "", None)
    changed = memory.with_changes(status=status, updated=utc_now())
    name = "dismiss" if status == "dismissed" else "undismiss"
    subject = changelog.subject(name, changelog.entry(memory, doc.path))
    said = redact_text(reason, "reason")[0] if reason else None
    plan = [Planned(doc.path, changed)]
    return writer.apply_plan(plan, subject, client=client, dry_run=dry_run, reason=said)


def expire(writer: Writer, index: Index, *, client: str, dry_run: bool = False) -> PlanResult:
    """Delete every memory whose expires_at has passed, in one commit."""
    due = index.expired_by(int(datetime.now(UTC).timestamp()))
    plan = [Planned(doc.path, None, doc.memory_id) for doc in sorted(due, key=lambda d: d.path)]
    subject = changelog.subject("expire", memories=changelog.memories(len(plan)))
    return writer.apply_plan(plan, subject, client=client, dry_run=dry_run)
