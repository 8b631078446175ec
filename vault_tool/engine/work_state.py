"""Work state: named lists per project (a to-do list, the files in hand), kept between
sessions. Each list is one YAML file, state/<project>/<name>.yaml, readable and editable
by hand, replaced whole by every write, and each write is one commit; a write of the
items the list already holds changes nothing (status unchanged: the call is idempotent).

Not memories: the files are not Markdown, so search never sees them (the extended tools
work_state_read / work_state_write and `vault-tool state` do). A write refuses to replace a
file that holds a person's uncommitted edit, as remember refuses to overwrite one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vault_tool.core import changelog, ids, redact
from vault_tool.core.ids import STATE_FOLDER
from vault_tool.core.projects import check_project
from vault_tool.core.times import utc_now
from vault_tool.core.yaml_safe import dump_yaml, load_yaml
from vault_tool.errors import InvalidInput, UnparseableFile, VersionConflict
from vault_tool.storage.changes import Change
from vault_tool.storage.store import Store

FOLDER = STATE_FOLDER
MAX_ITEMS = 500
MAX_BYTES = 256_000
HEADER = "# Work state, replaced whole by each write (work_state_write, `vault-tool state set`).\n"


@dataclass(frozen=True)
class WorkState:
    """The named lists of a vault's projects (Vault.work_state)."""

    _store: Store
    _project: str  # the working project: the default of every call

    def read(self, name: str, project: str | None = None) -> dict[str, Any]:
        """A list's items as last written (or edited by hand); exists false if never written."""
        project, path = self._where(name, project)
        data = self._store.read_bytes(path)
        listed = {"project": project, "name": name, "path": path}
        if data is None:
            return {**listed, "exists": False, "items": [], "lists": self.names(project)}
        written = _parsed(data, path)
        return {
            **listed,
            "exists": True,
            "items": written.get("items") or [],
            "updated": str(written.get("updated", "")),
            "version_id": self._store.last_commit(path),
        }

    def write(
        self,
        name: str,
        items: Any,
        project: str | None = None,
        *,
        client: str,
        expected_version_id: str | None = None,
    ) -> dict[str, Any]:
        """Replace a list with items (strings, numbers, booleans, flat objects): one commit.

        With expected_version_id (the version a read gave), a list changed since (by a
        sync's merge, another agent, a person) is not replaced: VersionConflict, nothing
        lost."""
        if expected_version_id is not None:
            ids.check_version_id(expected_version_id)
        project, path = self._where(name, project)
        _check_items(items)
        cleaned, found = _redacted(items)
        text = HEADER + dump_yaml(
            {"project": project, "name": name, "updated": utc_now(), "items": cleaned}
        )
        data = text.encode("utf-8")
        if len(data) > MAX_BYTES:
            raise InvalidInput(
                f"items: the list is {len(data):,} bytes written, more than {MAX_BYTES:,}",
                hint="keep work state short (what is in hand); remember what should last",
                field="items",
            )
        with self._store.write_lock():
            old = self._store.read_bytes(path)
            if not self._store.matches_head(path, old):
                raise VersionConflict(
                    f"{path} has changes that are not committed (a hand edit?); nothing was "
                    "written",
                    current_version_id=self._store.head_sha(),
                    hint=f"commit or discard the edit (git commit / git restore {path}), "
                    "then write again",
                )
            current = self._store.last_commit(path) if old is not None else None
            if expected_version_id is not None and expected_version_id != current:
                raise VersionConflict(
                    f"{path} changed since version {expected_version_id[:10]} was read; "
                    "nothing was written",
                    current_version_id=current or self._store.head_sha(),
                    hint="read the list again (work_state_read), apply the change to what it "
                    "holds now, and write with the new version_id",
                )
            held = (_parsed(old, path).get("items") or []) if old is not None else None
            if held == cleaned:  # (a repeat: the list already holds these items, no commit)
                sha, status = current or self._store.head_sha(), "unchanged"
            else:
                what = f"{project}/{name} ({len(cleaned)} item{'' if len(cleaned) == 1 else 's'})"
                subject = changelog.subject("work_state", what=what)
                message = changelog.message(subject, [], client)
                sha = self._store.apply([Change(path, data, name, expected=old)], message)
                status = "written"
        return {
            "project": project,
            "name": name,
            "status": status,
            "items": len(cleaned),
            "replaced": None if held is None else len(held),
            "version_id": sha,
            "path": path,
            "redactions": found,
        }

    def names(self, project: str | None = None) -> list[str]:
        """The lists a project has, by name."""
        folder = self._store.root / FOLDER / (project or self._project)
        if not folder.is_dir() or folder.is_symlink():
            return []
        return sorted(p.stem for p in folder.glob("*.yaml") if p.is_file())

    def _where(self, name: str, project: str | None) -> tuple[str, str]:
        project = check_project(project or self._project)
        check_project(name, "name")  # the same form: it names a file
        return project, f"{FOLDER}/{project}/{name}.yaml"


def _check_items(items: Any) -> None:
    if not isinstance(items, list):
        raise InvalidInput("items: must be a list", hint='send the whole list: ["ship docs"]')
    if len(items) > MAX_ITEMS:
        raise InvalidInput(
            f"items: {len(items)} items, more than {MAX_ITEMS}",
            hint="keep the list to what is in hand",
            field="items",
        )
    for i, item in enumerate(items):
        if not _fits(item):
            raise InvalidInput(
                f"items[{i}]: must be a string, number, boolean or a flat object of those",
                hint='for example "ship docs" or {"task": "test hooks", "done": false}',
                field=f"items[{i}]",
            )


def _fits(item: Any) -> bool:
    """A string, number or boolean; or an object of those (and nulls) under string keys."""
    if isinstance(item, dict):
        return all(isinstance(k, str) and (v is None or _scalar(v)) for k, v in item.items())
    return _scalar(item)


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)


def _redacted(items: list[Any]) -> tuple[list[Any], list[dict[str, Any]]]:
    """The items with every secret replaced (secrets never enter git), and what was."""
    found: list[dict[str, Any]] = []

    def clean(value: Any, where: str) -> Any:
        if isinstance(value, dict):
            return {k: clean(v, f"{where}.{k}") for k, v in value.items()}
        if not isinstance(value, str):
            return value
        text, hits = redact.redact_text(value, where)
        found.extend({"kind": h.kind, "field": h.field, "count": h.count} for h in hits)
        return text

    return [clean(item, f"items[{i}]") for i, item in enumerate(items)], found


def _parsed(data: bytes, path: str) -> dict[str, Any]:
    try:
        return load_yaml(data.decode("utf-8"), path)
    except UnicodeDecodeError:
        raise UnparseableFile(path, None, "not UTF-8 text", "save the file as UTF-8") from None
