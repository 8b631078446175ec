"""vault_tool: a memory vault for AI agents, kept as Markdown files in a git repository.

The library interface for scripts is `Vault`, the same door the CLI and the MCP server use:

    from vault_tool import Vault

    with Vault.open("notes/vault", client="my-script") as vault:
        hits = vault.search({"query": "who owns the billing service"})["selected_hits"]
        vault.remember({"mode": "create", "content_md": "# ...", "semantic_delta": {...}})

Every refusal is a `VaultError` (see vault_tool.errors for the tree and its codes). Anything
not exported here is internal and may change.
"""

from __future__ import annotations

# Nothing is imported until it is asked for: git starts `python -m vault_tool textconv` for
# each side of each file a diff shows, and typing and dataclasses alone would double its time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from vault_tool.engine.vault import Vault
    from vault_tool.errors import (
        Cancelled,
        InvalidInput,
        LimitExceeded,
        NotFound,
        UnparseableFile,
        VaultBusy,
        VaultError,
        VaultUnavailable,
        VersionConflict,
    )

__version__ = "0.1.0"
__all__ = [
    "Cancelled",
    "InvalidInput",
    "LimitExceeded",
    "NotFound",
    "UnparseableFile",
    "Vault",
    "VaultBusy",
    "VaultError",
    "VaultUnavailable",
    "VersionConflict",
    "__version__",
]


def __getattr__(name: str) -> Any:
    # Vault is imported on first use: it brings in the index and git code, which
    # `vault-tool --help` and the server's early handshake should not pay for.
    if name == "Vault":
        from vault_tool.engine.vault import Vault

        return Vault
    if name in __all__:
        from vault_tool import errors

        return getattr(errors, name)
    raise AttributeError(f"module 'vault_tool' has no attribute {name!r}")
