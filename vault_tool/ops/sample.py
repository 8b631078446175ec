"""The bundled sample vault: a small engineering team's memories, with a real git history."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from vault_tool.core import changelog
from vault_tool.core.ids import is_memory_path
from vault_tool.core.memory import parse
from vault_tool.engine.vault import Vault
from vault_tool.engine.writer import Planned

SAMPLE_CLIENT = "sample"


def sample_dir() -> Path:
    """The sample memories: inside the installed package, or at the repo's top level."""
    package = Path(__file__).parents[1]
    packaged = package / "sample_vault"
    return packaged if packaged.is_dir() else package.parent / "sample-vault"


def create_sample_vault(
    root: Path, progress: Callable[[int, int], None] | None = None, *, nested: bool = False
) -> int:
    """Make a vault at root holding the sample memories, one commit each at its creation time
    (nested: even inside another repository, Store.init)."""
    source = sample_dir()
    readme = source / "README.md"
    text = readme.read_text(encoding="utf-8") if readme.exists() else None
    Vault.create(root, readme=text, nested=nested)
    memories = []
    for path in sorted(source.rglob("*.md")):
        rel = path.relative_to(source).as_posix()
        if is_memory_path(rel):
            memory = parse(path.read_text(encoding="utf-8"), rel)
            memories.append((memory.created or "", rel, memory))
    memories.sort()
    with Vault.open(root, client=SAMPLE_CLIENT, catch_up=False) as vault:
        for n, (created, rel, memory) in enumerate(memories, 1):
            subject = changelog.subject("create", changelog.entry(memory, rel))
            vault.apply_plan([Planned(rel, memory)], subject, author_date=created or None)
            if progress:
                progress(n, len(memories))
    return len(memories)
