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

import asyncio
import heapq
import itertools
import logging
import math
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager, nullcontext, suppress
from typing import Any, Protocol

import anyio
import mcp.types as types
from mcp import MCPError
from opentelemetry.propagate import inject
from opentelemetry.trace import INVALID_SPAN, Span, SpanKind, StatusCode, get_tracer
from pydantic_core import to_json

from gateway import telemetry
from gateway.telemetry import tracecontext

logger = logging.getLogger(__name__)

SendLine = Callable[[bytes], Awaitable[None]]
Progress = Callable[[float, float | None, str | None], Awaitable[None]]
_tracer = get_tracer("mcp-gateway")
_CANCEL_WRITE_S = 2.0
_TIMED_OUT = types.ErrorData(code=types.REQUEST_TIMEOUT, message="timed out")


def _client_span(method: str, params: dict[str, Any], request_id: str) -> AbstractContextManager[Span]:
    """The CLIENT span the SDK session would open for this request."""
    name = params.get("name")
    span_name = f"MCP send {method}{f' {name}' if isinstance(name, str) else ''}"
    attributes = {"mcp.method.name": method, "jsonrpc.request.id": request_id}
    return _tracer.start_as_current_span(span_name, kind=SpanKind.CLIENT, attributes=attributes)


class Due(Protocol):
    """When a request is due, in the event loop's time (`anyio.current_time`). It may move later while the request
    waits (a server's progress extends its call): the lane reads `at` again when the time it read passes."""

    @property
    def at(self) -> float: ...


class _Waiter:
    """One request's wait for its outcome: a bare future of the running loop (an `anyio.Event` costs about ten
    Python calls to make, set and wait, on every forwarded call)."""

    __slots__ = ("_done", "due", "on_progress", "outcome")

    def __init__(self, due: Due | None, on_progress: Progress | None) -> None:
        self._done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.due = due
        self.on_progress = on_progress
        self.outcome: dict[str, Any] | types.ErrorData | None = None

    def settle(self, outcome: dict[str, Any] | types.ErrorData) -> None:
        self.outcome = outcome
        if not self._done.done():  # else its caller was cancelled meanwhile
            self._done.set_result(None)

    async def wait(self) -> None:
        await self._done


