"""A memory's status and lifetime: dismissed or shown again, deleted once it has expired."""

from __future__ import annotations

from datetime import UTC, datetime

from vault_tool.core import changelog, front_matter
from vault_tool.core.memory import parse
from vault_tool.core.redact import redact_text
from vault_tool.core.times import parse_time, utc_now
from vault_tool.engine import history
from vault_tool.engine.writer import Planned, PlanResult, Writer
from vault_tool.errors import UnparseableFile
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
    nothing when it has that status already.

    Only the `status` line changes (and `updated`, where it holds the tool's time): a
    person's comments, tags and own values stay as written. Undismissing puts back the
    status line the memory had before it was dismissed (a person's `status: draft`, say),
    found in its history; none there, the key goes.
    """
    data = writer.store.read_bytes(doc.path) or b""
    text = data.decode("utf-8")
    memory = parse(text, doc.path)
    if memory.status == status:
        return PlanResult([], "", None)
    lines = front_matter.block("status", status)
    if status == "active":
        lines = _status_before_dismissal(writer, doc)
    changes = {"status": lines}
    updated = front_matter.split(text, doc.path).fields.get("updated")
    if isinstance(updated, str) and _is_time(updated):
        changes["updated"] = front_matter.block("updated", utc_now())
    changed = front_matter.with_keys(text, doc.path, changes)
    name = "dismiss" if status == "dismissed" else "undismiss"
    subject = changelog.subject(name, changelog.entry(memory, doc.path))
    said = redact_text(reason, "reason")[0] if reason else None
    plan = [Planned(doc.path, parse(changed, doc.path), data=changed.encode("utf-8"))]
    return writer.apply_plan(plan, subject, client=client, dry_run=dry_run, reason=said)


def _status_before_dismissal(writer: Writer, doc: Indexed) -> str | None:
    """The status line of the memory's newest version that was not dismissed (None: that
    version had no status key, or the memory never had such a version)."""
    for commit in history.commits_of(writer.store, doc):
        data = writer.store.show_file(commit.sha, commit.path)
        try:
            text = (data or b"").decode("utf-8")
            if parse(text, commit.path).status != "dismissed":
                return front_matter.key_lines(text, commit.path, "status")
        except (UnparseableFile, UnicodeDecodeError):
            continue
    return None


def _is_time(value: str) -> bool:
    try:
        parse_time(value)
    except ValueError:
        return False
    return True


def expire(writer: Writer, index: Index, *, client: str, dry_run: bool = False) -> PlanResult:
    """Delete every memory whose expires_at has passed, in one commit."""
    due = index.expired_by(int(datetime.now(UTC).timestamp()))
    plan = [Planned(doc.path, None, doc.memory_id) for doc in sorted(due, key=lambda d: d.path)]
    subject = changelog.subject("expire", memories=changelog.memories(len(plan)))
    return writer.apply_plan(plan, subject, client=client, dry_run=dry_run)
