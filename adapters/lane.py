"""A direct lane for requests over a stdio connection, beside the SDK session that owns it.

The SDK client sends each request through its dispatcher: a model dump, a hand-off to a writer
task, another from the reader to the dispatcher task, and a second validation of the result. For
the gateway's hot path (`tools/call`, forwarded thousands of times) that machinery costs about as
much as the downstream's own work. A lane request is written from the caller's task and its reply
is handed back by the connection's reader directly.

The SDK session keeps the connection: handshake, listings, notifications, server requests. Lane
requests carry string ids (`lane-1`, …) that the SDK's integer ids never take, so the reader routes
replies and progress by id alone and passes everything else on.
"""

import itertools
import logging
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import Any

import anyio
import mcp.types as types
from mcp import MCPError
from opentelemetry.propagate import inject
from opentelemetry.trace import SpanKind, StatusCode, get_tracer
from pydantic_core import to_json

logger = logging.getLogger(__name__)

SendLine = Callable[[bytes], Awaitable[None]]
Progress = Callable[[float, float | None, str | None], Awaitable[None]]
_tracer = get_tracer("mcp-gateway")
_CANCEL_WRITE_S = 2.0


class _Waiter:
    __slots__ = ("done", "on_progress", "outcome")

    def __init__(self, on_progress: Progress | None) -> None:
        self.done = anyio.Event()
        self.on_progress = on_progress
        self.outcome: dict[str, Any] | types.ErrorData | None = None


class Lane:
    """Requests written by the caller, replies routed back by `route` (called from the connection's reader)."""

    def __init__(self, send_line: SendLine) -> None:
        self._send_line = send_line
        self._ids = itertools.count(1)
        self._pending: dict[str, _Waiter] = {}
        self._closed = False

    async def request(
        self, method: str, params: dict[str, Any], *, time_limit_s: float | None, on_progress: Progress | None = None
    ) -> dict[str, Any]:
        """Send one request and wait for its result; raises `MCPError` like the SDK session does.

        Raises:
            MCPError: the peer's error; REQUEST_TIMEOUT after `time_limit_s` seconds (a cancellation is sent
                to the peer); CONNECTION_CLOSED when the connection ends first.
        """
        if self._closed:
            raise MCPError(code=types.CONNECTION_CLOSED, message="Connection closed")
        request_id = f"lane-{next(self._ids)}"
        meta = dict(params.get("_meta") or {})
        if on_progress is not None:
            meta["progressToken"] = request_id
        waiter = _Waiter(on_progress)
        name = params.get("name")
        span_name = f"MCP send {method}{f' {name}' if isinstance(name, str) else ''}"
        attributes = {"mcp.method.name": method, "jsonrpc.request.id": request_id}
        with _tracer.start_as_current_span(span_name, kind=SpanKind.CLIENT, attributes=attributes) as span:
            inject(meta)  # the downstream's spans join the caller's trace
            message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**params, "_meta": meta}}
            line = to_json(message) + b"\n"
            del message
            self._pending[request_id] = waiter
            try:
                await self._send_line(line)
                del line
                with anyio.fail_after(time_limit_s):
                    await waiter.done.wait()
            except TimeoutError:
                await self._cancel(request_id, f"timed out after {time_limit_s}s")
                raise MCPError(code=types.REQUEST_TIMEOUT, message=f"Request {method!r} timed out") from None
            except anyio.get_cancelled_exc_class():
                # A cancelled write may still have reached the pipe; a cancel for an unseen id is ignored.
                with anyio.CancelScope(shield=True):
                    await self._cancel(request_id, "caller cancelled")
                raise
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                raise MCPError(code=types.CONNECTION_CLOSED, message="Connection closed") from None
            finally:
                self._pending.pop(request_id, None)
            outcome = waiter.outcome
            if isinstance(outcome, types.ErrorData):
                span.set_status(StatusCode.ERROR, outcome.message)
                span.set_attribute("error.type", str(outcome.code))
                raise MCPError(code=outcome.code, message=outcome.message, data=outcome.data)
            assert outcome is not None
            return outcome

    async def _cancel(self, request_id: str, reason: str) -> None:
        """The courtesy `notifications/cancelled`, so the peer stops working on an abandoned request."""
        if self._closed:
            return
        params = {"requestId": request_id, "reason": reason}
        line = to_json({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}) + b"\n"
        gone = (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)
        with anyio.move_on_after(_CANCEL_WRITE_S), suppress(*gone):
            await self._send_line(line)

    async def route(self, message: types.JSONRPCMessage) -> bool:
        """Take `message` if it answers or reports progress on a lane request; False hands it to the SDK."""
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            waiter = self._pending.get(message.id) if isinstance(message.id, str) else None
            if waiter is None:
                return False
            waiter.outcome = message.result if isinstance(message, types.JSONRPCResponse) else message.error
            waiter.done.set()
            return True
        if isinstance(message, types.JSONRPCNotification) and message.method == "notifications/progress":
            params = message.params or {}
            token = params.get("progressToken")
            waiter = self._pending.get(token) if isinstance(token, str) else None
            if waiter is None or waiter.on_progress is None:
                return False
            await self._progress(waiter.on_progress, params)
            return True
        return False

    @staticmethod
    async def _progress(on_progress: Progress, params: dict[str, Any]) -> None:
        progress, total, text = params.get("progress"), params.get("total"), params.get("message")
        if not isinstance(progress, int | float):
            return
        try:
            await on_progress(
                float(progress),
                float(total) if isinstance(total, int | float) else None,
                text if isinstance(text, str) else None,
            )
        except Exception:  # a failing relay must not stop the reader
            logger.exception("progress relay failed")

    def close(self) -> None:
        """The connection ended: every waiting request fails with CONNECTION_CLOSED."""
        self._closed = True
        for waiter in self._pending.values():
            waiter.outcome = types.ErrorData(code=types.CONNECTION_CLOSED, message="Connection closed")
            waiter.done.set()
