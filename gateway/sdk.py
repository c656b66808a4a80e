"""The one module that reaches into the mcp SDK's private names, and the vocabulary every module shares.

The gateway's lanes and transports need a few things the SDK keeps private: its transport and stream
protocols, its HTTP client factory and origin checks, its trace-context helpers, and the per-era
envelope a client session stamps on each request (and the capabilities it declares there). Everything
else imports them from here, so an SDK upgrade that moves or changes one fails in this file and in
`tests/test_sdk.py`, not in eight places. The names are re-exported unchanged; the envelope stamp
is wrapped so its in-place contract is written down once.

The shared vocabulary (`ProgressFn`, `JsonObject`, `CallTool`, `RequestCtx`) lives here too: aliases of the SDK's
types and protocols every module may import, from a leaf that imports only the SDK.
"""

import math
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import mcp.types as types
from mcp.client._transport import Transport, TransportStreams
from mcp.client.session import ClientSession
from mcp.server import ServerRequestContext
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, authorization_context
from mcp.server.connection import Connection
from mcp.server.session import ServerSession
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared._compat import resync_tracer
from mcp.shared._context_streams import ContextReceiveStream, ContextSendStream, create_context_streams
from mcp.shared._httpx_utils import create_mcp_http_client, redirect_note, request_within_origin, sse_within_origin
from mcp.shared._otel import extract_trace_context
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.inbound import MCP_NAME_HEADER, encode_header_value
from mcp_types import CLIENT_CAPABILITIES_META_KEY, LOG_LEVEL_META_KEY

__all__ = [
    "Connection",
    "ContextReceiveStream",
    "ContextSendStream",
    "PipeStamp",
    "ReadStream",
    "Transport",
    "TransportStreams",
    "WriteStream",
    "absorb_tools",
    "connection_of",
    "create_context_streams",
    "create_mcp_http_client",
    "extract_trace_context",
    "http_session",
    "http_session_in_flight",
    "offer_per_request",
    "redirect_note",
    "request_within_origin",
    "resync_tracer",
    "send_declaring",
    "send_unvalidated",
    "sse_within_origin",
    "stamp_envelope",
]


ProgressFn = ProgressFnT
"""Relays a downstream's progress (progress, total, message) to the client that asked for it."""

JsonObject = dict[str, Any]
"""A JSON object as parsed: tool arguments, params, structured content."""

CallTool = Callable[[str, JsonObject], Awaitable[types.CallToolResult]]
"""Calls a catalog tool by its exposed name through the gateway (hosted tools and version sources use it)."""

RequestCtx = ServerRequestContext[Any]
"""What an SDK request handler receives (the session, the request's meta, the HTTP request if any)."""


OFFER_META_KEY = "gateway/offer"
"""Private `_meta` key of an outgoing 2026-era request: the `sampling`, `elicitation` and `roots` client
capabilities it declares (the calling client's; keys absent are not declared). `offer_per_request`'s stamp takes
it out before the request leaves, so it travels with the request instead of beside it."""
ASKABLE = ("sampling", "elicitation", "roots")


def offer_per_request(session: ClientSession) -> None:
    """Make `session`'s 2026-era requests declare, in place of the session's own `sampling`, `elicitation` and
    `roots` capabilities, those their `_meta` carries under `OFFER_META_KEY` (the envelope carries capabilities
    per request; the SDK stamps the session's). Call once the session is connected: its stamp is chosen by the
    handshake."""
    stamp = session._stamp

    def stamped(data: dict[str, Any], opts: Any) -> None:
        params = data.get("params") or {}
        meta = params.get("_meta")
        offered = meta.pop(OFFER_META_KEY, None) if isinstance(meta, dict) else None
        if isinstance(meta, dict) and not meta:
            del params["_meta"]
        stamp(data, opts)
        _narrow((data.get("params") or {}).get("_meta"), offered)

    session._stamp = stamped


def _narrow(meta: dict[str, Any] | None, offered: dict[str, Any] | None) -> None:
    """The capabilities `meta` declares, with the askable ones those `offered` (None: not narrowed)."""
    if offered is None or meta is None or CLIENT_CAPABILITIES_META_KEY not in meta:
        return  # not narrowed, or the handshake era (declared once, at initialize)
    own = {k: v for k, v in meta[CLIENT_CAPABILITIES_META_KEY].items() if k not in ASKABLE}
    meta[CLIENT_CAPABILITIES_META_KEY] = {**own, **offered}


