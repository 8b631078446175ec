"""The bundled sample vault: a small engineering team's memories, with a real git history."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from vault_tool.core.memory import parse
from vault_tool.storage.git import commit_message
from vault_tool.storage.store import Change, Store, is_memory_path

SAMPLE_CLIENT = "sample"


def sample_dir() -> Path:
    """The sample memories: inside the installed package, or at the repo's top level."""
    package = Path(__file__).parents[1]
    packaged = package / "sample_vault"
    return packaged if packaged.is_dir() else package.parent / "sample-vault"


def create_sample_vault(root: Path, progress: Callable[[int, int], None] | None = None) -> int:
    """Make a vault at root holding the sample memories, one commit each at its creation time."""
    source = sample_dir()
    readme = source / "README.md"
    store = Store.init(root, readme=readme.read_text(encoding="utf-8") if readme.exists() else None)
    try:
        files = []
        for path in sorted(source.rglob("*.md")):
            rel = path.relative_to(source).as_posix()
            if is_memory_path(rel):
                data = path.read_bytes()
                memory = parse(data.decode("utf-8"), rel)
                files.append((memory.created or "", rel, data, memory))
        files.sort()
        with store.write_lock():
            for n, (created, rel, data, memory) in enumerate(files, 1):
                subject = f"Create {memory.memory_type}: {memory.title}"
                message = commit_message(subject, [memory.id or rel], SAMPLE_CLIENT)
                store.apply([Change(rel, data, memory.title)], message, author_date=created or None)
                if progress:
                    progress(n, len(files))
        return len(files)
    finally:
        store.close()
