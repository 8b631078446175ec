"""A new vault's config.toml names only settings doctor knows, and every one it knows."""

from __future__ import annotations

import tomllib

from vault_tool.checks.doctor import KNOWN_SETTINGS
from vault_tool.storage.config import DEFAULT_CONFIG


def test_doctor_knows_exactly_the_settings_a_new_vault_names():
    named = {table: set(values) for table, values in tomllib.loads(DEFAULT_CONFIG).items()}
    assert named == KNOWN_SETTINGS
