"""The tools an agent sees are pinned byte for byte; their error codes are the errors table."""

from __future__ import annotations

import json
from pathlib import Path

from vault_tool import errors
from vault_tool.core import schema
from vault_tool.server import app, tools

SNAPSHOT = Path(__file__).parents[1] / "fixtures" / "tools-list.json"


def listed() -> str:
    entries = [
        app.listed_tool(spec).model_dump(mode="json", by_alias=True, exclude_none=True)
        for spec in tools.tool_specs()
    ]
    return json.dumps(entries, indent=2) + "\n"


def test_tools_list_is_byte_for_byte_the_snapshot() -> None:
    # A deliberate change to a tool's description or schema regenerates the snapshot:
    #   python -c "from tests.unit.test_tool_list import listed; print(listed(), end='')" \
    #     > tests/fixtures/tools-list.json
    assert listed() == SNAPSHOT.read_text(encoding="utf-8")


def test_the_error_schema_enumerates_exactly_the_codes_of_the_table() -> None:
    error = schema.load("error.schema.json")["properties"]["error"]
    assert error["properties"]["code"]["enum"] == list(errors.CODES)


def test_every_error_class_has_a_row_in_the_table() -> None:
    def subclasses(cls: type) -> list[type]:
        return [cls] + [s for sub in cls.__subclasses__() for s in subclasses(sub)]

    for cls in subclasses(errors.VaultError):
        assert cls.code in errors.CODES, cls.__name__
    assert {cls.code for cls in subclasses(errors.VaultError)} == set(errors.CODES)
