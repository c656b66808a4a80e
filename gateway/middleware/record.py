"""Record: every request's duration into the MCP operation histograms, and recent tool calls into a bounded
buffer the page reads (what the server answered beside what the client received).

Last in the chain, after audit: it sees every decision. Off the hot path: per call it counts two
histogram buckets and appends one reference to a deque; the page's rows, hints and sizes are worked out
when someone looks. The buffer is capped by count and by bytes (a result held is measured once, as the
front measures it anyway); a spilled result's original is not kept, the stored output is linked instead.
"""

import itertools
import time
from collections import deque
from dataclasses import dataclass
from typing import ClassVar

import anyio
import mcp.types as types

from gateway import telemetry
from gateway.errors import DownstreamError, GatewayError
from gateway.operations import Operations
from gateway.pipeline import Call, Middleware
from gateway.results import Hint, result_bytes
from gateway.session import Identity

METHODS = frozenset(
    {
        "tools/list",
        "tools/call",
        "prompts/list",
        "prompts/get",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "completion/complete",
    }
)


@dataclass(slots=True)
class Recorded:
    """One finished tool call as the page shows it: copied off the `Call`, so neither its arguments, its secrets
    nor its client end stay in memory; the results and hints are the very objects the call produced."""

    number: int
    identity: Identity
    tool: str
    server: str | None
    outcome: str
    seconds: float
    ended: float
    """When it finished (`time.perf_counter()`: a second clock read per call saved; "how long ago" is shown)."""
    request_bytes: int | None
    response_bytes: int | None
    spilled: str | None
    hints: list[Hint]
    result: types.CallToolResult | None
    """What the client received, before the hints are rendered into it."""
    downstream: types.Result | None
    """What the server answered (None: refused, answered by the gateway, or spilled: see `spilled`)."""
    error: GatewayError | None
    held: int
    """Bytes of results this entry keeps alive."""
    trace: int | None
    """The trace id (formatted when shown)."""

    @property
    def trace_id(self) -> str | None:
        return None if self.trace is None else format(self.trace, "032x")


def error_type(call: Call) -> str | None:
    """`error.type`: the gateway's refusal or the downstream failure by class, "tool_error" for an error result."""
    if call.error is not None:
        return type(call.error).__name__
    result = call.result
    if isinstance(result, types.CallToolResult) and result.is_error:
        return "tool_error"
    return None


def outcome(call: Call, kind: str | None) -> str:
    """ "ok", "refused (<by>)" when the gateway said no, else the `error.type`."""
    if kind is None:
        return "ok"
    if call.error is not None and not isinstance(call.error, DownstreamError):
        return f"refused ({call.refused_by or kind})"
    return kind


class Recorder(Middleware):
    name = "record"
    methods: ClassVar[frozenset[str]] = METHODS

    def __init__(self, *, max_calls: int = 500, max_bytes: int = 32 * 1024 * 1024) -> None:
        self.operations = Operations()
        self.recent: deque[Recorded] = deque()
        self.max_calls = max_calls
        self.max_bytes = max_bytes
        self.held = 0
        self._numbers = itertools.count(1)
        self._arrival: anyio.Event | None = None

    async def on_response(self, call: Call) -> None:
        ended = time.perf_counter()
        seconds = ended - call.started
        error = error_type(call)
        method, name = call.method, call.name or None
        self.operations.server.record(seconds, (method, name, error))
        if call.forward_s is not None and call.server is not None:
            self.operations.client.record(call.forward_s, (method, call.tool, call.server, error))
        if telemetry.metering:
            telemetry.operation(seconds, call.forward_s, method, name, call.server, error)
        if method == "tools/call":
            self._keep(call, seconds, ended, error)

    def _keep(self, call: Call, seconds: float, ended: float, error: str | None) -> None:
        size = call.response_bytes()
        held = (call.request_bytes or 0) + (size or 0)
        original, result = call.downstream, call.tool_result
        if call.spilled is not None:
            original = None  # stored whole under call.spilled: the page links it
        elif original is not None and original is not result and isinstance(original, types.CallToolResult):
            held += result_bytes(original)  # rewritten (truncated) without a spill: both are shown
        recorded = Recorded(
            next(self._numbers),
            call.session.identity,
            call.name,
            call.server,
            outcome(call, error),
            seconds,
            ended,
            call.request_bytes,
            size,
            call.spilled,
            call.hints,
            result,
            original,
            call.error,
            held,
            telemetry.current_trace_id(),
        )
        self.recent.append(recorded)
        self.held += held
        if self._arrival is not None:  # a publisher waits for the first call of a batch
            self._arrival.set()
            self._arrival = None
        while len(self.recent) > self.max_calls or (self.held > self.max_bytes and len(self.recent) > 1):
            self.held -= self.recent.popleft().held

    def arrival(self) -> anyio.Event:
        """Set when the next call is recorded."""
        if self._arrival is None:
            self._arrival = anyio.Event()
        return self._arrival

    def drain(self) -> list[Recorded]:
        """The calls recorded since the last drain, oldest first; the buffer is empty after."""
        calls = list(self.recent)
        self.recent.clear()
        self.held = 0
        return calls
