"""The HTTP front: Streamable HTTP at /mcp, legacy SSE at /sse, /healthz; bearer auth and a body limit that answers."""

import contextlib
import hmac
import json
import logging
import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from mcp.server.sse import SseServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.config import ListenConfig
from gateway.fronts.http_lane import HttpLane
from gateway.fronts.server import Front

logger = logging.getLogger(__name__)


def bearer_tokens(listen: ListenConfig) -> list[str]:
    raw = os.environ.get(listen.bearer_tokens_env, "")
    return [t.strip() for t in raw.split(",") if t.strip()]


async def _reply(send: Send, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
    data = json.dumps(body).encode()
    raw_headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    raw_headers += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": data})


def _jsonrpc_error(code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}


class Guard:
    """Pure ASGI middleware: bearer tokens (when configured) and the declared-size check, before any body is read.

    An oversized body gets 413 with a JSON-RPC error naming the size and the limit; the SDK client
    surfaces that message, and the session stays usable. Bodies without Content-Length are still
    capped by the SDK's own limit (a plain 413).
    """

    def __init__(self, app: ASGIApp, *, tokens: list[str], max_body_bytes: int) -> None:
        self.app = app
        self.tokens = [t.encode() for t in tokens]
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] == "/healthz":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        if self.tokens and not self._authorized(headers.get(b"authorization", b"")):
            message = "Missing or wrong bearer token. Send 'Authorization: Bearer <token>'."
            await _reply(send, 401, _jsonrpc_error(-32001, message), {"www-authenticate": "Bearer"})
            return
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body_bytes:
            size, limit = int(length), self.max_body_bytes
            message = (
                f"Request of {size:,} bytes exceeds the gateway's limit of {limit:,} bytes (limits.max_message_bytes). "
                "Send a file path, a reference or a summary instead of the content, or split the request."
            )
            logger.warning("rejected a %d-byte request (limit %d)", size, limit)
            await _reply(send, 413, _jsonrpc_error(-32600, message))
            return
        await self.app(scope, receive, send)

    def _authorized(self, header: bytes) -> bool:
        scheme, _, token = header.partition(b" ")
        if scheme.lower() != b"bearer":
            return False
        # A list, not a generator: compare against every token so timing does not reveal which one matched.
        matches = [hmac.compare_digest(token.strip(), t) for t in self.tokens]
        return any(matches)


def build_app(
    front: Front,
    *,
    listen: ListenConfig,
    max_body_bytes: int,
    lifespan: Callable[[], AbstractAsyncContextManager[Any]],
    health: Callable[[], dict[str, Any]],
) -> ASGIApp:
    """The ASGI app; `lifespan` runs the gateway (downstreams) around the HTTP session manager."""
    server = front.server
    security = TransportSecuritySettings(allowed_hosts=listen.allowed_hosts, allowed_origins=listen.allowed_origins)
    manager = StreamableHTTPSessionManager(app=server, security_settings=security, max_request_body_size=max_body_bytes)
    sse = SseServerTransport("/messages/", security_settings=security, max_request_body_size=max_body_bytes)

    async def sse_endpoint(request: Request) -> Response:
        async with sse.connect_sse(request.scope, request.receive, request._send) as (read, write):
            await server.run(read, write, server.create_initialization_options())
        return Response()

    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse(health())

    @contextlib.asynccontextmanager
    async def app_lifespan(app: Starlette) -> AsyncIterator[None]:
        async with lifespan(), manager.run():
            yield

    app = Starlette(
        routes=[
            Route("/healthz", healthz),
            Route("/mcp", endpoint=StreamableHTTPASGIApp(manager)),
            Route("/sse", endpoint=sse_endpoint, methods=["GET"]),
            Mount("/messages/", app=sse.handle_post_message),
        ],
        lifespan=app_lifespan,
    )
    # The lane sits outside the router: it serves the plain tools/call POST to /mcp without Starlette's layers.
    return Guard(HttpLane(app, front, security), tokens=bearer_tokens(listen), max_body_bytes=max_body_bytes)
