"""Every number in .vault/config.toml has a range and must be finite, checked where the file
is read: a value out of range stops the vault with an error naming the key, the value, the
range and the file (the file is committed, so one edit reaches every clone), and doctor
fails on it, instead of each write later failing on it as an internal error."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_support import invoke
from tests.helpers import create_args, git
from vault_tool.checks import doctor as doctor_module
from vault_tool.checks.checkup import Checkup
from vault_tool.engine.vault import Vault
from vault_tool.errors import VaultUnavailable
from vault_tool.storage.config import CONFIG_PATH, read_config

# (table, key, its line in a new vault's file, the range as the error says it)
SETTINGS = {
    "lock_timeout_seconds": ("write", "lock_timeout_seconds = 30", "from 1 to 3600"),
    "debounce_ms": ("watch", "debounce_ms = 300", "from 0 to 60000"),
    "every": ("sync", 'every = "0"', "0 (never) or from 1 s to 168 h"),
}
OUT_OF_RANGE = {
    "lock_timeout_seconds": ["inf", "-inf", "nan", "1e10", "-5", "0", "0.5", "3601"],
    "debounce_ms": ["-1", "60001", "10000000000"],
    "every": ["inf", "nan", "-5", "1e10", "0.5", '"1e400"', '"99999999999h"', '"169h"', "-inf"],
}
WRONG_TYPE = {
    "lock_timeout_seconds": ["true", '"30"'],
    "debounce_ms": ["true", "1.5", "inf", "nan"],
    "every": ["true"],
}
IN_RANGE = {
    "lock_timeout_seconds": [("1", 1.0), ("3600", 3600.0), ("2.5", 2.5)],
    "debounce_ms": [("0", 0), ("60000", 60000)],
    "every": [("0", 0.0), ('"1s"', 1.0), ('"168h"', 604800.0), ("90", 90.0), ('"5m"', 300.0)],
}


def _set(root: Path, key: str, value: str) -> None:
    config = root / CONFIG_PATH
    line = SETTINGS[key][1]
    text = config.read_text(encoding="utf-8")
    assert line in text
    config.write_text(text.replace(line, f"{key} = {value}"), encoding="utf-8")


def _cases(table: dict[str, list[str]]) -> list[tuple[str, str]]:
    return [(key, value) for key, values in table.items() for value in values]


@pytest.mark.parametrize(("key", "value"), _cases(OUT_OF_RANGE) + _cases(WRONG_TYPE))
def test_a_number_out_of_range_is_refused_naming_key_value_range_and_file(
    vault_path: Path, key: str, value: str
):
    _set(vault_path, key, value)
    with pytest.raises(VaultUnavailable) as refused:
        read_config(vault_path)
    table, _, allowed = SETTINGS[key]
    message = refused.value.message
    assert message.startswith(f"{CONFIG_PATH}: [{table}] {key} is "), message
    assert allowed in message, message
    assert CONFIG_PATH in refused.value.hint and "every clone" in refused.value.hint


@pytest.mark.parametrize(
    ("key", "value", "read"),
    [(key, value, read) for key, pairs in IN_RANGE.items() for value, read in pairs],
)
def test_the_ends_of_each_range_are_accepted(vault_path: Path, key: str, value: str, read):
    _set(vault_path, key, value)
    config = read_config(vault_path)
    attribute = {"every": "sync_every_seconds"}.get(key, key)
    assert getattr(config, attribute) == read


def test_an_infinite_lock_timeout_stops_the_vault_with_its_fix_and_fails_doctor(
    vault_path: Path,
):
    _set(vault_path, "lock_timeout_seconds", "inf")
    git(vault_path, "commit", "-q", "-m", "Wait for ever", "--", CONFIG_PATH)
    with pytest.raises(VaultUnavailable, match="lock_timeout_seconds is inf"):
        Vault.open(vault_path)
    done = invoke("search", "billing", "--vault", vault_path)
    assert done.exit_code == 7, done.stdout + done.stderr
    assert "[write] lock_timeout_seconds is inf" in done.stderr
    assert "from 1 to 3600" in done.stderr and CONFIG_PATH in done.stderr
    with Checkup(vault_path) as checkup:
        report = doctor_module.doctor(checkup)
    found = next(c for c in report.checks if c.name == "config")
    assert found.status == "fail" and "lock_timeout_seconds is inf" in found.summary
    # Put right, every write works again.
    _set_line(vault_path, "lock_timeout_seconds = inf", "lock_timeout_seconds = 30")
    with Vault.open(vault_path) as vault:
        assert vault.remember(create_args())["status"] == "created"


# --- numbers given on the command line: the same, where click reads them -------------------


@pytest.mark.parametrize("every", ["99999999999h", "169h", "0.5s", "inf", "nan"])
def test_serve_refuses_a_sync_interval_out_of_range(vault_path: Path, every: str):
    done = invoke("serve", "--sync-every", every, "--vault", vault_path)
    assert done.exit_code == 2, done.output
    assert "0 (never) or from 1 s to 168 h" in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("args", "refused"),
    [
        (["serve", "--http", "--port", "99999"], "--port"),
        (["serve", "--http", "--port", "-1"], "--port"),
        (["gc", "--ledger-older-than", "inf"], "--ledger-older-than"),
        (["gc", "--ledger-older-than", "nan"], "--ledger-older-than"),
        (["gc", "--ledger-older-than", "1e300"], "--ledger-older-than"),
    ],
)
def test_a_number_option_out_of_range_is_a_usage_error_not_a_crash(
    vault_path: Path, args: list[str], refused: str
):
    done = invoke(*args, "--vault", vault_path)
    assert done.exit_code == 2, done.stdout + done.stderr
    assert refused in done.stderr


def _set_line(root: Path, old: str, new: str) -> None:
    config = root / CONFIG_PATH
    config.write_text(config.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
