"""The text of the extended profile's rules and work state results (render.py's rules hold:
what people and agents wrote sits inside a block with a random boundary, and every name
outside one is escaped)."""

from __future__ import annotations

import json
import secrets
from typing import Any

from vault_tool.core import stages
from vault_tool.core.printable import escape
from vault_tool.engine.rules import sentence, where
from vault_tool.server.render import DATA_NOTICE


@stages.timed("rendering")
def rules_text(result: dict[str, Any]) -> str:
    """list_rules: one line a rule, its scope, dates and re-check marker."""
    rules = result["rules"]
    if not rules:
        return "No rules (add_rule adds one)."
    boundary = secrets.token_hex(4)
    lines = [
        f"{len(rules)} of {result['total']} rules, oldest first. {DATA_NOTICE}",
        f"<<< BEGIN rules {boundary} >>>",
        *(_rule_line(rule) for rule in rules),
        f"<<< END rules {boundary} >>>",
    ]
    if result["has_more"]:
        lines.append(f"More rules: send offset {result['next_offset']} for the next page.")
    return "\n".join(lines)


@stages.timed("rendering")
def rule_text(result: dict[str, Any]) -> str:
    """add_rule and confirm_rule: what happened to which rule."""
    rule_id, version = escape(result["id"]), result["version_id"]
    if result["status"] == "unchanged":
        return f"An identical rule is there already: {rule_id} (nothing was added)."
    if result["status"] == "confirmed":
        return f"Confirmed rule {rule_id} on {result['confirmed']}: commit {version}."
    return f"Added rule {rule_id} ({escape(result['path'])}): commit {version}."


@stages.timed("rendering")
def state_text(result: dict[str, Any]) -> str:
    """work_state_read: the list's items as JSON, inside a data block."""
    where = f"{escape(result['project'])}/{escape(result['name'])}"
    if not result["exists"]:
        others = ", ".join(escape(name) for name in result.get("lists") or ()) or "none"
        return f"No list named {where} (this project's lists: {others})."
    boundary = secrets.token_hex(4)
    return "\n".join(
        [
            f"List {where}: {len(result['items'])} items, updated {escape(result['updated'])}, "
            f"version_id {result['version_id']} (send it as expected_version_id to write it). "
            f"{DATA_NOTICE}",
            f"<<< BEGIN list {boundary} >>>",
            json.dumps(result["items"], ensure_ascii=False, indent=1),
            f"<<< END list {boundary} >>>",
        ]
    )


@stages.timed("rendering")
def state_written_text(result: dict[str, Any]) -> str:
    """work_state_write: what the list held before, and the commit."""
    where = f"{escape(result['project'])}/{escape(result['name'])}"
    if result.get("status") == "unchanged":
        return (
            f"Unchanged: {where} already holds these {result['items']} items "
            f"(commit {result['version_id']})."
        )
    before = (
        "a new list" if result["replaced"] is None else f"replacing its {result['replaced']} items"
    )
    text = f"Saved {where} with {result['items']} items ({before}): commit {result['version_id']}."
    kinds = sorted({r["kind"] for r in result.get("redactions") or ()})
    return text + (f" Secrets redacted: {', '.join(kinds)}." if kinds else "")


def _rule_line(rule: dict[str, Any]) -> str:
    line = (
        f"- {sentence(rule)}  [{where(rule)}]  (id {rule['id']}, "
        f"added {rule['added']}, source {rule.get('source') or 'a person'}, last confirmed "
        f"{rule['confirmed']})"
    )
    return line + (f" [re-check: {rule['recheck']}]" if rule.get("recheck") else "")
