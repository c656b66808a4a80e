"""A connection whose read stream reports its end, so a dead downstream is noticed even when idle."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from adapters.link import Connector, Link
from adapters.readstream import Item, ReadStreamProxy
from gateway.sdk import ReadStream


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
async def watched(connector: Connector, lost: anyio.Event) -> AsyncIterator[Link]:
    """`connector`'s link, with its read stream wrapped so that `lost` is set when it ends."""
    async with connector as link:
        read, write = link.streams
        yield Link((EofWatcher(read, lost), write), link.lane)
