"""Rules: what an agent must always do (or never), each a memory of type `rule`.

A rule is a Markdown file like any other memory, reviewable in git; its `rule:` block says
when it applies, what to do, where (everywhere, one project, or one situation), the
memories it rests on with the version of each it was last checked against, and when it was
last confirmed. A rule whose evidence changed (or was deleted) since is marked for a
re-check; it stays in force. A rule file a person wrote with only `memory_type: rule`
reads as a rule too: its title is what to do, always, everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from vault_tool.core import changelog, ids, redact, schema
from vault_tool.core.memory import Memory, parse
from vault_tool.core.projects import check_project
from vault_tool.core.times import utc_now
from vault_tool.engine.writer import Planned, Writer
from vault_tool.errors import InvalidInput, NotFound
from vault_tool.search.documents import Indexed
from vault_tool.search.index import Index

SCOPES = ("everywhere", "project", "situation")
MAX_THEN = 800
MAX_EVIDENCE = 20
TITLE_LENGTH = 120
_RULE = ("memory.schema.json", ("rule",))  # where a rule block's shape is said


@dataclass(frozen=True)
class Rules:
    """A vault's rules (Vault.rules): add, list, confirm."""

    _writer: Writer
    _index: Index

    def add(
        self,
        then: str,
        *,
        when: str | None = None,
        scope: str = "everywhere",
        scope_name: str | None = None,
        evidence: list[str] | tuple[str, ...] = (),
        client: str,
    ) -> dict[str, Any]:
        """Add a rule as one commit; an identical one (same when, then and scope) is not
        added again: the result names it, status unchanged."""
        block = self._block(then, when, scope, scope_name, evidence)
        for rule in self._all():
            if _same(rule["rule"], block):
                return {**_result(rule), "status": "unchanged"}
        title = _title(block["then"])
        body = f"# {title}\n\n{block['then']}\n\nWhen: {block.get('when', 'always')}.\n"
        now = utc_now()
        # A project's rule is in that project too: a search or a token limited to it finds it.
        project = block.get("scope_name") if block["scope"] == "project" else None
        memory = Memory(
            "rule",
            title,
            body,
            id=ids.new_id(),
            source=client,
            created=now,
            updated=now,
            project=project,
        ).with_changes(extra={"rule": block})
        path = self._writer.path_for(memory)
        subject = changelog.subject("add_rule", changelog.entry(memory, path))
        done = self._writer.apply_plan([Planned(path, memory)], subject, client=client)
        return {**_result(_rule_of(memory, path, done.version_id or "")), "status": "added"}

    def listing(
        self, project: str | None = None, *, limit: int = 50, offset: int = 0
    ) -> dict[str, Any]:
        """The rules in force (dismissed ones aside), oldest first, each with a re-check
        marker when its evidence changed since it was confirmed; with project, only those
        that apply there (everywhere, that project, any situation)."""
        rules = [r for r in self._all() if _applies(r["rule"], project)]
        page = rules[offset : offset + limit]
        listed = [{**_result(r), "recheck": self._recheck(r["rule"])} for r in page]
        more = offset + len(page) < len(rules)
        paged = {"has_more": more, **({"next_offset": offset + len(page)} if more else {})}
        return {"rules": listed, "total": len(rules), **paged}

    def ids_applying(self, project: str | None) -> set[str]:
        """The ids of the rules that apply in a project (everywhere, it, any situation)."""
        return {_result(r)["id"] for r in self._all() if _applies(r["rule"], project)}

    def confirm(self, rule_id: str, *, client: str) -> dict[str, Any]:
        """Record that a rule was re-checked: its confirmed date and its evidence's versions
        move to today's, and the file's updated time; nothing else changes (a rule written
        by hand without a block gains one). One commit."""
        doc = self._index.require(ids.check_memory_id(rule_id, "id"))
        if doc.memory_type != "rule":
            raise InvalidInput(
                f"id: {rule_id} is a {doc.memory_type}, not a rule",
                hint="use an id from list_rules",
                field="id",
            )
        memory = _parsed(self._writer, doc)
        if "rule" in memory.extra and _block_of(memory) is not memory.extra["rule"]:
            # A person's block the schema refuses: confirming must not replace their words.
            raise InvalidInput(
                f"id: the rule: block of {doc.path} is not valid, so it was read as its title",
                hint=f"fix the block in {doc.path} (when, then, scope, scope_name, evidence), "
                "then confirm again; docs/rules.md shows the form",
                field="id",
            )
        block = dict(_block_of(memory))
        block["confirmed"] = datetime.now(UTC).date().isoformat()
        if block.get("evidence"):
            block["evidence"] = [self._evidence_now(e["id"]) for e in block["evidence"]]
        changed = memory.with_changes(extra={**memory.extra, "rule": block}, updated=utc_now())
        subject = changelog.subject("confirm_rule", changelog.entry(memory, doc.path))
        done = self._writer.apply_plan([Planned(doc.path, changed)], subject, client=client)
        rule = _rule_of(changed, doc.path, done.version_id or doc.version_id)
        return {**_result(rule), "status": "confirmed", "recheck": None}

    def _all(self) -> list[dict[str, Any]]:
        found = []
        for doc in sorted(self._index.find("memory_type", "rule"), key=_age):
            if doc.status == "active":
                found.append(_rule_of(_parsed(self._writer, doc), doc.path, doc.version_id))
        return found

    def _block(
        self,
        then: str,
        when: str | None,
        scope: str,
        scope_name: str | None,
        evidence: list[str] | tuple[str, ...],
    ) -> dict[str, Any]:
        """The rule block of a new rule, checked; secrets redacted from its words."""
        then = redact.redact_text(then.strip(), "then")[0]
        if not then or len(then) > MAX_THEN:
            raise InvalidInput(
                f"then: must hold the rule, at most {MAX_THEN} characters",
                hint="say what to do in one or two sentences",
                field="then",
            )
        block: dict[str, Any] = {}
        if when and when.strip():
            block["when"] = redact.redact_text(when.strip(), "when")[0]
        block["then"] = then
        if scope not in SCOPES:
            hint = f"one of {', '.join(SCOPES)}"
            raise InvalidInput(f"scope: {scope!r} is not a scope", hint=hint, field="scope")
        block["scope"] = scope
        if scope != "everywhere":
            if not scope_name:
                raise InvalidInput(
                    f"scope_name: a {scope} rule names its {scope}",
                    hint="send scope_name, or scope everywhere",
                    field="scope_name",
                )
            block["scope_name"] = (
                check_project(scope_name, "scope_name") if scope == "project" else scope_name
            )
        if len(evidence) > MAX_EVIDENCE:
            raise InvalidInput(
                f"evidence_memory_ids: at most {MAX_EVIDENCE}", hint="name the main ones"
            )
        if evidence:
            block["evidence"] = [self._evidence_now(m, i) for i, m in enumerate(evidence)]
        block["confirmed"] = datetime.now(UTC).date().isoformat()
        return block

    def _evidence_now(self, memory_id: str, at: int | None = None) -> dict[str, str]:
        """One evidence memory as it is now: its id and version."""
        where = "evidence_memory_ids" + ("" if at is None else f"[{at}]")
        doc = self._index.by_id(ids.check_memory_id(memory_id, where))
        if doc is None:
            if at is None:  # confirming: a deleted memory stays named, without a version
                return {"id": memory_id}
            raise NotFound(
                f"{where}: no memory has id {memory_id}",
                hint="name memories a search returned",
                field=where,
            )
        return {"id": doc.memory_id, "version": doc.version_id}

    def _recheck(self, block: dict[str, Any]) -> str | None:
        """Why a rule needs a re-check (its evidence changed or is gone), or None."""
        reasons = []
        for evidence in block.get("evidence") or ():
            doc = self._index.by_id(evidence["id"])
            if doc is None:
                reasons.append(f"{evidence['id']} was deleted")
            elif doc.version_id != evidence.get("version"):
                reasons.append(f"{evidence['id']} changed")
        return "; ".join(reasons) + " since it was confirmed" if reasons else None


