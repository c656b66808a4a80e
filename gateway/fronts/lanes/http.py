"""The HTTP front's lane: a 2026-era `tools/call` POST served straight from the request, without the SDK's
per-request machinery, its answer streamed out in slices.

For every modern-era POST the SDK builds a request object, a connection, a task group with a
disconnect watcher and a memory stream for deferring to SSE, runs the handler through its server
runner, then serializes the whole answer twice (a dump, then `json.dumps`). For the call the gateway
forwards most, that costs as much as the forwarding itself, and the two copies make a 100 MB result
cost five times its size. The lane takes only the plainest case and hands everything else to the
SDK untouched: a POST of one `tools/call` request in a modern protocol version, accepting JSON,
without a progress token (progress needs the SSE stream) or `Mcp-Param-*` headers (the SDK
validates those). Envelope checks are the SDK's own functions, so both paths accept the same requests.
Handshake-era (2025-11-25) POSTs of an established session get the same shortcut for their plain
`tools/call` (`http_lane_legacy`: session, owner, idle timer and cancellation as the SDK keeps them).
"""

import logging
from typing import Any

import anyio
from mcp.server import Server
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, check_accept_headers
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    MCP_METHOD_HEADER,
    MCP_PARAM_HEADER_PREFIX,
    MCP_PROTOCOL_VERSION_HEADER,
    find_duplicated_routing_header,
    validate_mcp_param_headers,
)
from mcp_types import LOG_LEVEL_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.fronts.lanes import http_legacy as legacy
from gateway.fronts.lanes import recognize
from gateway.fronts.lanes.answer import answer_tool_call, may_be_asked
from gateway.fronts.lanes.http_legacy import LegacySessions
from gateway.fronts.respond import respond_json
from gateway.fronts.server import Front

logger = logging.getLogger(__name__)

_VERSION = MCP_PROTOCOL_VERSION_HEADER.lower().encode()
_METHOD = MCP_METHOD_HEADER.lower().encode()
_PARAM = MCP_PARAM_HEADER_PREFIX.lower().encode()
_SESSION = MCP_SESSION_ID_HEADER.lower().encode()


