"""The only composer: Vault, with its writer, intake, history and ledger."""
