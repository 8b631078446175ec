"""A pattern that names a whole value (a project, an id, a tag, a predicate) ends where the
value ends: Python's `$` also matches before a final newline, which would let "shop\\n"
through as a project and into a path or a commit subject."""

from __future__ import annotations

import pytest

from tests.helpers import create_args
from vault_tool.core import ids, schema
from vault_tool.core.projects import check_project
from vault_tool.errors import InvalidInput


def test_a_name_with_a_final_newline_is_refused() -> None:
    with pytest.raises(InvalidInput):
        check_project("shop\n", "project")
    with pytest.raises(InvalidInput):
        ids.check_memory_id("01KTVQQHSR2ZNMJG5YTHWPN2AS\n")
    with pytest.raises(InvalidInput):
        ids.check_version_id("0" * 40 + "\n")
    assert check_project("shop", "project") == "shop"


@pytest.mark.parametrize(
    ("field", "value"),
    [("tags", ["billing\n"]), ("project", "shop\n"), ("key", "billing.owner\n")],
)
def test_the_schema_refuses_a_final_newline_compiled_or_not(field: str, value: object) -> None:
    call = create_args()
    call["semantic_delta"][field] = value
    assert schema.problems(call, "remember.input.schema.json")  # (the compiled checks)
    assert schema.errors_of(call, "remember.input.schema.json")  # (jsonschema's own)
    call["semantic_delta"][field] = [value[0].strip()] if isinstance(value, list) else value.strip()
    assert schema.problems(call, "remember.input.schema.json") == []
