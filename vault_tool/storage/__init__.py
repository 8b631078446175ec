"""The folder and git: finding the vault, running git, the commit protocol, the store."""
