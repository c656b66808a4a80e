"""An open connection to a downstream, as the transports hand it to the gateway.

A `Link` holds the streams the SDK session runs on and, for stdio servers, the lane beside them: the
fast path for `tools/call` (see `adapters.lane`). Handing both over explicitly is the seam; nothing
is looked up on a stream's attributes.
"""

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass

from adapters.lane import Lane
from gateway.sdk import Transport, TransportStreams


@dataclass(frozen=True, slots=True)
class Link:
    streams: TransportStreams
    """What `mcp.Client` runs its session on."""
    lane: Lane | None = None
    """The direct `tools/call` lane over the same connection, when the transport has one."""


Connector = AbstractAsyncContextManager[Link]
"""A fresh, single-use connection attempt: entering connects, leaving disconnects (and ends the process)."""


@asynccontextmanager
async def linked(transport: Transport) -> AsyncIterator[Link]:
    """A transport without a lane, as a `Connector`."""
    async with transport as streams:
        yield Link(streams)


@asynccontextmanager
async def opened(streams: TransportStreams) -> AsyncIterator[TransportStreams]:
    """Already-open streams as the `Transport` `mcp.Client` expects (the link owns their lifetime)."""
    yield streams


@asynccontextmanager
async def session_only(connector: Connector) -> AsyncIterator[TransportStreams]:
    """A connector as a plain `Transport` for `mcp.Client` (the lane unused): for callers that need no lane."""
    async with connector as link:
        yield link.streams
