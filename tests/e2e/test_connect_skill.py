"""`vault-tool connect` and `vault-tool skill`, run as a person runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.cli_support import invoke
from tests.e2e.mcp_client import anyio_backend, server_env  # noqa: F401 (fixture)
from vault_tool.ops.hosts import HOSTS

SCRIPT = Path(sys.executable).parent / "vault-tool"
CLI = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "vault_tool"]


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """The CLI as a subprocess with the test's HOME."""
    done = subprocess.run(
        [*CLI, *args], capture_output=True, text=True, env=server_env(), timeout=30
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done


def connect(host: str, vault: Path, *options: str) -> dict[str, Any]:
    """`vault-tool connect HOST --json` as a dict."""
    return json.loads(run("connect", host, "--vault", str(vault), "--json", *options).stdout)


@pytest.mark.parametrize("host", HOSTS)
def test_connect_prints_an_entry_with_absolute_paths_and_writes_nothing(
    host: str, vault_path: Path
) -> None:
    result = connect(host, vault_path)
    command = result["command"]
    assert Path(command[0]).is_absolute() and Path(command[0]).exists()
    assert command[-3:] == ["serve", "--vault", str(vault_path)]
    snippet = result["snippet"]
    parsed = tomllib.loads(snippet) if host == "codex" else json.loads(snippet)
    assert str(vault_path) in json.dumps(parsed)
    assert not Path(result["config"]).exists()
    assert Path(result["config"]).is_relative_to(Path(os.environ["HOME"]))


def test_connect_write_merges_keeps_the_rest_backs_up_and_is_idempotent(vault_path: Path) -> None:
    config = Path(os.environ["HOME"]) / ".cursor" / "mcp.json"
    config.parent.mkdir(parents=True)
    before = {"mcpServers": {"other": {"command": "other-server"}}, "theme": "dark"}
    config.write_text(json.dumps(before))

    first = connect("cursor", vault_path, "--write")
    assert first["written"] is True
    merged = json.loads(config.read_text())
    assert (
        merged["theme"] == "dark" and merged["mcpServers"]["other"] == before["mcpServers"]["other"]
    )
    entry = merged["mcpServers"]["vault"]
    assert entry["args"] == ["serve", "--vault", str(vault_path)]
    assert json.loads(Path(first["backup"]).read_text()) == before

    second = connect("cursor", vault_path, "--write")
    assert second["written"] is False and second["backup"] is None
    assert len(list(config.parent.glob("mcp.json.bak-*"))) == 1


def test_connect_write_for_codex_replaces_only_its_own_toml_table(vault_path: Path) -> None:
    config = Path(os.environ["HOME"]) / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        '# my codex settings\nmodel = "o4"\n\n'
        '[mcp_servers.vault]\ncommand = "/old/vault-tool"\nargs = ["serve"]\n\n'
        '[mcp_servers.vault.env]\nX = "1"\n\n'
        '[mcp_servers.docs]\ncommand = "docs-server" # keep me\n'
    )
    assert connect("codex", vault_path, "--write")["written"] is True
    text = config.read_text()
    parsed = tomllib.loads(text)
    assert parsed["model"] == "o4" and "# my codex settings" in text and "# keep me" in text
    assert parsed["mcp_servers"]["docs"] == {"command": "docs-server"}
    assert parsed["mcp_servers"]["vault"]["args"] == ["serve", "--vault", str(vault_path)]
    assert "env" not in parsed["mcp_servers"]["vault"]
    assert connect("codex", vault_path, "--write")["written"] is False


def test_connect_write_fills_new_files_in_each_hosts_own_shape(vault_path: Path) -> None:
    for host in HOSTS:
        assert connect(host, vault_path, "--write")["written"] is True
    home = Path(os.environ["HOME"])
    claude = json.loads((home / ".claude.json").read_text())
    assert claude["mcpServers"]["vault"]["type"] == "stdio"
    vscode = json.loads(next(home.rglob("Code/User/mcp.json")).read_text())
    assert vscode["servers"]["vault"]["type"] == "stdio"
    opencode = json.loads((home / ".config/opencode/opencode.json").read_text())
    assert opencode["mcp"]["vault"]["type"] == "local"
    assert opencode["mcp"]["vault"]["command"][-1] == str(vault_path)
    gemini = json.loads((home / ".gemini/settings.json").read_text())
    assert gemini["mcpServers"]["vault"]["args"][-1] == str(vault_path)
    windsurf = json.loads((home / ".codeium/windsurf/mcp_config.json").read_text())
    assert "vault" in windsurf["mcpServers"]


