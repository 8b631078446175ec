"""MCP host configurations: the snippet each host needs to start `vault-tool serve`, and merging it.

Each host keeps its MCP servers in its own file and shape. `snippet` gives the entry to
paste; `install` merges it into the host's file after a timestamped backup, and changes
nothing when the entry is already there (so running it twice is safe). The entry starts
the vault's stdio server (a command line), or points at a remote `serve --http` (a Remote:
its shapes are in ops/remote_hosts.py). Codex uses TOML, written by hand here (the table is
small) and read back with tomllib before anything is saved; every other host uses JSON.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tomllib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from vault_tool.errors import InvalidInput
from vault_tool.ops import remote_hosts
from vault_tool.ops.remote_hosts import Remote

# What an entry starts: a command line (stdio), or a remote server.
Server = list[str] | Remote

HOSTS = ("claude-code", "codex", "cursor", "gemini-cli", "windsurf", "opencode", "vscode")


@dataclass(frozen=True)
class Installed:
    """What `install` did: the file, whether it changed, and where the old copy went."""

    path: Path
    changed: bool
    backup: Path | None


def server_command(
    vault: Path, profile: str | None = None, project: str | None = None
) -> list[str]:
    """The absolute command line that starts this vault's stdio server (offering the
    profile's tools, and working in the project, when they are named)."""
    tools = ["--tools", profile] if profile else []
    working = ["--project", project] if project else []
    return [*_executable(), "serve", "--vault", str(vault), *tools, *working]


def default_path(host: str) -> Path:
    """The user-level config file of a host (the one `--write` edits)."""
    home = Path.home()
    if host == "claude-code":
        return home / ".claude.json"
    if host == "codex":
        return Path(os.environ.get("CODEX_HOME") or home / ".codex") / "config.toml"
    if host == "cursor":
        return home / ".cursor" / "mcp.json"
    if host == "gemini-cli":
        return home / ".gemini" / "settings.json"
    if host == "windsurf":
        return home / ".codeium" / "windsurf" / "mcp_config.json"
    if host == "opencode":
        return home / ".config" / "opencode" / "opencode.json"
    if host == "vscode":
        if sys.platform == "darwin":
            return home / "Library" / "Application Support" / "Code" / "User" / "mcp.json"
        if sys.platform == "win32":
            return Path(os.environ.get("APPDATA", home)) / "Code" / "User" / "mcp.json"
        return home / ".config" / "Code" / "User" / "mcp.json"
    raise InvalidInput(f"host: unknown host {host!r}", hint=f"use one of: {', '.join(HOSTS)}")


def snippet(host: str, name: str, server: Server) -> str:
    """The config text to add to the host's file, in that file's own format."""
    if host == "codex":
        return _toml_table(name, _codex_fields(server))
    container, entry, prompt = _json_entry(host, name, server, {})
    document: dict[str, Any] = {}
    node = document
    for key in container:
        node = node.setdefault(key, {})
    node[name] = entry
    if prompt is not None:
        document["inputs"] = [prompt]
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def install(host: str, name: str, server: Server, path: Path) -> Installed:
    """Merge the entry into path (creating it if needed), backing up what was there.

    A file that now holds a token is made readable by its owner only."""
    old = path.read_text(encoding="utf-8") if path.exists() else None
    if host == "codex":
        new = _merged_toml(old, name, _codex_fields(server), path)
    else:
        new = _merged_json(host, old, name, server, path)
    if new is None:
        return Installed(path, changed=False, backup=None)
    backup = None
    if old is not None:
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        backup = path.with_name(f"{path.name}.bak-{stamp}")
        shutil.copy2(path, backup)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.vault-tool.tmp")
    tmp.write_text(new, encoding="utf-8")
    if old is not None:
        shutil.copymode(path, tmp)
    if isinstance(server, Remote) and server.holds_secret:
        tmp.chmod(0o600)
    os.replace(tmp, path)
    return Installed(path, changed=True, backup=backup)


# --- JSON hosts ------------------------------------------------------------------------------


def _json_entry(
    host: str, name: str, server: Server, existing: dict[str, Any]
) -> tuple[list[str], Any, dict[str, Any] | None]:
    """(keys down to the servers table, the entry, VS Code's token prompt) for a JSON host."""
    # OpenCode 2 nests servers under mcp.servers; 1.x lists them directly under mcp.
    v2 = isinstance(existing.get("mcp"), dict) and isinstance(existing["mcp"].get("servers"), dict)
    container = {"vscode": ["servers"], "opencode": ["mcp", "servers"] if v2 else ["mcp"]}.get(
        host, ["mcpServers"]
    )
    if isinstance(server, Remote):
        entry = remote_hosts.json_entry(host, name, server, v2)
        prompt = remote_hosts.vscode_input(name, server) if host == "vscode" else None
        return container, entry, prompt
    program, args = server[0], server[1:]
    if host == "vscode":
        return container, {"type": "stdio", "command": program, "args": args}, None
    if host == "claude-code":
        return container, {"type": "stdio", "command": program, "args": args, "env": {}}, None
    if host == "opencode":
        entry = {"type": "local", "command": server}
        return container, entry if v2 else {**entry, "enabled": True}, None
    return container, {"command": program, "args": args}, None