class PipeStamp:
    """`stamp_envelope` for requests that travel a pipe (the stdio lane): the envelope the session's stamp writes,
    taken from it once per stamp (a handshake makes a new one), and none of the HTTP headers the SDK's stamp works
    out on every request (`Mcp-Name`, a tool's parameter headers), which a pipe never carries. The 2026 era's
    keys are set as the SDK sets them: the log level a default the request's own overrides, the rest written."""

    def __init__(self, session: ClientSession) -> None:
        self._session = session
        self._of: object = None
        self._envelope: dict[str, Any] = {}
        self._default: dict[str, Any] = {}
        self._offer: tuple[dict[str, Any], dict[str, Any]] | None = None
        """The last offer narrowed and the capabilities it gave: a client's calls offer the same (shared, read only)."""

    def __call__(self, params: dict[str, Any]) -> None:
        stamp = self._session._stamp
        if stamp is not self._of:
            probe: dict[str, Any] = {"method": "ping", "params": {}}
            stamp(probe, {})
            envelope = probe["params"].get("_meta") or {}
            self._default = {k: v for k, v in envelope.items() if k == LOG_LEVEL_META_KEY}
            self._envelope = {k: v for k, v in envelope.items() if k != LOG_LEVEL_META_KEY}
            self._of, self._offer = stamp, None
        meta = params.get("_meta")
        offered = meta.pop(OFFER_META_KEY, None) if isinstance(meta, dict) else None
        if not self._envelope:  # the handshake era: nothing per request
            if isinstance(meta, dict) and not meta:
                del params["_meta"]
            return
        meta = params["_meta"] = {**self._default, **(meta or {}), **self._envelope}
        if offered is not None and CLIENT_CAPABILITIES_META_KEY in meta:
            if self._offer is None or self._offer[0] != offered:
                narrowed = {CLIENT_CAPABILITIES_META_KEY: meta[CLIENT_CAPABILITIES_META_KEY]}
                _narrow(narrowed, offered)
                self._offer = (offered, narrowed[CLIENT_CAPABILITIES_META_KEY])
            meta[CLIENT_CAPABILITIES_META_KEY] = self._offer[1]


def stamp_envelope(session: ClientSession, message: dict[str, Any]) -> dict[str, Any]:
    """Add what the session's negotiated era requires to an outgoing request, as the SDK itself would.

    `message` is `{"method": ..., "params": {...}}`; the SDK's `_stamp` mutates `message["params"]` in
    place (in the 2026-07-28 era it adds `_meta` with the protocol version, client info and
    capabilities; in the handshake era nothing). Returns the (same) params for convenience.
    """
    session._stamp(message, {})
    params: dict[str, Any] = message["params"]
    return params


def http_session(
    manager: StreamableHTTPSessionManager, session_id: str, user: Any
) -> StreamableHTTPServerTransport | None:
    """The live handshake-era session `session_id` if the request's principal may use it, else None.

    The same decision the manager makes before it hands a request to a session (`_handle_stateful_request`):
    the session is known and not terminated or expiring, and `user` (the ASGI scope's "user") is the
    principal that opened it (both None without authentication). On None the caller lets the SDK answer
    (404 for an unknown session or another principal's, as if it did not exist).
    """
    transport = manager._server_instances.get(session_id)
    if transport is None or transport.is_terminated:
        return None
    if transport.idle_scope is not None and transport.idle_scope.cancel_called:
        return None
    requestor = authorization_context(user) if isinstance(user, AuthenticatedUser) else None
    if requestor != manager._session_owners.get(session_id):
        return None
    return transport


@contextmanager
def http_session_in_flight(transport: StreamableHTTPServerTransport) -> Iterator[None]:
    """Hold the session as a request in flight does (`StreamableHTTPServerTransport.handle_request`): its idle
    countdown is suspended, and restarts when the last request in flight ends."""
    scope, timeout = transport.idle_scope, transport._idle_timeout
    if scope is None or timeout is None:
        yield
        return
    transport._requests_in_flight += 1
    scope.deadline = math.inf
    try:
        yield
    finally:
        transport._requests_in_flight -= 1
        if not transport._requests_in_flight:
            scope.deadline = anyio.current_time() + timeout


