"""A read-stream wrapper that reports end-of-stream, so a dead downstream is noticed even when idle."""

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio

from adapters.lane import Lane
from adapters.readstream import Item, ReadStreamProxy
from gateway.sdk import ReadStream, Transport, TransportStreams


class EofWatcher(ReadStreamProxy):
    """Delegates to `inner`; sets `lost` when the stream ends (the peer closed or the process exited)."""

    def __init__(self, inner: ReadStream[Item], lost: anyio.Event) -> None:
        super().__init__(inner)
        self._lost = lost

    async def receive(self) -> Item:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._lost.set()
            raise


@asynccontextmanager
async def watched(
    transport: Transport, lost: anyio.Event, on_lane: Callable[[Lane | None], None]
) -> AsyncIterator[TransportStreams]:
    """`transport`, with its read stream wrapped so that `lost` is set when it ends; `on_lane` gets the
    transport's direct lane (stdio connections have one) or None."""
    async with transport as (read, write):
        watcher = EofWatcher(read, lost)
        on_lane(watcher.lane)
        yield watcher, write
