"""A request in flight, as the stages it crosses see it: its client end (whom a downstream's request or log during
that request reaches, what its client declared and so what a downstream may be offered, and at which log level),
how a notification reaches a client without a gone one disturbing anybody, and how many requests are in flight
through something that may be retired (a server, a pipeline), so it can be closed without cutting one off.

A leaf: the pipeline's `Call` carries a `Peer`; fronts build it, routing and downstreams read it.
"""

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import anyio
import mcp.types as types

from gateway import sdk

logger = logging.getLogger(__name__)

DELIVERY_S = 5.0
"""How long one notification to one client may take. The SDK's send waits while the client's stream is full (a
client that stopped reading its SSE stream): past this, that client misses the notification, nobody else waits."""

LEVELS: tuple[types.LoggingLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)


@dataclass(slots=True, eq=False)
class Peer:
    """The client end of one request in flight: whom to ask, and on which request's channel."""

    key: str
    """The client's session key."""
    session: Any
    """The SDK's request-scoped `ServerSession` of the client's request."""
    request_id: types.RequestId | None
    capabilities: types.ClientCapabilities | None
    modern: bool
    """True when the client speaks the 2026-07-28 era (no server-to-client requests)."""
    log_level: types.LoggingLevel | None = None
    """The least severe level the client wants for this request (None: the session set none)."""
    notices: list[str] = field(default_factory=list[str])
    """What went wrong relaying for this request, for the client's hint."""
    offered: dict[str, Any] | None = None
    """What of `capabilities` a downstream may be offered, dumped (`offerable`); the door hands a session's calls
    the one dump of its capabilities object (None: dumped when first needed)."""
    ask_client: Callable[[Any, float], Awaitable[Any]] | None = None
    """A 2026-era client's way to be asked (request, timeout): through an input-required result of its call,
    answered by its retry (the wire dict it sent); None when it cannot be asked."""


def offerable(peer: Peer | None) -> dict[str, Any]:
    """The client capabilities a downstream may count on during `peer`'s request: the sampling, elicitation and
    roots its client declared (a 2026-era client answers input requests itself, a handshake-era one is asked by
    the gateway), as declared; none without a client (the gateway's own calls)."""
    if peer is None or peer.capabilities is None:
        return {}
    if peer.offered is None:
        peer.offered = offered(peer.capabilities)
    return dict(peer.offered)


def offered(capabilities: types.ClientCapabilities) -> dict[str, Any]:
    """What of `capabilities` a downstream may be offered, dumped (`offerable`)."""
    return capabilities.model_dump(by_alias=True, mode="json", exclude_none=True, include=set(sdk.ASKABLE))


def elicitation_modes(capabilities: types.ClientCapabilities | None) -> frozenset[str]:
    """The elicitation modes a client declared: an empty `elicitation` object means form only (the 2025-06-18
    shape; from 2025-11-25 a client names `form` and/or `url`)."""
    declared = None if capabilities is None else capabilities.elicitation
    if declared is None:
        return frozenset()
    modes = {"form"} if declared.form is not None else set()
    modes |= {"url"} if declared.url is not None else set()
    return frozenset(modes or {"form"})


def passes(level: types.LoggingLevel, threshold: types.LoggingLevel | None) -> bool:
    return threshold is None or LEVELS.index(level) >= LEVELS.index(threshold)


async def standalone(
    connection: Any, notification: types.LoggingMessageNotification | types.ElicitCompleteNotification
) -> None:
    """Send on a connection's standalone stream (its `log()` helper is deprecated with the logging capability)."""
    data = notification.model_dump(by_alias=True, mode="json", exclude_none=True)
    await connection.notify(data["method"], data.get("params"))


async def quietly(send: Callable[..., Any], *args: Any) -> None:
    """Deliver a notification within DELIVERY_S; a client that went away or stopped reading must not disturb the
    downstream (its logs are delivered from its connection's reader) or the others."""
    try:
        with anyio.fail_after(DELIVERY_S):
            await send(*args)
    except TimeoutError:
        logger.info("a client took no notification within %g s; it missed one", DELIVERY_S)
    except Exception as exc:  # noqa: BLE001 -- a gone client is not the downstream's problem
        logger.debug("notification not delivered: %s", exc)


class InFlight:
    """`with calls.counted():` around each call; `await calls.idle()` waits until none is in flight.

    The event is made only when someone waits: every call passes here, a retirement is rare.
    """

    def __init__(self) -> None:
        self.count = 0
        self._idle: anyio.Event | None = None

    def counted(self) -> "InFlight":
        return self

    def __enter__(self) -> None:
        self.count += 1

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.count -= 1
        if self.count == 0 and self._idle is not None:
            self._idle.set()
            self._idle = None

    async def idle(self) -> None:
        """Wait until no call is in flight (at once when none is)."""
        while self.count:
            if self._idle is None:
                self._idle = anyio.Event()
            await self._idle.wait()
