"""A read-stream wrapper that reports end-of-stream, so a dead downstream is noticed even when idle."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any, Self

import anyio
from mcp.client._transport import Transport, TransportStreams
from mcp.shared._stream_protocols import ReadStream
from mcp.shared.message import SessionMessage

Item = SessionMessage | Exception


class EofWatcher:
    """Delegates to `inner`; sets `lost` when the stream ends (the peer closed or the process exited)."""

    def __init__(self, inner: ReadStream[Item], lost: anyio.Event) -> None:
        self._inner = inner
        self._lost = lost

    @property
    def last_context(self) -> Any:
        # The SDK's dispatcher reads the sender's context from here when the transport provides one.
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Item:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._lost.set()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Item:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


@asynccontextmanager
async def watched(transport: Transport, lost: anyio.Event) -> AsyncIterator[TransportStreams]:
    """`transport`, with its read stream wrapped so that `lost` is set when it ends."""
    async with transport as (read, write):
        yield EofWatcher(read, lost), write