def connection_of(session: ServerSession) -> Connection:
    """The connection a handler's `ctx.session` is a per-request view of: it lives exactly as long as the client's
    connection (a handshake-era HTTP session ends with DELETE or expiry), so per-session state can follow it."""
    return session._connection


async def send_unvalidated(session: ClientSession, request: Any, *, timeout_s: float) -> dict[str, Any]:
    """`session.send_request` (same envelope stamp, same dispatcher) but the raw result, not checked against the
    spec: the SDK validates a whole listing page at once, so one tool without an `inputSchema` would fail every
    tool of its server; the caller reads the entries one by one instead.

    Raises:
        MCPError: error response, read timeout, or connection closed (as `send_request`).
    """
    return await _send_raw(session, request.model_dump(by_alias=True, mode="json", exclude_none=True), timeout_s)


async def send_declaring(
    session: ClientSession, method: str, params: dict[str, Any], *, extension: str, timeout_s: float, name: str | None
) -> dict[str, Any]:
    """A raw 2026-era request (as `send_unvalidated`) whose envelope also declares the client `extension`, with
    `Mcp-Name: name` when given (the tasks extension requires it on `tasks/*` over HTTP).

    Raises:
        MCPError: error response, read timeout, or connection closed (as `send_request`).
    """

    def declaring(data: dict[str, Any], opts: Any) -> None:
        declared = data["params"].get("_meta", {}).get(CLIENT_CAPABILITIES_META_KEY)
        if isinstance(declared, dict):
            declared["extensions"] = {**declared.get("extensions", {}), extension: {}}
        if name is not None:
            opts.setdefault("headers", {})[MCP_NAME_HEADER] = encode_header_value(name)

    return await _send_raw(session, {"method": method, "params": params}, timeout_s, declaring)


async def _send_raw(
    session: ClientSession,
    data: dict[str, Any],
    timeout_s: float,
    amend: Callable[[dict[str, Any], Any], None] | None = None,
) -> dict[str, Any]:
    """Send a request dict as `send_request` does (the session's envelope stamp, its dispatcher), `amend`ed after
    the stamp; the raw result."""
    opts: Any = {}
    session._stamp(data, opts)
    if amend is not None:
        amend(data, opts)
    opts["timeout"] = timeout_s
    raw = await session._dispatcher.send_raw_request(data["method"], data.get("params"), opts)
    return dict(raw)


def absorb_tools(session: ClientSession, tools: list[types.Tool]) -> list[types.Tool]:
    """`tools` (a server's whole listing) as the SDK's own `list_tools` keeps them on a 2026-era session: a tool whose
    `x-mcp-header` annotations are invalid is left out (the spec's MUST), and each kept tool's annotated arguments
    are mirrored into `Mcp-Param-*` headers on its calls. The gateway reads listings raw, entry by entry
    (`send_unvalidated`), so the SDK never saw them. A handshake-era session keeps them all and mirrors nothing."""
    listing = types.ListToolsResult(tools=list(tools))
    session._absorb_tool_listing(listing, complete=True)
    return listing.tools


PATCHED = ((StreamableHTTPServerTransport, "_terminate_unanswered_request"),)
"""Every SDK attribute the gateway replaces process-wide (`unanswered_cancels`), pinned in tests/test_sdk.py."""


def unanswered_cancels() -> None:
    """A cancelled 2025-era request over Streamable HTTP ends its SSE stream with no answer, as the spec asks of
    a receiver of `notifications/cancelled`. The SDK writes REQUEST_CANCELLED there so that a resuming client's
    replay ends too; the gateway keeps no event store (no replay), so it has nothing to end. A JSON-response
    POST must carry a body: that mode keeps the SDK's answer. Idempotent (the class is patched once)."""
    transport = StreamableHTTPServerTransport
    original = transport._terminate_unanswered_request
    if getattr(original, "gateway_unanswered", False):
        return

    async def terminate(self: StreamableHTTPServerTransport, request_id: Any) -> None:
        if self.is_json_response_enabled or self._event_store is not None:
            await original(self, request_id)
            return
        self.close_sse_stream(str(request_id))

    terminate.gateway_unanswered = True  # type: ignore[attr-defined]
    transport._terminate_unanswered_request = terminate  # type: ignore[method-assign]
