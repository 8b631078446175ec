"""One exception hierarchy. Each error knows its code for MCP results and its CLI exit code.

Exit codes (documented in docs/cli.md):
  0 success, 1 internal error, 2 invalid input, 3 version conflict, 4 not found,
  5 limit exceeded, 6 vault busy, 7 no vault / vault broken, 8 unhealthy (doctor, verify).
"""

from __future__ import annotations

from typing import Any


class VaultError(Exception):
    """Base of every error the vault reports to a person or an agent."""

    code = "internal_error"
    exit_code = 1

    def __init__(self, message: str, *, hint: str = "", field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.field = field

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
    exit_code = 2


class LimitExceeded(InvalidInput):
    """Too large or too many: content size, batch size, entity or fact counts."""

    code = "limit_exceeded"
    exit_code = 5


class VersionConflict(VaultError):
    """The memory changed since the caller read it, or has an uncommitted hand edit."""

    code = "version_conflict"
    exit_code = 3

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
    exit_code = 4


class VaultBusy(VaultError):
    """Another writer held the vault lock, or git's own lock, for too long."""

    code = "vault_busy"
    exit_code = 6


class VaultUnavailable(VaultError):
    """No vault at the given place, or its repository cannot be used."""

    code = "vault_unavailable"
    exit_code = 7


class Cancelled(VaultError):
    """The caller cancelled the request; nothing was recorded."""

    code = "cancelled"
    exit_code = 130


class UnparseableFile(InvalidInput):
    """A memory file that cannot be read: bad YAML, wrong field shapes, no H1."""

    code = "unparseable_file"

    def __init__(self, path: str, line: int | None, reason: str, hint: str) -> None:
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {reason}", hint=hint)
        self.path = path
        self.line = line
        self.reason = reason
