"""Call, Middleware and Pipeline: every client request travels as one mutable `Call` through a list.

Rules of the pipeline:

* Request hooks run top to bottom until one sets `call.result` or `call.error`; then nothing is
  forwarded (the hook has answered, or refused).
* Response hooks always all run, top to bottom, whether the result came from a downstream, from a
  short-circuit, or an error occurred. The last middleware in the list sees every response.
* A hook refuses a call by raising `GatewayError`; it is stored in `call.error`. Any other exception
  escaping a hook is a bug: it is logged, that hook is skipped, and the call completes.
* A middleware only sees calls whose method is in its `methods`.
* The call is built in one place for every way in (`gateway.fronts.door`); what a stage resolves is written onto
  it once and read by the stages after it (exposure's `server`/`tool` for a tool call, which the forward uses);
  the answer the client gets is rendered inside the chain (`gateway.middleware.render`: names, relay notices,
  hints, the client's protocol version), so the stages after it (audit, record) see what the client received,
  and the fronts only turn the finished call into bytes.
* Configuration is constructor arguments; the chain is one plain list, `gateway.middleware.default_chain`.
  A config reload replaces the whole list (`Pipeline.replace`): a call keeps the chain it started with to its end.
"""

import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import mcp.types as types

from gateway.errors import GatewayError
from gateway.inflight import InFlight, Peer
from gateway.results import Hint, result_bytes
from gateway.sdk import JsonObject, ProgressFn
from gateway.session import Session

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class Call:
    """One client request on its way through the gateway (mitmproxy's flow, for MCP).

    What middlewares tell each other travels in typed fields, each with the one writer named.
    """

    session: Session
    method: str
    """The MCP method: "tools/call", "tools/list", "resources/read", ..."""
    params: JsonObject
    """Inbound params as the client sent them (without `_meta`)."""
    progress: ProgressFn | None = None
    """Relays downstream progress to the client; None when the client asked for none."""
    version: str | None = None
    """Written by the door: the protocol version the client speaks (the answer is rendered for it)."""
    server: str | None = None
    """Downstream namespace, written once by the stage that resolves the name: exposure for a tool call (the
    forward then reads it instead of the catalog), the forward for the rest."""
    tool: str | None = None
    """Downstream-local name of the tool, resource URI or prompt (written with `server`)."""
    result: types.Result | None = None
    """Set by the forward, or by a request hook to short-circuit."""
    error: GatewayError | None = None
    hints: list[Hint] = field(default_factory=list[Hint])
    secrets: Mapping[str, str] = field(default_factory=dict[str, str], repr=False)
    """Per-user secrets the client sent with this request (`X-Gateway-Secret-*` headers), by NAME; never logged."""
    started: float = field(default_factory=time.perf_counter)
    """When the gateway took the request (`time.perf_counter()`), for the audit log's duration."""
    has_output_schema: bool = False
    """Written with `server`: the tool declares an `outputSchema` (its structured content is re-validated)."""
    request_bytes: int | None = None
    """Written by the size guard: the serialized size of the tool arguments."""
    spilled: str | None = None
    """Written by the size guard: the output id under which the whole result was stored."""
    refused_by: str | None = None
    """Written by a middleware that refused the call (e.g. "policy"), for the audit line."""
    reference: str | None = None
    """Written by the exposure middleware: the tool's reference name `server.tool`, which workflows and the
    gateway's own text use whatever the separator clients see."""
    names: "SessionNames | None" = field(default=None, repr=False)
    """Written by exposure: the names this session sees, in which the render stage writes the gateway's words."""
    peer: Peer | None = field(default=None, repr=False)
    """Written by the door: the client end of this request, where the relay sends what a downstream asks."""
    downstream: types.Result | None = field(default=None, repr=False)
    """Written by the pipeline: what the forward returned, before any response hook rewrote it (the page shows it
    beside what the client received); None when a request hook answered or refused."""
    forward_s: float | None = None
    """Written by the pipeline: seconds the forward took (`mcp.client.operation.duration`)."""
    _measured: tuple[object, int] | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        """The exposed name the client addressed: a tool or prompt name, or a resource URI ("" if none)."""
        value = self.params.get("name", self.params.get("uri", ""))
        return value if isinstance(value, str) else ""

    @property
    def tool_result(self) -> types.CallToolResult | None:
        return self.result if isinstance(self.result, types.CallToolResult) else None

    def response_bytes(self) -> int | None:
        """Serialized size of the tool result; measured once per result object (100 MB is not free to measure)."""
        result = self.tool_result
        if result is None:
            return None
        if self._measured is None or self._measured[0] is not result:
            self._measured = (result, result_bytes(result))
        return self._measured[1]


class SessionNames(Protocol):
    """The names one session sees (`gateway.routing.rename.Names`), as the render stage uses them."""

    @property
    def identity(self) -> bool:
        """True when the session's names are the registry's: nothing to rewrite."""

    def text(self, text: str) -> str:
        """`text` with every reference name `server.tool` in the session's names."""

    def deep(self, value: Any) -> Any:
        """`value`'s strings (nested in lists and dicts) rewritten as `text` rewrites one."""


class Middleware:
    """Override one or both hooks; see the module docstring for the order rules."""

    name: ClassVar[str] = ""
    """Its row in the pipeline table (`gateway.middleware`'s docstring, the README), for logs and the audit."""
    methods: ClassVar[frozenset[str]] = frozenset({"tools/call"})

    async def on_request(self, call: Call) -> None:
        return None

    async def on_response(self, call: Call) -> None:
        return None


class Forwarder(Protocol):
    async def forward(self, call: Call) -> None:
        """Send the call to its downstream; sets `call.result` or raises `GatewayError`."""


Hook = Callable[[Call], Awaitable[None]]


class Chain:
    """One generation of the middleware list, and the calls in flight through it."""

    def __init__(self, middlewares: Sequence[Middleware]) -> None:
        self.middlewares = list(middlewares)
        self.calls = InFlight()
        self._hooks: dict[str, tuple[list[Hook], list[Hook]]] = {}

    def hooks(self, method: str) -> tuple[list[Hook], list[Hook]]:
        """The request and response hooks a call of `method` runs, in list order; a middleware's hook that it does
        not override does nothing, so it is left out (every call would otherwise await it)."""
        found = self._hooks.get(method)
        if found is None:
            chain = [mw for mw in self.middlewares if method in mw.methods]
            found = self._hooks[method] = (
                [mw.on_request for mw in chain if type(mw).on_request is not Middleware.on_request],
                [mw.on_response for mw in chain if type(mw).on_response is not Middleware.on_response],
            )
        return found


class Pipeline:
    def __init__(self, forwarder: Forwarder, chain: Sequence[Middleware]) -> None:
        self._forwarder = forwarder
        self._current = Chain(chain)

    @property
    def chain(self) -> list[Middleware]:
        return self._current.middlewares

    def replace(self, chain: Sequence[Middleware]) -> Chain:
        """Calls that start from now on go through `chain`; calls in flight finish on the one they started with,
        which is returned (`.calls.idle()` waits for them, e.g. before closing what only that one used)."""
        retired, self._current = self._current, Chain(chain)
        return retired

    async def handle(self, call: Call) -> None:
        current = self._current
        with current.calls.counted():
            await self._through(*current.hooks(call.method), call)

    async def _through(self, requests: list[Hook], responses: list[Hook], call: Call) -> None:
        """The request hooks until one answers or refuses, the forward if none did, then every response hook. One
        loop runs both lists, each hook awaited in place (a helper coroutine per hook cost a frame each, per call)."""
        answered = False
        for responding, hooks in ((False, requests), (True, responses)):
            if responding and not answered:
                sent = time.perf_counter()
                try:
                    await self._forwarder.forward(call)
                except GatewayError as exc:
                    call.error = exc
                call.forward_s = time.perf_counter() - sent
                call.downstream = call.result
            for hook in hooks:
                try:
                    await hook(call)
                except GatewayError as exc:
                    call.error = exc
                except Exception:
                    logger.exception("middleware hook %s failed and was skipped", hook.__qualname__)
                if not responding and (call.result is not None or call.error is not None):
                    answered = True
                    break
