"""The HTTP front: Streamable HTTP at /mcp, legacy SSE at /sse, /healthz, the page and /metrics; auth outside a body
limit that answers."""

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from mcp.server.sse import SseServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.types import INVALID_REQUEST
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway import sdk
from gateway.config import AuthConfig, ListenConfig
from gateway.errors import jsonrpc_error
from gateway.fronts.agreement import VersionAgreement
from gateway.fronts.auth.admin import Admins
from gateway.fronts.auth.asgi import Authenticate, health_route, metadata_routes
from gateway.fronts.auth.bearer import Authenticator
from gateway.fronts.auth.local import Locality
from gateway.fronts.auth.signins import PageSignIns
from gateway.fronts.lanes.http import HttpLane, replay
from gateway.fronts.respond import respond_json
from gateway.fronts.server import Front
from gateway.telemetry.repeats import Repeating

logger = logging.getLogger(__name__)
repeats = Repeating(logger)


class BodyLimit:
    """Pure ASGI middleware: a POST's body is read here first, counted as it arrives, and handed on in one piece.

    A declared Content-Length over the limit is refused before any of the body is read; a chunked body
    declares nothing and is refused as soon as the running count passes the limit (the lane and the
    SDK would otherwise buffer it whole first: 150 MiB of chunked garbage cost ~290 MB). Either way the
    client gets 413 with a JSON-RPC error naming the size and the limit, and the session stays usable.
    A client that abandons its body is an ordinary event here, one log line, not a traceback from
    whichever layer happened to be reading.
    """

    def __init__(self, app: ASGIApp, *, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = next((v for k, v in scope["headers"] if k == b"content-length"), None)
        if length is not None and length.isdigit() and int(length) > self.max_body_bytes:
            await self._too_large(send, int(length), declared=True)
            return
        if scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                logger.info("client went away after sending %d bytes of a POST %s body", size, scope["path"])
                return
            body: bytes = message.get("body", b"")
            size += len(body)
            if size > self.max_body_bytes:
                await self._too_large(send, size, declared=False)
                return
            if body:
                chunks.append(body)
            if not message.get("more_body", False):
                break
        # A one-element join returns that very object: a body sent in one piece is not copied.
        await self.app(scope, replay(b"".join(chunks), receive), send)

    async def _too_large(self, send: Send, size: int, *, declared: bool) -> None:
        limit = self.max_body_bytes
        what = f"Request of {size:,} bytes exceeds" if declared else f"Request body passed {size:,} bytes, over"
        message = (
            f"{what} the gateway's limit of {limit:,} bytes (limits.max_message_bytes). "
            "Send a file path, a reference or a summary instead of the content, or split the request."
        )
        repeats.warning("rejected a request of %s%d bytes (limit %d)", "" if declared else "at least ", size, limit)
        await respond_json(send, jsonrpc_error(None, INVALID_REQUEST, message), 413)


class Nosniff:
    """Pure ASGI middleware: every response says `X-Content-Type-Options: nosniff`, so no browser reads a text or
    JSON answer (a tool name with markup in /metrics, a result on the page) as HTML or script."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def marked(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [h for h in message.get("headers", []) if h[0].lower() != b"x-content-type-options"]
                message = {**message, "headers": [*headers, (b"x-content-type-options", b"nosniff")]}
            await send(message)

        await self.app(scope, receive, marked)


def reload_route(
    reload: Callable[[], Awaitable[dict[str, Any]]], security: TransportSecurityMiddleware, admins: Admins
) -> Route:
    """`POST /reload` (what `gateway reload --url` sends): re-read the config file; 200 with what changed, or 422
    with the problems of a refused file. Behind the same auth as /mcp, Host/Origin checked (no browser CSRF), and
    for administrators only (403 naming `auth.admin_groups`, see `fronts.auth.admin`)."""

    async def endpoint(request: Request) -> Response:
        refused = await security.validate_request(request)
        if refused is not None:
            return refused
        why = admins.refusal(request, "POST /reload")
        if why is not None:
            return JSONResponse({"ok": False, "error": why}, status_code=403)
        report = await reload()
        return JSONResponse(report, status_code=200 if report["ok"] else 422)

    return Route("/reload", endpoint, methods=["POST"])


def build_app(
    front: Front,
    *,
    listen: ListenConfig,
    max_body_bytes: int,
    lifespan: Callable[[], AbstractAsyncContextManager[Any]],
    health: Callable[[], dict[str, Any]],
    authenticator: Authenticator,
    auth: AuthConfig | None = None,
    reload: Callable[[], Awaitable[dict[str, Any]]] | None = None,
    page: Callable[[TransportSecurityMiddleware, Admins], list[BaseRoute]] | None = None,
    signins: PageSignIns | None = None,
    connect: list[BaseRoute] | None = None,
) -> ASGIApp:
    """The ASGI app; `lifespan` runs the gateway (downstreams) around the HTTP session manager. `page`: the
    routes of `/metrics` and the page (`gateway.fronts.page.routes`), given the Host/Origin check and admins;
    `signins`: the page's sign-ins, read from its cookie."""
    server = front.server
    security = TransportSecuritySettings(allowed_hosts=listen.allowed_hosts, allowed_origins=listen.allowed_origins)
    manager = StreamableHTTPSessionManager(app=server, security_settings=security, max_request_body_size=max_body_bytes)
    sdk.unanswered_cancels()  # a cancelled 2025-era call gets no answer
    sse = SseServerTransport("/messages/", security_settings=security, max_request_body_size=max_body_bytes)

    sse_security = TransportSecurityMiddleware(security)

    async def sse_endpoint(request: Request) -> Response:
        # Checked here first: `connect_sse` answers a bad Host/Origin, then raises (an ASGI traceback per probe).
        refused = await sse_security.validate_request(request, is_post=False)
        if refused is not None:
            return refused
        async with sse.connect_sse(request.scope, request.receive, request._send) as (read, write):
            await server.run(read, write, server.create_initialization_options())
        return Response()

    @contextlib.asynccontextmanager
    async def app_lifespan(app: Starlette) -> AsyncIterator[None]:
        async with lifespan(), manager.run():
            yield

    auth = auth or AuthConfig()
    locality = Locality.of(listen)
    admins = Admins(frozenset(auth.admin_groups), locality)
    metadata = []
    if auth.jwt is not None and auth.resource_url is not None:
        servers = auth.authorization_servers or [auth.jwt.issuer]
        metadata = metadata_routes(auth.resource_url, servers, auth.jwt.required_scopes)
    app = Starlette(
        routes=[
            *metadata,
            health_route(health, TransportSecurityMiddleware(security)),
            Route("/mcp", endpoint=StreamableHTTPASGIApp(manager)),
            Route("/sse", endpoint=sse_endpoint, methods=["GET"]),
            Mount("/messages/", app=sse.handle_post_message),
            *([reload_route(reload, TransportSecurityMiddleware(security), admins)] if reload is not None else []),
            *(page(TransportSecurityMiddleware(security), admins) if page is not None else []),
            *(connect or []),  # people's sign-ins to OAuth servers (`fronts.connect`)
        ],
        lifespan=app_lifespan,
    )
    # The lane sits outside the router: it serves the plain tools/call POST to /mcp without Starlette's layers.
    lane = VersionAgreement(HttpLane(app, front, security, manager))  # header and body agree before either routes
    resource_url = auth.resource_url if auth.jwt is not None else None
    limited = BodyLimit(lane, max_body_bytes=max_body_bytes)
    return Nosniff(Authenticate(limited, authenticator, resource_url=resource_url, locality=locality, signins=signins))
