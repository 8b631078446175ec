"""What `vault_tool` offers scripts: pinned, so a change to it is a deliberate one."""

from __future__ import annotations

import inspect
import subprocess
import sys

import vault_tool
from vault_tool import errors

EXPORTED = {
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
}
VAULT_METHODS = {
    "apply_plan",
    "at_path",
    "blame",
    "catch_up",
    "close",
    "commit_hand_edits",
    "committed_file",
    "count",
    "create",
    "deleted",
    "expire",
    "feedback",
    "find",
    "head",
    "history",
    "indexed",
    "is_free",
    "leader",
    "ledger_records",
    "listing",
    "log",
    "memory_paths",
    "notes_named",
    "open",
    "path_for",
    "places",
    "project",
    "project_of",
    "projects",
    "problems",
    "read",
    "read_file",
    "reindex",
    "remember",
    "restore",
    "review",
    "revert",
    "rules",
    "same_content",
    "search",
    "search_as_of",
    "set_status",
    "settings",
    "settled",
    "show",
    "sync_paths",
    "take_in_offline_changes",
    "team",
    "views",
    "uncommitted",
    "upkeep",
    "version",
    "warm_search",
    "with_key",
    "work_state",
}


def test_the_package_exports_vault_and_the_error_tree() -> None:
    assert set(vault_tool.__all__) == EXPORTED
    for name in EXPORTED - {"__version__"}:
        assert getattr(vault_tool, name) is not None


def test_vault_offers_exactly_these_methods_each_documented() -> None:
    # Vault's own members and those of the parts it is made of (engine/lookups.py).
    own = {k for c in vault_tool.Vault.__mro__ if c is not object for k in vars(c)}
    public = {name for name in own if not name.startswith("_")}
    assert public == VAULT_METHODS
    for name in public:
        member = inspect.getattr_static(vault_tool.Vault, name)
        target = member.fget if isinstance(member, property) else member
        target = getattr(target, "__func__", target)
        assert (target.__doc__ or "").strip(), f"Vault.{name} has no docstring"


def test_every_exported_error_is_in_the_code_table() -> None:
    for name in EXPORTED - {"Vault", "__version__"}:
        assert getattr(vault_tool, name).code in errors.CODES


def test_importing_the_package_does_not_load_the_engine() -> None:
    # `vault-tool --help` and the server's first answer must not pay for the engine's imports.
    code = "import sys, vault_tool; print('vault_tool.engine.vault' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
