"""What an HTTP token may do: a scope (read, write or admin) and, optionally, projects.

- read: the tools that only read; write: also remember, add_rule and work_state_write;
  admin: also what changes what everyone sees (dismiss, restore_dismissed, confirm_rule).
- projects: a token limited to some projects is refused (an isError result, code
  `forbidden`, naming why) for a call naming another project or a memory of one (by id,
  by key, or as one a new memory supersedes); a call that names none is given the token's
  first project. timeline and fact_history read across projects, so a limited token is
  refused them. What a call answers is narrowed too (`shown`): no other project's memory
  is named in it, as a link's note, a backlink, a similar memory or a rule's evidence.

The SDK carries a token's rights in its AccessToken's scopes: `vault:<scope>` and one
`vault:project:<name>` per project (`wire` and `from_wire`). stdio has full access.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vault_tool.errors import Forbidden

READ, WRITE, ADMIN = "read", "write", "admin"
SCOPES = (READ, WRITE, ADMIN)
ADMIN_TOOLS = frozenset({"dismiss", "restore_dismissed", "confirm_rule"})
# Tools that take `project` (search only with a query) and those that read every project.
PROJECT_ARGUMENT = frozenset(
    {"search", "session_context", "list_rules", "work_state_read", "work_state_write"}
)
ACROSS_PROJECTS = frozenset({"timeline", "fact_history"})
_PREFIX = "vault:"
_PROJECT = "vault:project:"


def needed(name: str, writes: bool) -> str:
    """The scope a tool needs."""
    return ADMIN if name in ADMIN_TOOLS else WRITE if writes else READ


@dataclass(frozen=True)
class Access:
    """One caller's rights; the label (never the secret) is what the audit log names."""

    label: str | None = None
    scope: str = ADMIN
    projects: tuple[str, ...] = ()  # none: every project

    def may_call(self, name: str, writes: bool) -> bool:
        """Whether the scope covers the tool (projects are checked per call: `limited`)."""
        return SCOPES.index(self.scope) >= SCOPES.index(needed(name, writes))

    def scope_refusal(self, name: str, writes: bool) -> Forbidden:
        """Why this token may not call the tool, and what would."""
        return Forbidden(
            f"{name}: this token's scope is {self.scope}; {name} needs {needed(name, writes)}",
            hint="use the tools this server lists for the token, or a token with that scope "
            "(`vault-tool token create NAME --scope ...`)",
        )

    def wire(self) -> list[str]:
        """The rights as the SDK's AccessToken scopes."""
        return [_PREFIX + self.scope, *(_PROJECT + p for p in self.projects)]

    @classmethod
    def from_wire(cls, label: str | None, scopes: list[str]) -> Access:
        """The rights an AccessToken's scopes carry (see wire)."""
        projects = tuple(s.removeprefix(_PROJECT) for s in scopes if s.startswith(_PROJECT))
        named = [s.removeprefix(_PREFIX) for s in scopes if s.removeprefix(_PREFIX) in SCOPES]
        best = max(named, key=SCOPES.index) if named else READ
        return cls(label, best, projects)

    def limited(self, name: str, args: Any, vault: Any) -> Any:
        """The call's arguments as a project-limited token may send them (its first project
        filled in where none is named); Forbidden if they reach another project."""
        if not self.projects or not isinstance(args, dict):
            return args
        if name in ACROSS_PROJECTS:
            raise Forbidden(
                f"{name}: reads memories of every project, and this token is limited to "
                f"{', '.join(self.projects)}",
                hint="use search with project, or a token for every project",
            )
        args = dict(args)
        addressed = name == "search" and ("memory_id" in args or "key" in args)
        if name in PROJECT_ARGUMENT and not addressed:
            args["project"] = self._allowed(args.get("project"), "project")
        for memory_id in _ids_named(name, args):
            if (project := vault.project_of(memory_id)) is not None:  # (unknown: not found)
                self._allowed(project, "memory_id", memory_id)
        if name == "search" and isinstance(args.get("key"), str):
            for doc in vault.with_key(args["key"]):
                self._allowed(vault.project_of(doc.memory_id), "key", args["key"])
        if name == "remember":
            self._references(args, vault)
            args = self._remembered(args)
        if name == "add_rule":
            if args.get("scope") != "project":
                raise Forbidden(
                    "add_rule: this token is limited to projects, so its rules are too",
                    hint=f'send scope "project" and scope_name {self.projects[0]!r}',
                )
            self._allowed(args.get("scope_name"), "scope_name")
        return args

    def _remembered(self, args: dict[str, Any]) -> dict[str, Any]:
        """A create goes into the project it names (allowed) or the token's first; an
        update naming none stays in its memory's, which was checked by memory_id."""
        items = args.get("items") if isinstance(args.get("items"), list) else None
        placed = []
        for one in items if items is not None else [args]:
            delta = one.get("semantic_delta") if isinstance(one, dict) else None
            if isinstance(delta, dict) and (args.get("mode") == "create" or "project" in delta):
                delta = {**delta, "project": self._allowed(delta.get("project"), "project")}
                one = {**one, "semantic_delta": delta}
            placed.append(one)
        return {**args, "items": placed} if items is not None else placed[0]

    def _references(self, args: dict[str, Any], vault: Any) -> None:
        """The memories a remember reaches beyond its own: those it supersedes (their facts
        leave their project's context) and the one holding its key. A supersedes the
        updated memory holds already stays as it was written: sending it back is no reach."""
        items = args.get("items") if isinstance(args.get("items"), list) else None
        for at, one in enumerate(items if items is not None else [args]):
            delta = one.get("semantic_delta") if isinstance(one, dict) else None
            if not isinstance(delta, dict):
                continue  # (the schema check names it)
            where = "semantic_delta" if items is None else f"items[{at}].semantic_delta"
            targets = delta.get("supersedes")
            targets = targets if isinstance(targets, list) else []
            held = _superseded_now(args, vault) if targets and items is None else set()
            for i, target in enumerate(targets):
                if isinstance(target, str) and target not in held:
                    project = vault.project_of(target)  # (None: no such memory, refused later)
                    if project is not None:
                        self._allowed(project, f"{where}.supersedes[{i}]", target)
            if isinstance(key := delta.get("key"), str):
                for doc in vault.with_key(key):
                    self._allowed(vault.project_of(doc.memory_id), f"{where}.key", key)

    def shown(self, result: Any, vault: Any) -> Any:
        """An answer as this token may see it: every other memory it names (a link's note,
        a backlink, a similar memory, a replacement, a rule's evidence) of the token's
        projects only. A link keeps its words (they are its memory's own), unresolved; a
        memory's own content and semantic_delta are shown as written."""
        if not self.projects:
            return result
        reach: dict[str, bool] = {}

        def reaches(memory_id: Any) -> bool:
            if not isinstance(memory_id, str):
                return True  # (names no memory)
            if memory_id not in reach:
                reach[memory_id] = vault.project_of(memory_id) in self.projects
            return reach[memory_id]

        return _narrowed(result, reaches)

    def _allowed(self, project: Any, field: str, named: str | None = None) -> str:
        """project if this token may reach it (its first project for None)."""
        if project is None and named is None:
            return self.projects[0]
        if project in self.projects:
            return str(project)
        what = f"{field} {named!r} is in project {project!r}" if named else f"project {project!r}"
        raise Forbidden(
            f"{field}: {what}, which this token may not reach (it may: {', '.join(self.projects)})",
            hint="stay within the token's projects, or use a token for that project",
        )


