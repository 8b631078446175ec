"""Benchmarks of vault_tool: speed, start-up and retrieval quality on generated vaults.

Each module runs from the repository root as `python -m bench.NAME`; README.md lists them.
They import vault_tool and one another, never the tests.
"""