class HttpLane:
    """ASGI app in front of the gateway's routes (`app`): serves the plain `tools/call` to /mcp, passes the rest."""

    def __init__(
        self, app: ASGIApp, front: Front, security: TransportSecuritySettings, manager: StreamableHTTPSessionManager
    ) -> None:
        self.app = app
        self.front = front
        self.server: Server[Any] = front.server
        self.security = TransportSecurityMiddleware(security)
        self.legacy = LegacySessions(manager)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        era = _candidate(scope)
        if era is None:
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        # Host/Origin first: a request the SDK would refuse is handed over before its body is read. The SDK
        # wants JSON accepted, and in the handshake era (SSE answers) the event stream too.
        accepts_json, accepts_sse = check_accept_headers(request)
        if (
            await self.security.validate_request(request, is_post=True) is not None
            or not accepts_json
            or (era == "legacy" and not accepts_sse)
        ):
            await self.app(scope, receive, send)
            return
        if era == "legacy":
            await self._legacy(request, send)
            return
        body = await request.body()
        call = _plain_call(body, request)
        if call is None or self._header_params_declared(call[1]["name"], call[1].get("arguments"), request):
            await self.app(scope, replay(body, receive), send)
            return
        await self._serve(request, send, *call)

    async def _legacy(self, request: Request, send: Send) -> None:
        """A handshake-era POST of an established session: its plain `tools/call` or a cancel of one served here."""
        session = self.legacy.session(request)
        if session is None:  # unknown, ending or another principal's: the SDK answers
            await self.app(request.scope, request.receive, send)
            return
        body = await request.body()
        decoded = recognize.decode(body)
        session_header = [(_SESSION, session[0].encode())]
        if self.legacy.cancel(session[0], decoded):
            await respond_json(send, None, 202, session_header)  # as the SDK accepts a notification
            return
        version: str = request.headers[MCP_PROTOCOL_VERSION_HEADER]
        call = recognize.plain_call(decoded, version)
        if call is None or may_be_asked(self.front.relay, self.front.callers.of(request).key):
            await self.app(request.scope, replay(body, request.receive), send)
            return
        request_id, params = call
        answered = await self.legacy.serve(
            session, request_id, lambda: self._answer(request, request_id, params, version)
        )
        if answered is None:  # cancelled: an SSE stream that ends with no message, as the SDK's path ends it
            start = {"status": 200, "headers": [(b"content-type", b"text/event-stream"), *session_header]}
            await send({"type": "http.response.start", **start})
            await send({"type": "http.response.body", "body": b""})
            return
        await respond_json(send, *answered, session_header)

    async def _serve(
        self, request: Request, send: Send, request_id: str | int, params: dict[str, Any], version: str
    ) -> None:
        # Closing the response stream is how a 2026-era client cancels a call. The watcher ends by itself
        # once the answer is sent (ASGI then reports a disconnect), so the happy path cancels nothing.
        answered = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(_cancel_on_disconnect, request.receive, tg.cancel_scope, answered)
            message, status = await self._answer(request, request_id, params, version)
            answered.set()
            await respond_json(send, message, status)

    async def _answer(
        self, request: Request, request_id: str | int, params: dict[str, Any], version: str
    ) -> tuple[dict[str, Any], int]:
        """The JSON-RPC response and its HTTP status (the 2026 era maps error codes to statuses; the handshake
        era answers them in band)."""
        caller = self.front.callers.of(request)
        message, error, _ = await answer_tool_call(self.front, caller, request_id, params, version)
        if error is None or version not in MODERN_PROTOCOL_VERSIONS:
            return message, 200
        return message, ERROR_CODE_HTTP_STATUS.get(error.code, 500)

    def _header_params_declared(self, name: str, arguments: Any, request: Request) -> bool:
        """Whether the tool's schema wants `Mcp-Param-*` headers for these arguments (the SDK then validates)."""
        if not arguments:
            return False
        schema = self.server.get_tool_input_schema(name) if self.server.get_tool_input_schema else None
        return schema is not None and validate_mcp_param_headers(schema, arguments, request.headers) is not None


def _candidate(scope: Scope) -> str | None:
    """From the headers alone: "modern" for a 2026-era `tools/call` POST to /mcp without `Mcp-Param-*` headers,
    "legacy" for a handshake-era POST of a session (its body tells what it is), else None."""
    if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != "/mcp":
        return None
    version = method = None
    for key, value in scope["headers"]:
        if key == _VERSION:
            version = value.decode("latin-1")
        elif key == _METHOD:
            method = value
        elif key.startswith(_PARAM):
            return None
    if method == b"tools/call" and version in MODERN_PROTOCOL_VERSIONS:
        return "modern"
    return "legacy" if legacy.candidate(scope["headers"], version) else None


def _plain_call(body: bytes, request: Request) -> tuple[str | int, dict[str, Any], str] | None:
    """(id, params, version) of a plain 2026-era `tools/call` the lane can serve; None sends it to the SDK."""
    decoded = recognize.decode(body)
    version = recognize.modern_version(decoded, request.headers)
    call = None if version is None else recognize.plain_call(decoded, version)
    if version is None or call is None:
        return None
    meta = call[1].get("_meta")  # this era's requests carry their envelope there; anything else is the SDK's
    if not isinstance(meta, dict) or find_duplicated_routing_header(request.headers.items()):
        return None
    if LOG_LEVEL_META_KEY in meta:
        return None  # log levels concern the relay (as input rounds do, `recognize.plain_params`): the SDK path
    return call[0], call[1], version


async def _cancel_on_disconnect(receive: Receive, scope: anyio.CancelScope, answered: anyio.Event) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    if not answered.is_set():
        scope.cancel()


def replay(body: bytes, receive: Receive) -> Receive:
    """`receive` with the already-read body delivered first (for the next app to read it again); afterwards the
    client's own messages (a disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay
