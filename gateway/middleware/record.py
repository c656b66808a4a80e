"""Record: every request's duration into the MCP operation histograms, and recent tool calls into a bounded
buffer the page reads (what the server answered beside what the client received).

Last in the chain, after audit: it sees every decision. Off the hot path: per call it counts two histogram
buckets and appends one tuple of references to a deque; the outcome, numbering, rows, hints and texts are
worked out by the reader (`gateway.middleware.publish`, when someone looks or, on Redis, in the background).
The buffer is capped by count and by bytes of what it keeps alive: the results (each measured once, as the front
measures it anyway) and the arguments of those who chose to see theirs (`gateway.middleware.arguments`: an owner
looked up in a set; nobody else's arguments are kept or counted); a spilled result's original is not kept, the
stored output is linked instead.
"""

import time
from collections import deque
from typing import Any, ClassVar, NamedTuple

import anyio
import mcp.types as types

from gateway import telemetry
from gateway.errors import DownstreamError, DownstreamTimeout, DownstreamUnavailable, GatewayError
from gateway.middleware import render
from gateway.pipeline import Call, Middleware
from gateway.results import Hint, result_bytes
from gateway.session import Identity
from gateway.telemetry.operations import Operations, subject

METHODS = render.METHODS - {"resources/unsubscribe", "logging/setLevel"}
"""The operations timed and recorded: every method the fronts send through the pipeline but the two that only
change what a session is sent (leaving a subscription, a log level)."""


OUTCOMES = ("ok", "tool error", "server error", "timeout", "refused")
"""What became of a tool call: answered; answered with an error result; the server failed or was not up to take
it; it did not answer in time; the gateway said no (policy, an unknown name, a limit) and sent nothing."""
_REFUSALS = {"UnknownName": "unknown name", "RequestRejected": "limits", "TaskCapReached": "limits"}


class Recorded(NamedTuple):
    """One finished tool call as the page shows it: copied off the `Call`, so neither its secrets, its client end
    nor (but for a caller who chose to see them) its arguments stay in memory; the results and hints are the very
    objects the call produced. Kept as a plain tuple per call (the cheapest copy) and read as this when the page
    looks (`Recorder.drain`)."""

    identity: Identity
    tool: str
    server: str | None
    error: GatewayError | None
    refused_by: str | None
    seconds: float
    ended: float
    """When it finished (`time.perf_counter()`: a second clock read per call saved; "how long ago" is shown)."""
    request_bytes: int | None
    response_bytes: int | None
    spilled: str | None
    hints: list[Hint]
    result: types.CallToolResult | None
    """What the client received (rendered: `gateway.middleware.render` runs before this)."""
    downstream: types.Result | None
    """What the server answered (None: refused, answered by the gateway, or spilled: see `spilled`)."""
    trace: int | None
    """The trace id (formatted when shown)."""
    client: str | None
    """The client's `clientInfo.name` (None: it gave none)."""
    sent: str | None
    """The server's own name of the tool the request was sent to (None: not sent: refused, answered by the
    gateway, or the server was not up to take it)."""
    arguments: Any
    """The arguments as the client sent them, for an owner who chose to see theirs (else None): redacted and cut
    when published."""
    held: int
    """Bytes of results this entry keeps alive."""

    @property
    def trace_id(self) -> str | None:
        return None if self.trace is None else format(self.trace, "032x")

    @property
    def outcome(self) -> str:
        """One of `OUTCOMES`: what became of the call, the same word on the list, the detail and Metrics."""
        match self.error:
            case None:
                return "tool error" if self.result is not None and self.result.is_error else "ok"
            case DownstreamTimeout():
                return "timeout"
            case DownstreamError():
                return "server error"
            case _:
                return "refused"

    @property
    def refusal(self) -> str | None:
        """Who said no, for a refused call: the policy rule by name, else the stage or the kind of refusal."""
        if self.outcome != "refused":
            return None
        rule = getattr(self.error, "rule", None)
        if isinstance(rule, str):
            return f"policy rule {rule!r}"
        return self.refused_by or _REFUSALS.get(type(self.error).__name__, type(self.error).__name__)