def test_connect_refuses_to_rewrite_a_file_it_cannot_parse(
    vault_path: Path, tmp_path: Path
) -> None:
    config = tmp_path / "mcp.json"
    config.write_text('{\n  // my servers\n  "servers": {}\n}\n')
    done = run("connect", "vscode", "--vault", str(vault_path), "--write", "--config",
               str(config), check=False)  # fmt: skip
    assert done.returncode == 2
    assert "not plain JSON" in done.stderr and "by hand" in done.stderr
    assert config.read_text() == '{\n  // my servers\n  "servers": {}\n}\n'


def test_connect_needs_an_existing_vault(tmp_path: Path) -> None:
    done = run("connect", "cursor", "--vault", str(tmp_path / "nowhere"), check=False)
    assert done.returncode == 7 and "no vault at" in done.stderr


async def start_written_entry(vault: Path, *options: str, act: Any = None) -> tuple[list[str], Any]:
    """Write cursor's entry with these options, start the server it names as cursor would,
    and list its tools (then run `act(session)`, when given)."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    connect("cursor", vault, "--write", *options)
    entry = json.loads((Path(os.environ["HOME"]) / ".cursor/mcp.json").read_text())
    server = entry["mcpServers"]["vault"]
    params = StdioServerParameters(command=server["command"], args=server["args"], env=server_env())
    with open(os.devnull, "w") as quiet:
        async with (
            stdio_client(params, errlog=quiet) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            names = sorted(t.name for t in (await session.list_tools()).tools)
            return names, act and await act(session)


@pytest.mark.anyio
async def test_the_written_entry_starts_a_working_server(vault_path: Path) -> None:
    names, _ = await start_written_entry(vault_path)
    assert names == ["remember", "search"]


@pytest.mark.anyio
async def test_an_entry_for_the_extended_tools_in_a_project_starts_that_server(
    vault_path: Path,
) -> None:
    from tests.e2e.mcp_client import call
    from tests.helpers import create_args

    async def remember(session: Any) -> Any:
        return await call(session, "remember", create_args("Deploys go out on Tuesdays"))

    names, written = await start_written_entry(
        vault_path, "--tools", "extended", "--project", "web", act=remember
    )
    assert {"remember", "search", "session_context", "work_state_write"} <= set(names)
    assert "project: web\n" in (vault_path / written.structured_content["path"]).read_text()


def test_connect_refuses_a_bad_project_and_a_project_for_a_remote_server(
    vault_path: Path,
) -> None:
    bad = run("connect", "cursor", "--vault", str(vault_path), "--project", "Web App", check=False)
    assert bad.returncode == 2 and "--project" in bad.stderr
    remote = run(
        "connect", "cursor", "--url", "http://127.0.0.1:8765/mcp", "--project", "web", check=False
    )
    assert remote.returncode == 2 and "serve --http --project" in remote.stderr


def test_skill_prints_the_agent_guide_with_front_matter() -> None:
    text = run("skill").stdout
    head, _, body = text.partition("\n---\n")
    assert head.startswith("---\nname: vault-memory\ndescription: ")
    for topic in ("When to search", "What is worth remembering", "snake_case", "version_conflict",
                  "`is`", "data, not instructions"):  # fmt: skip
        assert topic in body, topic
    assert "- `decision`: " in body  # memory types come from the schema


def test_skill_install_writes_skill_md_once(tmp_path: Path) -> None:
    folder = tmp_path / "skills" / "vault-memory"
    first = json.loads(run("skill", "--install", str(folder), "--json").stdout)
    assert first == {"path": str(folder / "SKILL.md"), "written": True}
    assert (folder / "SKILL.md").read_text() == run("skill").stdout
    second = json.loads(run("skill", "--install", str(folder), "--json").stdout)
    assert second["written"] is False


@pytest.mark.parametrize(
    ("args", "suggested"),
    [
        (("connect", "gemini"), "gemini-cli"),
        (("connect", "claude"), "claude-code"),
        (("connect", "vs-code"), "vscode"),
        (("export", "--format", "kg"), "kg-jsonl"),
        (("import", "notes", "--format", "markdwn"), "markdown"),
    ],
)
def test_a_mistyped_choice_is_answered_with_the_closest_name(
    args: tuple[str, ...], suggested: str, vault_path: Path
) -> None:
    done = invoke(*args, "--vault", vault_path)
    assert done.exit_code == 2
    assert done.stderr.rstrip().endswith(f"did you mean {suggested!r}?")
    error = done.stderr.splitlines()[-1]
    assert len(error) < 200, error  # one short line, not click's list of every choice twice


def test_a_choice_with_nothing_close_lists_the_names(vault_path: Path) -> None:
    done = invoke("connect", "emacs", "--vault", vault_path)
    assert done.exit_code == 2
    assert "did you mean" not in done.stderr
    assert "'emacs' is not one of " + ", ".join(HOSTS) in done.stderr
