"""A read stream that delegates to another: the base for wrappers that watch or annotate a transport's stream."""

from types import TracebackType
from typing import Any, Self

import anyio
from mcp.shared.message import SessionMessage

from gateway.sdk import ReadStream

Item = SessionMessage | Exception


class ReadStreamProxy:
    """Delegates to `inner`, keeping what the SDK and the gateway look for on a transport's read stream."""

    def __init__(self, inner: ReadStream[Item]) -> None:
        self._inner = inner

    @property
    def last_context(self) -> Any:
        # The SDK's dispatcher reads the sender's context from here when the transport provides one.
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Item:
        return await self._inner.receive()

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
