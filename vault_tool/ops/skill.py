"""The agent skill file (skill.md): when to search, what to remember, and how to write it well."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from vault_tool.core import schema

FILE_NAME = "SKILL.md"


def text(more_tools: Sequence[tuple[str, str]] = ()) -> str:
    """The skill file, with the memory types of the schema filled in; more_tools (name,
    description) are the tools a server of the extended profile offers besides."""
    template = (Path(__file__).parent / "skill.md").read_text(encoding="utf-8")
    types = "\n".join(f"- `{name}`: {about}" for name, about in schema.memory_types().items())
    text = template.replace("{{memory_types}}", types)
    if more_tools:
        listed = "\n".join(f"- `{name}`: {about}" for name, about in more_tools)
        text += f"\n## More tools (this server offers the extended profile)\n\n{listed}\n"
    return text


def install(folder: Path, more_tools: Sequence[tuple[str, str]] = ()) -> tuple[Path, bool]:
    """Write folder/SKILL.md: (its path, whether it changed); a replaced file is kept as .bak."""
    target = folder / FILE_NAME
    content = text(more_tools)
    if target.exists() and target.read_text(encoding="utf-8") == content:
        return target, False
    folder.mkdir(parents=True, exist_ok=True)
    if target.exists():
        os.replace(target, target.with_name(FILE_NAME + ".bak"))
    tmp = target.with_name(f".{FILE_NAME}.tmp")
    tmp.write_text(content, encoding="utf-8")
    os.replace(tmp, target)
    return target, True
