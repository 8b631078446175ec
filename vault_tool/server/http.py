"""`vault-tool serve --http`: the same Server over Streamable HTTP, behind a guard.

The guard checks every request in this order, each with its own HTTP status: Host (421)
and Origin (403) by exact match (origins.py; the SDK's own check, which matches ports by
prefix, stays only as a second line behind ours), then the rate limit (429 with
Retry-After), then the bearer token (401 with WWW-Authenticate). A token is required for
any bind that is not loopback, and honoured on loopback when one is set. Read-only tokens
see and may call the tools that only read; a tool beyond a token's scope, or a project
beyond its list, comes back as an isError result (code `forbidden`) so the agent reads why
(access.py). Tokens made with `vault-tool token create` (tokens.py) are read at start, each
with its own rate limit. Refusals go to the audit log.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import math
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vault_tool.core.access import ADMIN, READ, Access
from vault_tool.errors import InvalidInput
from vault_tool.server import origins
from vault_tool.server.runtime import Runtime

MIN_TOKEN_LENGTH = 16
LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "[::1]", "127.0.0.1:*", "localhost:*", "[::1]:*"]
LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
GRACEFUL_SHUTDOWN_SECONDS = 1


@dataclass(frozen=True)
class Grant:
    """What a presented token may do (its label, never the secret, goes to the audit log),
    and its own rate limit (None: --rate-limit's)."""

    access: Access
    rate_per_minute: int | None = None


@dataclass(frozen=True)
class HttpSettings:
    """Everything `serve --http` was asked for, checked by `settings()`."""

    host: str
    port: int
    tokens: dict[str, Grant]  # the SHA-256 of each secret, in hex -> what it grants
    rate_per_minute: int
    allowed_hosts: list[str]
    allowed_origins: list[str]
    path: str = "/mcp"


def settings(
    host: str,
    port: int,
    *,
    token: str | None,
    read_only_tokens: list[str],
    rate_per_minute: int,
    allow_hosts: list[str],
    allow_origins: list[str],
    stored: list[Any] | None = None,
) -> HttpSettings:
    """Check the options and refuse an unsafe set-up before anything listens; stored: the
    tokens of `vault-tool token create` (storage/tokens.py)."""
    tokens: dict[str, Grant] = {
        t.sha256: Grant(t.access(), t.rate_per_minute) for t in stored or ()
    }
    if token:
        tokens[_digest(_checked(token, "--token"))] = Grant(Access(_label("full", token), ADMIN))
    for secret in read_only_tokens:
        checked = _checked(secret, "--read-only-token")
        tokens[_digest(checked)] = Grant(Access(_label("read-only", secret), READ))
    loopback = is_loopback(host)
    if not loopback and not tokens:
        raise InvalidInput(
            f"--host: {host} is reachable from other machines, and no token is set",
            hint="make a token with `vault-tool token create NAME`, or pass --token (or set "
            "VAULT_TOOL_TOKEN) to a long random secret",
            field="host",
        )
    hosts = [*LOOPBACK_HOSTS, *allow_hosts]
    if not loopback:
        if _is_wildcard(host):
            if not allow_hosts:
                raise InvalidInput(
                    f"--host: {host} listens on every interface, so the Host header clients "
                    "will send is unknown",
                    hint="add --allow-host NAME:PORT for each name clients use "
                    "(for example --allow-host vault.lan:8765)",
                    field="host",
                )
        else:
            shown = f"[{host}]" if ":" in host else host
            hosts += [shown, f"{shown}:*"]
    if rate_per_minute < 0:
        raise InvalidInput("--rate-limit: must be 0 (off) or more", hint="for example 120")
    return HttpSettings(
        host=host,
        port=port,
        tokens=tokens,
        rate_per_minute=rate_per_minute,
        allowed_hosts=hosts,
        allowed_origins=[*LOOPBACK_ORIGINS, *allow_origins],
    )


def is_loopback(host: str) -> bool:
    """Whether host only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve_http(
    root: Path,
    config: HttpSettings,
    sync_every: float | None = None,
    profile: str = "core",
    project: str | None = None,
) -> None:
    """Serve the vault over Streamable HTTP until SIGTERM or Ctrl-C."""
    stop = threading.Event()
    # uvicorn handles SIGTERM/SIGINT while it serves, then re-raises the signal once it has
    # stopped; noting it here (instead of the default, which kills) lets the vault close.
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda *_: stop.set())
    listener = _listen(config.host, config.port)
    runtime = Runtime(root, "http", sync_every, profile, project)
    runtime.open()
    # The first remember's checks compiled, and common words scored, as it starts listening.
    threading.Thread(target=runtime.warm, name="warm-up", daemon=True).start()
    try:
        import anyio

        anyio.run(_serve, runtime, config, listener, stop)
    finally:
        runtime.shutdown()
        listener.close()


async def _serve(
    runtime: Runtime, config: HttpSettings, listener: socket.socket, stop: threading.Event
) -> None:
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    from vault_tool.server.app import build_server

    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=config.allowed_hosts,
        allowed_origins=config.allowed_origins,
    )
    server = build_server(runtime)
    app = server.streamable_http_app(
        streamable_http_path=config.path, transport_security=security, host=config.host
    )
    guarded = Guard(app, config, runtime)
    port = listener.getsockname()[1]
    shown = f"[{config.host}]" if ":" in config.host else config.host
    access = "bearer token required" if config.tokens else "loopback only, no token"
    print(
        f"vault-tool: serving {runtime.root} at http://{shown}:{port}{config.path} ({access}); "
        f"logs in {runtime.root / '.vault' / 'run'}",
        file=sys.stderr,
        flush=True,
    )
    uvicorn_config = uvicorn.Config(
        guarded,
        log_config=None,
        access_log=False,
        server_header=False,
        lifespan="on",
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
    )
    if stop.is_set():
        return  # asked to stop while starting
    await uvicorn.Server(uvicorn_config).serve(sockets=[listener])


@dataclass
class RateLimiter:
    """A token bucket per caller: `rate` requests a minute, bursting up to `rate`."""

    rate: int
    _buckets: dict[str, tuple[float, float]] = field(default_factory=dict)

    def wait(self, key: str, rate: int | None = None) -> float:
        """0 if key may proceed now (and count it), else the seconds until it may; rate: the
        key's own requests a minute, if it has one."""
        rate = self.rate if rate is None else rate
        if rate <= 0:
            return 0.0
        now = time.monotonic()
        per_second = rate / 60
        level, then = self._buckets.get(key, (float(rate), now))
        level = min(float(rate), level + (now - then) * per_second)
        if level < 1:
            self._buckets[key] = (level, now)
            return (1 - level) / per_second
        self._buckets[key] = (level - 1, now)
        if len(self._buckets) > 10_000:
            self._forget_idle(now, per_second)
        return 0.0

    def _forget_idle(self, now: float, per_second: float) -> None:
        # A caller whose bucket has refilled looks exactly like a new one: drop it.
        full = [
            k for k, (lvl, t) in self._buckets.items() if lvl + (now - t) * per_second >= self.rate
        ]
        for key in full:
            del self._buckets[key]


class Guard:
    """ASGI middleware in front of the SDK's app: Host, Origin, rate limit, bearer token."""

    def __init__(self, app: Any, config: HttpSettings, runtime: Runtime) -> None:
        self.app = app
        self.config = config
        self.limiter = RateLimiter(config.rate_per_minute)
        self.runtime = runtime
        self._digests = [(bytes.fromhex(sha), grant) for sha, grant in config.tokens.items()]

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
        from mcp.server.auth.provider import AccessToken
        from starlette.requests import Request

        request = Request(scope)
        remote = request.client.host if request.client else "unknown"
        refused = origins.refusal(
            request.headers.get("host"),
            request.headers.get("origin"),
            self.config.allowed_hosts,
            self.config.allowed_origins,
        )
        if refused is not None:
            status, reason = refused
            self._audit_refusal(status, reason, remote, None)
            await _refusal(status, reason, {})(scope, receive, send)
            return
        grant = self._grant(request.headers.get("authorization"))
        key = (grant.access.label or "local") if grant else f"anonymous@{remote}"
        wait = self.limiter.wait(key, grant.rate_per_minute if grant else None)
        if wait > 0:
            self._audit_refusal(429, "rate limit", remote, grant)
            await _refusal(429, "rate limit exceeded", {"Retry-After": str(math.ceil(wait))})(
                scope, receive, send
            )
            return
        if grant is None:
            presented = request.headers.get("authorization") is not None
            reason = "wrong token" if presented else "missing token"
            self._audit_refusal(401, reason, remote, None)
            challenge = 'Bearer realm="vault-tool"'
            if presented:
                challenge += ', error="invalid_token"'
            await _refusal(401, f"{reason}: send Authorization: Bearer <token>", {
                "WWW-Authenticate": challenge
            })(scope, receive, send)  # fmt: skip
            return
        # The SDK binds each session to this identity: another token cannot use it.
        label = grant.access.label or "local"
        scope["user"] = AuthenticatedUser(
            AccessToken(token=label, client_id=label, scopes=grant.access.wire())
        )
        await self.app(scope, receive, send)

    def _grant(self, header: str | None) -> Grant | None:
        if not self._digests:
            return Grant(Access("local", ADMIN))
        if not header or header[:7].lower() != "bearer ":
            return None
        presented = hashlib.sha256(header[7:].strip().encode()).digest()
        found = None
        for digest, grant in self._digests:
            # Compare against every token, in constant time, whatever matched before.
            if hmac.compare_digest(presented, digest):
                found = grant
        return found

    def _audit_refusal(self, status: int, reason: str, remote: str, grant: Grant | None) -> None:
        self.runtime.audit.record(
            transport="http",
            refused=status,
            reason=reason,
            remote=remote,
            token=grant.access.label if grant else None,
        )


def _refusal(status: int, message: str, headers: dict[str, str]) -> Any:
    from starlette.responses import Response

    body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": message}}
    return Response(
        json.dumps(body), status_code=status, headers=headers, media_type="application/json"
    )


def _listen(host: str, port: int) -> socket.socket:
    """Bind before serving, so a taken port is a clear error instead of a line in a log."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as problem:
        listener.close()
        raise InvalidInput(
            f"--port: cannot listen on {host}:{port} ({problem.strerror})",
            hint="pick another --port, or stop the process that uses it",
            field="port",
        ) from None
    listener.listen(128)
    listener.set_inheritable(False)
    return listener


def _checked(token: str, option: str) -> str:
    token = token.strip()
    if len(token) < MIN_TOKEN_LENGTH:
        raise InvalidInput(
            f"{option}: too short ({len(token)} characters, at least {MIN_TOKEN_LENGTH})",
            hint="use a long random secret, for example from "
            "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`",
            field=option.lstrip("-"),
        )
    return token


def _label(kind: str, secret: str) -> str:
    return f"{kind}:{_digest(secret)[:8]}"


def _digest(secret: str) -> str:
    """The form tokens are compared (and stored) in: SHA-256, hex."""
    return hashlib.sha256(secret.encode()).hexdigest()


def _is_wildcard(host: str) -> bool:
    return host in ("", "0.0.0.0", "::")
