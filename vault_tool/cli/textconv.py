"""`vault-tool textconv -- FILE`: the diff driver git runs on a memory file (one side of a
diff), printing its facts, entities and keys as lines above the body (core/diff_lines.py).

git starts one for each side of each file `git log -p` shows, so this path imports as
little as it can: `python -m vault_tool textconv` reaches run() before the command group
(and click) is imported (vault_tool/__main__.py). It never fails on a file's content: git
would stop the whole diff.
"""

from __future__ import annotations

import sys


def run(arguments: list[str]) -> int:
    """Print FILE (the last argument; `--` may come before it) as the diff shows it."""
    if arguments[:1] == ["--"]:
        arguments = arguments[1:]
    if len(arguments) != 1 or arguments[0] in ("-h", "--help"):
        sys.stderr.write("usage: vault-tool textconv -- FILE (the diff driver git runs)\n")
        return 2
    try:
        with open(arguments[0], "rb") as file:
            data = file.read()
    except OSError as problem:
        sys.stderr.write(f"vault-tool textconv: {problem.strerror}: {arguments[0]!r}\n")
        return 1
    from vault_tool.core.diff_lines import for_diff

    sys.stdout.buffer.write(for_diff(data))
    sys.stdout.buffer.flush()
    return 0
