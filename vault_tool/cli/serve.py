"""Serving the vault to agents: serve, connect, skill.

`serve` imports the MCP SDK only once it runs, so the rest of the CLI stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from vault_tool.cli.choices import NamedChoice, project_name
from vault_tool.cli.output import emit, vault_options
from vault_tool.ops.hosts import HOSTS
from vault_tool.storage.config import TOOL_PROFILES, read_config


@click.command()
@click.option("--http", "use_http", is_flag=True, help="Serve Streamable HTTP instead of stdio.")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on with --http; anything but loopback needs a token.",
)
@click.option(
    "--port",
    default=8765,
    show_default=True,
    type=click.IntRange(1, 65535),
    help="Port for --http.",
)
@click.option(
    "--token",
    envvar="VAULT_TOOL_TOKEN",
    metavar="SECRET",
    help="Bearer token with full access [env: VAULT_TOOL_TOKEN]. Required off loopback.",
)
@click.option(
    "--read-only-token",
    "read_only_tokens",
    multiple=True,
    envvar="VAULT_TOOL_READONLY_TOKEN",
    metavar="SECRET",
    help="Bearer token that may only search (repeatable) [env: VAULT_TOOL_READONLY_TOKEN].",
)
@click.option(
    "--rate-limit",
    default=120,
    show_default=True,
    type=int,
    help="HTTP requests per minute per token (0: no limit); excess gets 429.",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="HOST[:PORT]",
    help="Also accept this Host header (repeatable; NAME:* for any port).",
)
@click.option(
    "--allow-origin",
    "allow_origins",
    multiple=True,
    metavar="ORIGIN",
    help="Also accept browser requests from this Origin (repeatable).",
)
@click.option(
    "--tools",
    "profile",
    type=click.Choice(TOOL_PROFILES),
    help="The tools offered: core (search, remember) or extended (also session_context, "
    "read, timeline, fact_history, rules, work state, dismiss: docs/mcp.md) [default: "
    "[server] tools in .vault/config.toml, else core].",
)
@click.option(
    "--project",
    envvar="VAULT_TOOL_PROJECT",
    metavar="NAME",
    callback=project_name,
    help="The project this server works in: new memories that name none get it, and the "
    "extended tools' session context and work state default to it [default: [server] "
    "project in .vault/config.toml, else the vault's default project, wherever it starts]. "
    "docs/projects.md",
)
@click.option(
    "--sync-every",
    metavar="DURATION",
    help="Sync with the git remote this often (30s, 5m, 1h; 0 never). The process that "
    "leads the vault's watching syncs, this server or another (a `vault-tool watch`), as "
    "often as any live one asks [default: sync.every in .vault/config.toml].",
)
@vault_options
def serve(
    use_http: bool,
    host: str,
    port: int,
    token: str | None,
    read_only_tokens: tuple[str, ...],
    rate_limit: int,
    allow_hosts: tuple[str, ...],
    allow_origins: tuple[str, ...],
    profile: str | None,
    project: str | None,
    sync_every: str | None,
    vault_path: str | None,
    as_json: bool,
) -> None:
    """Serve the vault to MCP hosts: two tools, search and remember (--tools extended: more).

    Over stdio by default (one server per host connection; it exits when stdin closes or on
    SIGTERM). Over stdio the vault is opened, and hand edits watched, only once the host's
    first request (`initialize`) arrives: started by hand with no client, it waits and
    watches nothing (`vault-tool watch` watches with no client). With --http, Streamable
    HTTP at http://HOST:PORT/mcp, loopback by default; Host and Origin are checked, and
    with a token every request must carry `Authorization: Bearer <token>`; it opens the
    vault and watches from the start. Logs go to .vault/run/server.log, one line per tool
    call to .vault/run/audit.jsonl; stderr stays quiet. See docs/mcp.md.
    """
    from vault_tool.cli.output import report_error
    from vault_tool.errors import VaultError

    every = None if sync_every is None else _duration(sync_every)
    try:
        root = _existing_vault(vault_path)
    except VaultError as problem:
        if use_http:  # (started by a person, who reads the error)
            raise
        # A host shows only "connection closed" for a server that exits before it answers
        # `initialize`: serve, and say what is wrong in every call and on stderr.
        report_error(problem, as_json=False)
        from vault_tool.server.stdio import serve_unavailable

        raise click.exceptions.Exit(serve_unavailable(problem, profile or "core")) from None
    try:
        profile = profile or read_config(root).server_tools
    except VaultError as problem:  # a broken config: every call says so (Runtime.open)
        report_error(problem, as_json=False)
        profile = "core"
    if use_http:
        from vault_tool.server import http
        from vault_tool.storage import tokens

        config = http.settings(
            host,
            port,
            token=token,
            read_only_tokens=list(read_only_tokens),
            rate_per_minute=rate_limit,
            allow_hosts=list(allow_hosts),
            allow_origins=list(allow_origins),
            stored=tokens.load(root),
        )
    from vault_tool.server.runtime import configure_logging

    configure_logging(root)
    if use_http:
        http.serve_http(root, config, every, profile, project)
        return
    from vault_tool.server.stdio import serve_stdio

    serve_stdio(root, every, profile, project)


@click.command()
@click.argument("host", type=NamedChoice(HOSTS), metavar="HOST")
@click.option("--write", is_flag=True, help="Merge it into the host's config file (with a backup).")
@click.option("--name", default="vault", show_default=True, help="The server's name in the host.")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Use this config file instead of the host's user-level one.",
)
@click.option(
    "--url",
    metavar="URL",
    help="Point HOST at a running `serve --http` (for example http://vault.lan:8765/mcp) "
    "instead of starting a local server.",
)
@click.option(
    "--token-env",
    metavar="NAME",
    help="With --url: the environment variable HOST reads the token from, sent as "
    "`Authorization: Bearer <token>` [default: VAULT_TOOL_TOKEN]. Only its name is written.",
)
@click.option(
    "--token",
    metavar="SECRET",
    help="With --url: write this token into the config file itself (the file then holds a "
    "secret; prefer --token-env).",
)
@click.option(
    "--tools",
    "profile",
    type=click.Choice(TOOL_PROFILES),
    help="Have the server offer these tools (`serve --tools`) [default: the vault's "
    "[server] tools].",
)
@click.option(
    "--project",
    metavar="NAME",
    callback=project_name,
    help="Have the server work in this project (`serve --project`) [default: the vault's "
    "[server] project, else its default project].",
)
@vault_options
def connect(
    host: str,
    write: bool,
    name: str,
    config_path: str | None,
    url: str | None,
    token_env: str | None,
    token: str | None,
    profile: str | None,
    project: str | None,
    vault_path: str | None,
    as_json: bool,
) -> None:
    """Print the MCP config that connects HOST to this vault; --write installs it.

    HOST is one of: claude-code, codex, cursor, gemini-cli, windsurf, opencode, vscode.
    The entry runs `vault-tool serve --vault <vault>` with absolute paths; with --url it
    points at a remote `serve --http` instead, the token read from an environment variable
    (VS Code asks for it once). --write merges it into the host's file, keeping everything
    else, after saving a timestamped backup; when the entry is already there nothing is
    written.
    """
    from vault_tool.errors import InvalidInput
    from vault_tool.ops import hosts, remote_hosts

    if url is None and (token_env is not None or token is not None):
        raise InvalidInput(
            "--token-env and --token: only mean something with --url",
            hint="add --url http://HOST:PORT/mcp, the address `serve --http` serves",
        )
    if url is not None and project is not None:
        raise InvalidInput(
            "--project: a remote server works in its own project",
            hint="start it with `serve --http --project NAME`, or drop --url",
        )
    server: hosts.Server
    if url is not None:
        remote_hosts.require_known(host)
        server = remote_hosts.remote(url, token_env, token)
    else:
        server = hosts.server_command(_existing_vault(vault_path), profile, project)
    path = Path(config_path).expanduser().absolute() if config_path else hosts.default_path(host)
    remote = server if isinstance(server, remote_hosts.Remote) else None
    result: dict[str, Any] = {
        "host": host,
        "name": name,
        "config": str(path),
        "command": None if remote else server,
        "url": remote.url if remote else None,
        "token": remote_hosts.token_source(host, name, remote) if remote else None,
        "holds_secret": bool(remote and remote.holds_secret),
        "snippet": hosts.snippet(host, name, server),
        "written": False,
        "backup": None,
    }
    if write:
        done = hosts.install(host, name, server, path)
        result["written"] = done.changed
        result["backup"] = str(done.backup) if done.backup else None
    emit(result, as_json, lambda out: _render_connect(out, result, write))


def _render_connect(out: Any, result: dict[str, Any], write: bool) -> None:
    host, name, path = result["host"], result["name"], result["config"]
    if not write:
        out.print(f"Add this to {path}:\n", markup=False)
        click.echo(result["snippet"], nl=False)
        if host == "claude-code" and result["command"]:
            command = " ".join(_quoted(part) for part in result["command"])
            out.print(f"\nOr run: claude mcp add --scope user {name} -- {command}", markup=False)
    elif result["written"]:
        backup = f" (previous version saved as {result['backup']})" if result["backup"] else ""
        out.print(f"Added MCP server {name!r} to {path}{backup}.", markup=False)
    else:
        out.print(f"{path} already has this entry; nothing changed.", markup=False)
    if result["token"]:
        out.print(f"\n{result['token']['note']}", markup=False)
    if result["holds_secret"] and result["written"]:
        out.print(f"{path} now holds the token itself; it is readable by you only.", markup=False)
    if not write:
        out.print(f"\nOr run this command again with --write to merge it into {path}.",
                  markup=False)  # fmt: skip
    elif result["written"]:
        out.print(f"Restart {host} to pick it up.", markup=False)


@click.command()
@click.option(
    "--install",
    "install_dir",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Write DIR/SKILL.md, for example ~/.claude/skills/vault-memory.",
)
@click.option(
    "--tools",
    "profile",
    type=click.Choice(TOOL_PROFILES),
    default="core",
    show_default=True,
    help="Describe the tools of this profile (extended: a section on the tools it adds).",
)
@vault_options
def skill(install_dir: str | None, profile: str, vault_path: str | None, as_json: bool) -> None:
    """Print the agent skill file: when to search, what is worth remembering, how to write it.

    It covers good `is` glosses, snake_case predicates and what to do on a version
    conflict. With --install DIR it is written as DIR/SKILL.md (front matter: name and
    description), keeping a changed older copy as SKILL.md.bak.
    """
    from vault_tool.ops import skill as skill_file
    from vault_tool.server import extended

    more = [(e.name, e.description) for e in extended.EXTRAS] if profile == "extended" else []
    if not install_dir:
        if as_json:
            emit({"skill": skill_file.text(more)}, True, lambda out: None)
        else:
            click.echo(skill_file.text(more), nl=False)
        return
    path, changed = skill_file.install(Path(install_dir).expanduser().absolute(), more)
    result = {"path": str(path), "written": changed}

    def render(out: Any) -> None:
        verb = "Wrote" if changed else "Already up to date:"
        out.print(f"{verb} {path}", markup=False)

    emit(result, as_json, render)


def _existing_vault(vault_path: str | None) -> Path:
    """The vault folder, which must already exist (serving never creates one)."""
    from vault_tool.storage.config import find_vault, resolve_vault_path

    # The same test Store.open makes, without loading git: `serve` must answer fast.
    return find_vault(resolve_vault_path(vault_path))


def _quoted(part: str) -> str:
    import shlex

    return shlex.quote(part)


COMMANDS = [serve, connect, skill]


def _duration(text: str) -> float:
    from vault_tool.storage.config import sync_interval

    try:
        return sync_interval(text)
    except ValueError as problem:
        raise click.BadParameter(f"{text!r}: {problem}", param_hint="--sync-every") from None
