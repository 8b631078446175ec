"""Operator verbs over many files, written against Vault only."""