class Lane:
    """Requests written by the caller, replies routed back by `route` (called from the connection's reader)."""

    def __init__(self, send_line: SendLine) -> None:
        self._send_line = send_line
        self._ids = itertools.count(1)
        self._pending: dict[str, _Waiter] = {}
        self._closed = False
        # (deadline, id) of waiting requests, expired by `expire`: one task for all instead of a cancel scope each
        # (a deadline that moved later is pushed again when its old time passes).
        self._deadlines: list[tuple[float, str]] = []
        self._rearm = anyio.Event()

    async def request(
        self, method: str, params: dict[str, Any], *, due: Due | None, on_progress: Progress | None = None
    ) -> dict[str, Any]:
        """Send one request and wait for its result; raises `MCPError` like the SDK session does.

        Raises:
            MCPError: the peer's error; REQUEST_TIMEOUT once `due.at` passes (a cancellation is sent to the
                peer); CONNECTION_CLOSED when the connection ends first.
        """
        if self._closed:
            raise MCPError(code=types.CONNECTION_CLOSED, message="Connection closed")
        request_id = f"lane-{next(self._ids)}"
        meta = dict(params.get("_meta") or {})
        if on_progress is not None:
            meta["progressToken"] = request_id
        waiter = _Waiter(due, on_progress)
        tracing = telemetry.tracing()
        with _client_span(method, params, request_id) if tracing else nullcontext(INVALID_SPAN) as span:
            if tracing or tracecontext.seen:
                inject(meta)  # the downstream's spans join the caller's trace (untraced: the caller's context)
            message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**params, "_meta": meta}}
            line = to_json(message) + b"\n"
            del message
            self._pending[request_id] = waiter
            if due is not None:
                self._expire_at(due.at, request_id)
            try:
                await self._send_line(line)
                del line
                await waiter.wait()
            except anyio.get_cancelled_exc_class():
                # A cancelled write may still have reached the pipe; a cancel for an unseen id is ignored.
                with anyio.CancelScope(shield=True):
                    await self._cancel(request_id, "caller cancelled")
                raise
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                raise MCPError(code=types.CONNECTION_CLOSED, message="Connection closed") from None
            finally:
                self._pending.pop(request_id, None)
                if len(self._deadlines) > 2 * len(self._pending) + 64:
                    self._drop_answered_deadlines()
            outcome = waiter.outcome
            if outcome is _TIMED_OUT:
                await self._cancel(request_id, "its time limit passed")
                raise MCPError(code=types.REQUEST_TIMEOUT, message=f"Request {method!r} timed out")
            if isinstance(outcome, types.ErrorData):
                span.set_status(StatusCode.ERROR, outcome.message)
                span.set_attribute("error.type", str(outcome.code))
                raise MCPError(code=outcome.code, message=outcome.message, data=outcome.data)
            assert outcome is not None
            return outcome

    def _expire_at(self, deadline: float, request_id: str) -> None:
        heapq.heappush(self._deadlines, (deadline, request_id))
        if self._deadlines[0][1] == request_id:
            self._rearm.set()  # earlier than what `expire` sleeps until

    def _drop_answered_deadlines(self) -> None:
        """Answered requests leave their deadline in the heap; sweep them out now and then (amortized O(1))."""
        self._deadlines = [entry for entry in self._deadlines if entry[1] in self._pending]
        heapq.heapify(self._deadlines)

    async def expire(self) -> None:
        """Run beside the connection: fail each waiting request whose time limit passed with REQUEST_TIMEOUT."""
        while True:
            now = anyio.current_time()
            # Due entries, and answered ones at the top whatever their time, so the next wake is for a request still
            # waiting (woken for each answered one at its own time, this task cost about a cancel scope per call).
            while self._deadlines and (self._deadlines[0][0] <= now or self._deadlines[0][1] not in self._pending):
                _, request_id = heapq.heappop(self._deadlines)
                waiter = self._pending.get(request_id)  # None: answered already
                if waiter is None or waiter.outcome is not None or waiter.due is None:
                    continue
                if waiter.due.at > now:  # it moved
                    heapq.heappush(self._deadlines, (waiter.due.at, request_id))
                else:
                    waiter.settle(_TIMED_OUT)
            self._rearm = anyio.Event()
            with anyio.move_on_after(self._deadlines[0][0] - now if self._deadlines else math.inf):
                await self._rearm.wait()

    async def _cancel(self, request_id: str, reason: str) -> None:
        """The courtesy `notifications/cancelled`, so the peer stops working on an abandoned request."""
        if self._closed:
            return
        params = {"requestId": request_id, "reason": reason}
        line = to_json({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}) + b"\n"
        gone = (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)
        with anyio.move_on_after(_CANCEL_WRITE_S), suppress(*gone):
            await self._send_line(line)

    def answer(self, data: Any) -> bool:
        """Take a decoded line that answers a lane request with a result (as `route` would, before the line is
        validated as a message: `data` is what the response's model would hold); False for anything else."""
        if not isinstance(data, dict) or data.get("jsonrpc") != "2.0" or "method" in data or "error" in data:
            return False
        request_id, result = data.get("id"), data.get("result")
        waiter = self._pending.get(request_id) if isinstance(request_id, str) else None
        if waiter is None or not isinstance(result, dict):
            return False
        if waiter.outcome is None:  # else too late: the request timed out or its connection closed
            waiter.settle(result)
        return True

    async def route(self, message: types.JSONRPCMessage) -> bool:
        """Take `message` if it answers or reports progress on a lane request; False hands it to the SDK."""
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            waiter = self._pending.get(message.id) if isinstance(message.id, str) else None
            if waiter is None:
                return False
            if waiter.outcome is not None:
                return True  # too late: the request timed out or its connection closed
            waiter.settle(message.result if isinstance(message, types.JSONRPCResponse) else message.error)
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

    @property
    def closed(self) -> bool:
        """Whether the connection ended (the reader saw EOF or the writer could not write)."""
        return self._closed

    def close(self) -> None:
        """The connection ended: every waiting request fails with CONNECTION_CLOSED."""
        self._closed = True
        for waiter in self._pending.values():
            if waiter.outcome is not None:
                continue
            waiter.settle(types.ErrorData(code=types.CONNECTION_CLOSED, message="Connection closed"))