def error_type(call: Call) -> str | None:
    """`error.type`: the gateway's refusal or the downstream failure by class, "tool_error" for an error result."""
    if call.error is not None:
        return type(call.error).__name__
    result = call.result
    if result.__class__ is types.CallToolResult and result.is_error:
        return "tool_error"
    return None


class Recorder(Middleware):
    name = "record"
    methods: ClassVar[frozenset[str]] = METHODS

    def __init__(self, *, max_calls: int = 500, max_bytes: int = 32 * 1024 * 1024) -> None:
        self.operations = Operations()
        self.recent: deque[tuple[Any, ...]] = deque()
        """`Recorded` fields as plain tuples, oldest first."""
        self.max_calls = max_calls
        self.max_bytes = max_bytes
        self.held = 0
        self.arguments_of: frozenset[str] = frozenset()
        """The owners whose calls are kept with their arguments (`gateway.middleware.arguments.Keeping` sets it)."""
        self._arrival: anyio.Event | None = None

    async def on_response(self, call: Call) -> None:
        ended = time.perf_counter()
        seconds = ended - call.started
        error = error_type(call)
        method, name = call.method, call.name or None
        label = subject(method, name, error)  # bounded: what a caller names is no label of its own
        self.operations.server.record(seconds, (method, label, error))
        if call.forward_s is not None and call.server is not None:
            self.operations.client.record(
                call.forward_s, (method, subject(method, call.tool, error), call.server, error)
            )
        if telemetry.metering:
            telemetry.operation(seconds, call.forward_s, method, label, call.server, error)
        if method != "tools/call":
            return
        # What the page needs, copied as one tuple; the outcome, numbering and rows are the reader's to work out.
        size = call.response_bytes()
        result, original = call.result, call.downstream
        if call.error is not None and result.__class__ is types.CallToolResult:
            result = _withheld(result, call.error)  # what only the caller may see (a sign-in ticket) is not kept
        # Only what this entry keeps alive counts against `max_bytes`: its results, and the arguments only of those
        # who chose to see theirs (others' are measured, shown as a size, never kept: counted, 2 MB of them per call
        # left 16 of 240 calls in 32 MiB).
        held = size or 0
        arguments = None
        if call.session.identity.owner in self.arguments_of:
            arguments = call.params.get("arguments")
            held += call.request_bytes or 0
        if call.spilled is not None:
            original = None  # stored whole under call.spilled: the page links it
        elif original is not None and original is not result and original.__class__ is types.CallToolResult:
            held += result_bytes(original)  # rewritten (cut) without a spill: both shown
        trace = telemetry.current_trace_id()
        down = isinstance(call.error, DownstreamUnavailable)
        recent = self.recent
        recent.append(
            (
                call.session.identity,
                name or "",
                call.server,
                call.error,
                call.refused_by,
                seconds,
                ended,
                call.request_bytes,
                size,
                call.spilled,
                call.hints,
                result if result.__class__ is types.CallToolResult else None,
                original,
                trace,
                call.session.client,
                # forward_s is set whenever the forward ran, also when it found no tool or no server up to take it.
                call.tool if call.forward_s is not None and call.server is not None and not down else None,
                arguments,
                held,
            )
        )
        self.held += held
        if self._arrival is not None:  # a publisher waits for the first call of a batch
            self._arrival.set()
            self._arrival = None
        if len(recent) > self.max_calls or self.held > self.max_bytes:
            while len(recent) > self.max_calls or (self.held > self.max_bytes and len(recent) > 1):
                self.held -= recent.popleft()[-1]

    def arrival(self) -> anyio.Event:
        """Set when the next call is recorded."""
        if self._arrival is None:
            self._arrival = anyio.Event()
        return self._arrival

    def drain(self) -> list[Recorded]:
        """The calls recorded since the last drain, oldest first; the buffer is empty after."""
        calls = [Recorded._make(entry) for entry in self.recent]
        self.recent.clear()
        self.held = 0
        return calls


def _withheld(result: types.CallToolResult, error: GatewayError) -> types.CallToolResult:
    """`result` as the page may show it: its text blocks without what `error` says only to the caller."""
    content = [
        b.model_copy(update={"text": error.hide(b.text)}) if isinstance(b, types.TextContent) else b
        for b in result.content
    ]
    return result if content == result.content else result.model_copy(update={"content": content})
