"""The error tree and the one table every surface reads its codes from.

    VaultError                  internal_error      a bug or an environment failure
    ├── InvalidInput            invalid_input       the call or the file is malformed
    │   ├── LimitExceeded       limit_exceeded      too large or too many
    │   └── UnparseableFile     unparseable_file    a memory file that cannot be read
    ├── VersionConflict         version_conflict    changed since read, or a hand edit pending
    ├── NotFound                not_found           no memory, version or record with that id
    ├── VaultBusy               vault_busy          a lock held too long
    ├── VaultUnavailable        vault_unavailable   no vault there, or its repository is broken
    ├── Forbidden               forbidden           the caller's token may not do this
    └── Cancelled               cancelled           the caller gave up; nothing was recorded

Core modules raise these; only the edges map them: the MCP wrapper to an isError result
whose structuredContent carries `code` (schema/error.schema.json enumerates CODES), the
CLI to a message and the exit code below. docs/cli.md and docs/mcp.md render this table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ErrorCode:
    """One row of the table: the code an agent reads, the exit code a script reads."""

    code: str
    exit_code: int
    meaning: str


CODES: dict[str, ErrorCode] = {
    row.code: row
    for row in (
        ErrorCode("internal_error", 1, "a bug or an environment failure (details in the log)"),
        ErrorCode("invalid_input", 2, "the call, a file or a setting is malformed"),
        ErrorCode("unparseable_file", 2, "a memory file cannot be read (bad YAML, no title)"),
        ErrorCode("version_conflict", 3, "the memory changed since it was read"),
        ErrorCode("not_found", 4, "no memory, version or record has that id"),
        ErrorCode("limit_exceeded", 5, "too large or too many (content, batch, entities)"),
        ErrorCode("vault_busy", 6, "another writer or git command held a lock too long"),
        ErrorCode("vault_unavailable", 7, "no vault there, or its repository cannot be used"),
        ErrorCode("forbidden", 1, "the token may not call this tool, or not for that project"),
        ErrorCode("cancelled", 130, "the caller cancelled; nothing was recorded"),
    )
}

# What each exit code of the CLI means: the error codes above, plus outcomes that are not
# errors. The CLI's epilog and docs/cli.md are rendered from this.
UNHEALTHY = 8
IMPORT_SKIPPED = 9
LEFT_UNCOMMITTED = 10
OUTPUT_CLOSED = 141  # 128 + SIGPIPE, what a shell reports for a writer whose reader left
EXIT_CODES: dict[int, str] = {
    0: "success",
    1: "internal error",
    2: "invalid input or usage",
    3: "version conflict",
    4: "not found",
    5: "limit exceeded",
    6: "vault busy",
    7: "no vault or vault broken",
    UNHEALTHY: "unhealthy (verify, doctor)",
    IMPORT_SKIPPED: "import skipped items (the report lists each with its reason)",
    LEFT_UNCOMMITTED: "commit left files uncommitted (the report lists each with its fix)",
    130: "cancelled or interrupted",
    OUTPUT_CLOSED: "output closed early (piped into head, say): the rest is dropped quietly",
}


class VaultError(Exception):
    """Base of every error the vault reports to a person or an agent."""

    code = "internal_error"

    def __init__(self, message: str, *, hint: str = "", field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.field = field

    @property
    def exit_code(self) -> int:
        """The CLI's exit code for this error (from CODES)."""
        return CODES[self.code].exit_code

    def to_dict(self) -> dict[str, Any]:
        """The `{"error": {...}}` shape of a refused tool call."""
        error: dict[str, Any] = {"code": self.code, "message": self.message, "hint": self.hint}
        if self.field:
            error["field"] = self.field
        return {"error": error}

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class InvalidInput(VaultError):
    """The call or the file is malformed; the message names the field and the fix."""

    code = "invalid_input"
    # A call refused for several problems lists them all: [{"field", "message", "hint"}].
    problems: tuple[dict[str, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        result = super().to_dict()
        if self.problems:
            result["error"]["problems"] = list(self.problems)
        return result


class LimitExceeded(InvalidInput):
    """Too large or too many: content size, batch size, entity or fact counts."""

    code = "limit_exceeded"


class UnparseableFile(InvalidInput):
    """A memory file that cannot be read: bad YAML, wrong field shapes, no H1.

    The hint is the fix for this file's problem, so a reader (doctor, the watcher's log,
    an agent) never has to guess it from the reason's wording.
    """

    code = "unparseable_file"

    def __init__(self, path: str, line: int | None, reason: str, hint: str) -> None:
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {reason}", hint=hint)
        self.path = path
        self.line = line
        self.reason = reason


class VersionConflict(VaultError):
    """The memory changed since the caller read it, or has an uncommitted hand edit."""

    code = "version_conflict"

    def __init__(self, message: str, *, current_version_id: str, hint: str = "") -> None:
        super().__init__(message, hint=hint, field="expected_version_id")
        self.current_version_id = current_version_id

    def to_dict(self) -> dict[str, Any]:
        result = super().to_dict()
        result["error"]["current_version_id"] = self.current_version_id
        return result


class NotFound(VaultError):
    """No memory (or version, or record) with that id."""

    code = "not_found"


class VaultBusy(VaultError):
    """Another writer held the vault lock, git's own lock, or the index's, for too long."""

    code = "vault_busy"


class VaultUnavailable(VaultError):
    """No vault at the given place, or its repository cannot be used."""

    code = "vault_unavailable"


class Forbidden(VaultError):
    """The caller's token may not do this: a tool beyond its scope, or another project."""

    code = "forbidden"


class Cancelled(VaultError):
    """The caller cancelled the request; nothing was recorded."""

    code = "cancelled"
