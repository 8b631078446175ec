"""vault_tool: a memory vault for AI agents, kept as Markdown files in a git repository."""

__version__ = "0.1.0"
