"""Which Host and Origin headers the HTTP server answers: the guard against DNS rebinding.

A pattern is an exact value (`vault.lan:8765`, `http://localhost:8765`) or a name with any
port (`localhost:*`, `http://localhost:*`). "Any port" means a port and nothing else: the
header must be the name, a colon and one to five digits. A prefix match would let
`localhost:1@evil.example` or `http://localhost:1.evil.example` through.
"""

from __future__ import annotations

import re

_PORT = re.compile(r"[0-9]{1,5}")


def allowed(value: str | None, patterns: list[str]) -> bool:
    """Whether a header value matches one of the patterns exactly (see the module doc)."""
    if not value:
        return False
    for pattern in patterns:
        if value == pattern:
            return True
        if pattern.endswith(":*"):
            base = pattern[:-1]
            port = value[len(base) :]
            if value.startswith(base) and _PORT.fullmatch(port) and int(port) <= 65535:
                return True
    return False


def refusal(
    host: str | None, origin: str | None, hosts: list[str], origins: list[str]
) -> tuple[int, str] | None:
    """The status and reason to refuse a request with, or None if its headers are allowed.

    A request without Origin comes from a program, not a web page: only Host decides then.
    """
    if not allowed(host, hosts):
        return 421, "Invalid Host header"
    if origin and not allowed(origin, origins):
        return 403, "Invalid Origin header"
    return None
