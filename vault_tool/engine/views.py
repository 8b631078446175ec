"""Views over the memories that the extended profile's tools give (server/extended.py) and
the CLI's `timeline` and `facts` print: one answer for both."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vault_tool.core import ids
from vault_tool.core.projects import Projects, check_project
from vault_tool.core.times import parse_moment
from vault_tool.engine import deletions, fact_history, reads, session
from vault_tool.engine.rules import Rules
from vault_tool.errors import InvalidInput, NotFound
from vault_tool.search.index import Index
from vault_tool.storage.store import Store


@dataclass(frozen=True)
class Views:
    """A timeline around a memory; the facts about a subject, with both of their times."""

    _store: Store
    _index: Index
    _search: Callable[..., dict[str, Any]]  # Vault.search: a query's best hit anchors a timeline
    _projects: Projects
    _rules: Rules

    def timeline(
        self,
        memory_id: str | None = None,
        query: str | None = None,
        *,
        before: int = 5,
        after: int = 5,
        client: str | None = None,
    ) -> dict[str, Any]:
        """The memories updated just before and after an anchor (a memory, or the best hit
        of a query), oldest first."""
        if (memory_id is None) == (query is None):
            raise InvalidInput(
                "send exactly one of memory_id or query",
                hint="memory_id anchors the timeline on that memory; query on its best hit",
                field="memory_id",
            )
        if memory_id is None:
            hits = self._search({"query": query, "top_k": 1}, client)["selected_hits"]
            if not hits:
                raise NotFound(
                    f"query: no memory matches {query!r} to anchor the timeline on",
                    hint="try other words, or anchor it on a memory_id from a search",
                    field="query",
                )
            memory_id = hits[0]["memory_id"]
        doc = deletions.require(self._index, self._store, ids.check_memory_id(memory_id))
        return reads.timeline(self._index, doc, before, after)

    def session_context(
        self,
        *,
        max_chars: int = 8000,
        recent_days: int = 7,
        max_facts: int = 20,
        project: str | None = None,
    ) -> dict[str, Any]:
        """The block a session starts with: rules, pinned, facts, recent (session.py); with
        project, its memories and the rules that apply there only."""
        scope = self._projects.scope(check_project(project)) if project else None
        return session.session_context(
            self._index,
            max_chars=max_chars,
            recent_days=recent_days,
            max_facts=max_facts,
            project=scope,
            rules_here=(lambda: self._rules.ids_applying(project)) if project else None,
        )

    def facts(
        self,
        subject: str,
        *,
        predicate: str | None = None,
        as_of: str = "today",
        include_superseded: bool = False,
        limit: int = 20,
        offset: int = 0,
    ) -> dict[str, Any]:
        """The facts about a subject (fact_history.py), a page of them from offset."""
        try:
            day = parse_moment(as_of)[:10]
        except ValueError:
            raise InvalidInput(
                f"as_of: {as_of!r} is not a day", hint="use YYYY-MM-DD, today, 7d, 2w, 3m",
                field="as_of",
            ) from None  # fmt: skip
        asked = fact_history.Asked(subject, predicate, day, include_superseded, time.time())
        found = fact_history.facts_about(self._store, self._index, asked)
        page = found[offset : offset + limit]
        more = offset + len(page) < len(found)
        result = {"subject": subject, "as_of": day, "facts": page, "total": len(found)}
        return {**result, **reads.paged(offset, len(page), more)}
