"""The HTTP lane's handshake-era half: a `tools/call` POST of an established 2025-era session, served without
the SDK's session transport, dispatcher and SSE response.

For each such POST the SDK's path is the session manager, the session's transport (memory streams to
the session's task), the JSON-RPC dispatcher (a task per request), the server runner and an SSE
response with its own task group: about half of the gateway's CPU per forwarded call, measured. Most
IDEs still speak this era, so its plainest call gets the same shortcut as the 2026 era's. The lane
makes the manager's own decisions first (`gateway.sdk.http_session`: the session exists, is not
ending, and belongs to the request's principal), holds the session's idle timer as a request in flight
does, validates the params with the SDK's per-version surface, and answers in JSON (the client accepts
it: the SDK's own check demands both JSON and SSE). Anything else, including requests of unknown or
foreign sessions, goes to the SDK with the body replayed.

Cancellation in this era is a `notifications/cancelled` POST: one that names a call the lane is
serving cancels it here (the SDK never saw that call) and the call gets no answer: its POST ends with an empty
SSE stream (the spec: a cancelled request is not answered; `sdk.unanswered_cancels` does the same on the SDK's
path). A closed connection does not cancel a call in this
era (the spec says so), so no disconnect watcher runs.
"""

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.requests import Request

from gateway import sdk

_SESSION = MCP_SESSION_ID_HEADER.lower().encode()
_LENGTH = b"content-length"

Call = tuple[str | int, dict[str, Any]]
"""(id, params) of a `tools/call` the lane serves."""


def candidate(headers: list[tuple[bytes, bytes]], version: str | None) -> bool:
    """From the headers alone: a handshake-era POST of a session, with a declared length (the front's body limit
    checked it; a chunked body goes to the SDK, whose reader enforces the limit)."""
    if version not in HANDSHAKE_PROTOCOL_VERSIONS:
        return False
    names = {key for key, _ in headers}
    return _SESSION in names and _LENGTH in names


class LegacySessions:
    """The lane's view of the SDK's handshake-era sessions, and the calls it is serving for them."""

    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        self.manager = manager
        self._running: dict[tuple[str, str | int], anyio.CancelScope] = {}

    def session(self, request: Request) -> tuple[str, StreamableHTTPServerTransport] | None:
        """The request's session when the SDK would serve it in that session for this principal."""
        session_id = request.headers.get(MCP_SESSION_ID_HEADER)
        transport = (
            None if session_id is None else sdk.http_session(self.manager, session_id, request.scope.get("user"))
        )
        return None if session_id is None or transport is None else (session_id, transport)

    def cancel(self, session_id: str, decoded: Any) -> bool:
        """Cancel the lane call a `notifications/cancelled` names; False when it names none of them."""
        if not isinstance(decoded, dict) or decoded.get("method") != "notifications/cancelled" or "id" in decoded:
            return False
        params = decoded.get("params")
        request_id = params.get("requestId") if isinstance(params, dict) else None
        if isinstance(request_id, bool) or not isinstance(request_id, str | int):
            return False
        scope = self._running.get((session_id, request_id))
        if scope is None:
            return False
        scope.cancel()
        return True

    async def serve(
        self,
        session: tuple[str, StreamableHTTPServerTransport],
        request_id: str | int,
        answer: Callable[[], Awaitable[tuple[dict[str, Any], int]]],
    ) -> tuple[dict[str, Any], int] | None:
        """Run `answer()` (the JSON-RPC response and status) holding the session, cancellable by the client
        (then None: the call is not answered)."""
        key = (session[0], request_id)
        registered = key not in self._running  # a duplicate id in flight: the first one keeps the cancel
        with anyio.CancelScope() as scope:
            if registered:
                self._running[key] = scope
            try:
                with sdk.http_session_in_flight(session[1]):
                    return await answer()
            finally:
                if registered:
                    del self._running[key]
        return None
