"""The operator surface: `vault-tool` and its commands. No business logic lives here."""
