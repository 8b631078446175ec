"""`vault-tool token create|list|revoke`: the bearer tokens of `serve --http`."""

from __future__ import annotations

from typing import Any

import click

from vault_tool.cli.output import emit, shown_in_markup, vault_options
from vault_tool.core.access import SCOPES


@click.group()
def token() -> None:
    """Bearer tokens for `serve --http`: each with a scope, projects and a rate limit,
    stored hashed in .git/vault-tool/tokens.json (never committed). A running server reads
    them when it starts: restart it after a change. docs/mcp.md"""


@token.command("create")
@click.argument("name")
@click.option(
    "--scope",
    type=click.Choice(SCOPES),
    default="read",
    show_default=True,
    help="read: the reading tools; write: also remember, add_rule, work_state_write; "
    "admin: also dismiss, restore_dismissed, confirm_rule.",
)
@click.option(
    "--project",
    "projects",
    multiple=True,
    metavar="NAME",
    help="Limit the token to this project (repeatable; the first is its default).",
)
@click.option(
    "--rate-limit",
    type=click.IntRange(min=1),
    default=60,
    show_default=True,
    help="Requests a minute; more get 429 with Retry-After.",
)
@vault_options
def create_token(
    name: str,
    scope: str,
    projects: tuple[str, ...],
    rate_limit: int,
    vault_path: str | None,
    as_json: bool,
) -> None:
    """Make token NAME and print its secret: it is shown this once (only its hash is kept)."""
    from vault_tool.storage import tokens

    made, secret = tokens.create(_root(vault_path), name, scope, projects, rate_limit)
    result = {**made.shown(), "secret": secret}

    def render(out: Any) -> None:
        out.print(f"Token {shown_in_markup(name)} ({scope}); its secret, shown only now:")
        out.print(secret, markup=False, highlight=False)
        out.print("[dim]Send it as `Authorization: Bearer <secret>`; restart `serve --http`.[/dim]")

    emit(result, as_json, render)


@token.command("list")
@vault_options
def list_tokens(vault_path: str | None, as_json: bool) -> None:
    """The tokens, with scope, projects and rate limit (never their secrets)."""
    from vault_tool.storage import tokens

    found = [t.shown() for t in tokens.load(_root(vault_path))]

    def render(out: Any) -> None:
        if not found:
            out.print("No tokens (vault-tool token create NAME).")
        for t in found:
            where = ", ".join(t["projects"]) or "every project"
            about = f"{t['scope']} · {where} · {t['rate_per_minute']}/min · made {t['created']}"
            out.print(f"{shown_in_markup(t['name'])}  [dim]{shown_in_markup(about)}[/dim]")

    emit(found, as_json, render)


@token.command("revoke")
@click.argument("name")
@vault_options
def revoke_token(name: str, vault_path: str | None, as_json: bool) -> None:
    """Remove token NAME (a running server refuses it once restarted)."""
    from vault_tool.storage import tokens

    gone = tokens.revoke(_root(vault_path), name).shown()
    emit(gone, as_json, lambda out: out.print(f"Revoked {shown_in_markup(name)}"))


def _root(vault_path: str | None) -> Any:
    from vault_tool.storage.config import find_vault, resolve_vault_path

    return find_vault(resolve_vault_path(vault_path))


COMMANDS = [token]
