"""Setting a vault up: `init`."""

from __future__ import annotations

import click

from vault_tool.cli.output import emit, progress_callback, vault_options


@click.command()
@click.argument("path", required=False, type=click.Path(file_okay=False))
@click.option("--sample", is_flag=True, help="Fill the new vault with the bundled sample memories.")
@vault_options
def init(path: str | None, sample: bool, vault_path: str | None, as_json: bool) -> None:
    """Create a vault: a folder, a git repository and .vault/config.toml.

    PATH defaults to --vault, then $VAULT_TOOL_VAULT, then the current folder. With
    --sample the vault gets a small engineering team's memories, each in its own commit.
    Works without a global git identity (the vault then commits as vault-tool).
    """
    from vault_tool.engine.vault import Vault
    from vault_tool.ops.sample import create_sample_vault
    from vault_tool.storage.config import resolve_vault_path

    root = resolve_vault_path(path or vault_path)
    count = 0
    if sample:
        count = create_sample_vault(root, progress=progress_callback("Writing sample memories"))
    else:
        Vault.create(root)
    with Vault.open(root, catch_up=False) as vault:
        vault.catch_up(progress=progress_callback("Indexing"))
        head = vault.head()
    result = {"vault": str(root), "memories": count, "version_id": head}

    def render(out):  # type: ignore[no-untyped-def]
        out.print(
            f"Created vault at [bold]{root}[/bold]" + (f" with {count} memories" if sample else "")
        )
        out.print(f"Next: [bold]vault-tool log --vault {root}[/bold]")

    emit(result, as_json, render)


COMMANDS = [init]