def _parsed(writer: Writer, doc: Indexed) -> Memory:
    return parse((writer.store.read_bytes(doc.path) or b"").decode("utf-8"), doc.path)


def _block_of(memory: Memory) -> dict[str, Any]:
    """A rule memory's block; a rule written by hand without one: its title, everywhere."""
    block = memory.extra.get("rule")
    if isinstance(block, dict) and not schema.invalid_keys({"rule": block}, *_RULE):
        return block
    return {"then": memory.title, "scope": "everywhere"}


def _rule_of(memory: Memory, path: str, version_id: str) -> dict[str, Any]:
    return {
        "memory": memory,
        "path": path,
        "version_id": version_id,
        "rule": _block_of(memory),
    }


def _result(rule: dict[str, Any]) -> dict[str, Any]:
    memory, block = rule["memory"], rule["rule"]
    return {
        "id": memory.id or ids.path_id(rule["path"]),
        "when": block.get("when"),
        "then": block["then"],
        "scope": block.get("scope", "everywhere"),
        "scope_name": block.get("scope_name"),
        "evidence_memory_ids": [e["id"] for e in block.get("evidence") or ()],
        "added": (memory.created or "")[:10],
        "source": memory.source,
        "confirmed": str(block.get("confirmed") or (memory.created or "")[:10]),
        "version_id": rule["version_id"],
        "path": rule["path"],
    }


def sentence(rule: dict[str, Any]) -> str:
    """A listed rule as one line a person reads: "When you push: run the tests"."""
    return f"When {rule['when']}: {rule['then']}" if rule.get("when") else f"Always: {rule['then']}"


def where(rule: dict[str, Any]) -> str:
    """Where a listed rule applies: "everywhere", "project web", "situation on call"."""
    return rule["scope"] + (f" {rule['scope_name']}" if rule.get("scope_name") else "")


def _same(old: dict[str, Any], new: dict[str, Any]) -> bool:
    # A block written by hand may leave out the scope it means: everywhere.
    def said(block: dict[str, Any], key: str) -> str:
        return _folded(block.get(key) or ("everywhere" if key == "scope" else None))

    keys = ("when", "then", "scope", "scope_name")
    return all(said(old, k) == said(new, k) for k in keys)


def _folded(value: Any) -> str:
    return " ".join(str(value or "").split()).casefold()


def _applies(block: dict[str, Any], project: str | None) -> bool:
    if project is None or block.get("scope") != "project":
        return True
    return block.get("scope_name") == project


def _title(then: str) -> str:
    line = " ".join(then.split())
    return line if len(line) <= TITLE_LENGTH else line[: TITLE_LENGTH - 1].rstrip() + "…"


def _age(doc: Indexed) -> tuple[str, str]:
    return (doc.record.get("created", ""), doc.path)