def _superseded_now(args: dict[str, Any], vault: Any) -> set[str]:
    """The ids an updated memory supersedes now (none for a create)."""
    if args.get("mode") != "update" or not isinstance(args.get("memory_id"), str):
        return set()
    doc = vault.find(args["memory_id"])
    return set(doc.record["semantic_delta"].get("supersedes") or ()) if doc else set()


# Where an answer names other memories: lists of {memory_id, title, path} (dropped when out
# of reach), links (left as their words), and lists of ids.
_NOTES = ("similar", "backlinks")
_IDS = ("superseded_by", "evidence_memory_ids")
# A memory's own words: shown as written, whatever they name.
_OWN = ("content_md", "semantic_delta")
ANOTHER_PROJECT = "a memory of another project"


def _narrowed(value: Any, reaches: Any) -> Any:
    """value with every memory out of reach taken out of what names other memories."""
    if isinstance(value, list):
        return [_narrowed(v, reaches) for v in value]
    if not isinstance(value, dict):
        return value
    shown: dict[str, Any] = {}
    gone: dict[str, list[Any]] = {}
    for key, item in value.items():
        if key in _OWN or not isinstance(item, list):
            shown[key] = item if key in _OWN else _narrowed(item, reaches)
        elif key in _NOTES:
            shown[key] = [n for n in item if not isinstance(n, dict) or reaches(n.get("memory_id"))]
            gone[key] = [n for n in item if isinstance(n, dict) and not reaches(n.get("memory_id"))]
        elif key == "links":
            shown[key] = [
                {"link": link.get("link")}
                if isinstance(link, dict) and not reaches(link.get("memory_id"))
                else link
                for link in item
            ]
        elif key in _IDS:
            shown[key] = [i for i in item if reaches(i)]
            gone[key] = [i for i in item if not reaches(i)]
        else:
            shown[key] = _narrowed(item, reaches)
    if gone.get("backlinks") and isinstance(shown.get("backlink_count"), int):
        shown["backlink_count"] -= len(gone["backlinks"])
    if gone.get("evidence_memory_ids") and isinstance(shown.get("recheck"), str):
        for memory_id in gone["evidence_memory_ids"]:  # (its reason names it by id)
            shown["recheck"] = shown["recheck"].replace(memory_id, ANOTHER_PROJECT)
    return shown


def _ids_named(name: str, args: dict[str, Any]) -> list[str]:
    """The memory ids a call addresses (each checked against the token's projects)."""
    found = [args.get("memory_id"), args.get("id") if name == "confirm_rule" else None]
    found += list(args.get("memory_ids") or ()) if name == "read" else []
    found += list(args.get("evidence_memory_ids") or ()) if name == "add_rule" else []
    return [f for f in found if isinstance(f, str)]
