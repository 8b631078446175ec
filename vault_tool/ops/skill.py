"""The agent skill file (skill.md): when to search, what to remember, and how to write it well."""

from __future__ import annotations

import os
from pathlib import Path

from vault_tool.core import schema

FILE_NAME = "SKILL.md"


def text() -> str:
    """The skill file, with the memory types of the schema filled in."""
    template = (Path(__file__).parent / "skill.md").read_text(encoding="utf-8")
    types = "\n".join(f"- `{name}`: {about}" for name, about in schema.memory_types().items())
    return template.replace("{{memory_types}}", types)


def install(folder: Path) -> tuple[Path, bool]:
    """Write folder/SKILL.md: (its path, whether it changed); a replaced file is kept as .bak."""
    target = folder / FILE_NAME
    content = text()
    if target.exists() and target.read_text(encoding="utf-8") == content:
        return target, False
    folder.mkdir(parents=True, exist_ok=True)
    if target.exists():
        os.replace(target, target.with_name(FILE_NAME + ".bak"))
    tmp = target.with_name(f".{FILE_NAME}.tmp")
    tmp.write_text(content, encoding="utf-8")
    os.replace(tmp, target)
    return target, True
