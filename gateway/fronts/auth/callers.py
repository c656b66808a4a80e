"""Who sent a request and which session it belongs to: the identity the HTTP auth middleware attached (the
OS user on stdio), a session key bound to that identity, and the per-user secrets the request carries."""

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.requests import Request

from gateway.session import ANONYMOUS, Identity

IDENTITY_SCOPE = "gateway.identity"
"""The ASGI scope key under which the auth middleware leaves the request's `Identity`."""


@dataclass(frozen=True, slots=True)
class Caller:
    key: str
    """Session key: the identity's key first, so one principal can never reach another's session state."""
    identity: Identity
    secrets: Mapping[str, str] = field(default_factory=dict[str, str], repr=False)
    """`${user:NAME}` values sent in this request's secret headers, by NAME."""
    roaming: bool = False
    """Keyed by the client's connection as the balancer forwarded it (2026 era): any replica may serve it. A
    connection that ends here (no balancer, or one not trusted) is this replica's alone: nothing to share."""


def _connection(request: Request, client_header: str | None) -> tuple[str, bool]:
    """A 2026-era request has no session id: its session is its connection. No two live connections share
    a peer address and port, so two clients (even of one identity) never share a session; a client that
    reconnects starts a new one (it sees the driver bootstrap again). Keying by IP would merge every local
    client into one. Behind a balancer the peer is the balancer's own connection, so the client's is read
    from `client_header` when the config trusts one (the balancer overwrites whatever the client sent).
    Returns the key and whether it was forwarded."""
    forwarded = request.headers.get(client_header) if client_header is not None else None
    if forwarded:
        return f"conn-{forwarded.strip()[:128]}", True
    if request.client is None:  # no peer address (e.g. a Unix socket): a session of its own per request
        return f"request-{uuid.uuid4().hex}", False
    return f"conn-{request.client.host}:{request.client.port}", False


def _handshake_era(request: Request) -> bool:
    """Whether the request belongs to the handshake era, decided from its version header as the SDK's session
    manager routes it. A 2026-era request has no session: the 2026-07-28 transport says to ignore an
    `Mcp-Session-Id` it carries, so it never joins (and uses up) the 2025-era session that id names, nor
    one a `session_id` query names."""
    version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER)
    return version is None or version in HANDSHAKE_PROTOCOL_VERSIONS


class Callers:
    def __init__(
        self, local: Identity, *, secret_header_prefix: str | None = None, client_header: str | None = None
    ) -> None:
        self.local = Caller("stdio", local)
        self._prefix = None if secret_header_prefix is None else secret_header_prefix.lower()
        self._client_header = client_header

    def of(self, request: Request | None) -> Caller:
        """The caller of an SDK handler or lane request; `None` (no HTTP request) is the stdio front's user."""
        if request is None:
            return self.local
        identity = request.scope.get(IDENTITY_SCOPE, ANONYMOUS)
        sid = None
        if _handshake_era(request):
            sid = request.headers.get("mcp-session-id")
            if not sid and request.scope.get("query_string"):  # legacy SSE posts carry it in the query
                sid = request.query_params.get("session_id")
        if sid:
            return Caller(f"{identity.key}|{sid}", identity, self._secrets(request))
        connection, forwarded = _connection(request, self._client_header)
        return Caller(f"{identity.key}|{connection}", identity, self._secrets(request), roaming=forwarded)

    def _secrets(self, request: Request) -> Mapping[str, str]:
        if self._prefix is None:
            return {}
        prefix, n = self._prefix.encode("latin-1"), len(self._prefix)
        found = {}
        for key, value in request.scope["headers"]:
            if key.startswith(prefix) and len(key) > n:
                found[key[n:].decode("latin-1").upper().replace("-", "_")] = value.decode("latin-1")
        return found