def _merged_json(host: str, old: str | None, name: str, server: Server, path: Path) -> str | None:
    document: Any = {}
    if old is not None and old.strip():
        try:
            document = json.loads(old)
        except ValueError as problem:
            raise InvalidInput(
                f"{path}: is not plain JSON ({problem.msg}, line {problem.lineno}); "
                "nothing was changed",
                hint="add the printed snippet by hand (the file may hold comments)",
            ) from None
    if not isinstance(document, dict):
        raise InvalidInput(f"{path}: does not hold a JSON object", hint="add the snippet by hand")
    if host == "opencode" and not document:
        document["$schema"] = "https://opencode.ai/config.json"
    container, entry, prompt = _json_entry(host, name, server, document)
    node = document
    for key in container:
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            raise InvalidInput(
                f"{path}: {'.'.join(container)} is not an object", hint="add the snippet by hand"
            )
        node = child
    prompts_changed = prompt is not None and _merged_prompt(document, prompt, path)
    if node.get(name) == entry and not prompts_changed:
        return None
    node[name] = entry
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _merged_prompt(document: dict[str, Any], prompt: dict[str, Any], path: Path) -> bool:
    """Put VS Code's token prompt in the file's `inputs` (by id); whether that changed it."""
    inputs = document.setdefault("inputs", [])
    if not isinstance(inputs, list):
        raise InvalidInput(f"{path}: inputs is not a list", hint="add the snippet by hand")
    for index, existing in enumerate(inputs):
        if isinstance(existing, dict) and existing.get("id") == prompt["id"]:
            if existing == prompt:
                return False
            inputs[index] = prompt
            return True
    inputs.append(prompt)
    return True


# --- Codex (TOML) ----------------------------------------------------------------------------


def _codex_fields(server: Server) -> dict[str, Any]:
    if isinstance(server, Remote):
        return remote_hosts.codex_fields(server)
    return {"command": server[0], "args": server[1:]}


def _toml_table(name: str, fields: dict[str, Any]) -> str:
    lines = [f"[mcp_servers.{_toml_key(name)}]"]
    lines += [f"{_toml_key(key)} = {_toml_value(value)}" for key, value in fields.items()]
    return "\n".join(lines) + "\n"


def _toml_value(value: str | list[str] | dict[str, str]) -> str:
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_string(item) for item in value) + "]"
    pairs = ", ".join(f"{_toml_key(k)} = {_toml_string(v)}" for k, v in value.items())
    return "{ " + pairs + " }"


def _merged_toml(old: str | None, name: str, wanted: dict[str, Any], path: Path) -> str | None:
    text = old or ""
    try:
        current = tomllib.loads(text)
    except tomllib.TOMLDecodeError as problem:
        raise InvalidInput(
            f"{path}: is not valid TOML ({problem}); nothing was changed",
            hint="fix the file, or add the printed snippet by hand",
        ) from None
    existing = current.get("mcp_servers", {}).get(name)
    if existing == wanted:
        return None
    table = _toml_table(name, wanted)
    if existing is None:
        merged = (text.rstrip("\n") + "\n\n" if text.strip() else "") + table
    else:
        merged = _replace_toml_table(text, name, table, path)
    if tomllib.loads(merged).get("mcp_servers", {}).get(name) != wanted:
        raise InvalidInput(
            f"{path}: could not merge the [mcp_servers.{name}] table safely; nothing was changed",
            hint="add the printed snippet by hand",
        )
    return merged


def _replace_toml_table(text: str, name: str, table: str, path: Path) -> str:
    """Swap the [mcp_servers.<name>] table (and its sub-tables) for a new one."""
    header = f"[mcp_servers.{_toml_key(name)}]"
    prefix = f"[mcp_servers.{_toml_key(name)}."
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.strip() == header]
    if len(starts) != 1:
        raise InvalidInput(
            f"{path}: mcp_servers.{name} is not written as one {header} table; nothing was changed",
            hint="edit that entry by hand, or pick another name with --name",
        )
    start = end = starts[0]
    end += 1
    while end < len(lines):
        stripped = lines[end].strip()
        if stripped.startswith("[") and not stripped.startswith(prefix):
            break
        end += 1
    kept_tail = "".join(lines[end:])
    return "".join(lines[:start]) + table + ("\n" + kept_tail if kept_tail else "")


def _toml_key(name: str) -> str:
    bare = name.replace("-", "").replace("_", "").isalnum() and name.isascii()
    return name if bare else _toml_string(name)


def _toml_string(value: str) -> str:
    # A JSON string is a valid TOML basic string (same escapes) once it is one line.
    return json.dumps(value, ensure_ascii=False)


# --- the executable --------------------------------------------------------------------------


def _executable() -> list[str]:
    """The absolute path of the running vault-tool, or python -m vault_tool as a fallback."""
    launched = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if launched is not None and launched.name.startswith("vault-tool"):
        found = shutil.which(str(launched)) if not launched.is_absolute() else str(launched)
        if found and Path(found).is_file():
            return [str(Path(found).absolute())]
    found = shutil.which("vault-tool")
    if found:
        return [str(Path(found).absolute())]
    return [str(Path(sys.executable).absolute()), "-m", "vault_tool"]
