"""Non-blocking descriptors on the event loop: a pipe read by one reader the loop keeps watching (`FdReader`), a
write that never waits (`write_nowait`, for `NdjsonPipe`'s flush), and the stdio front's descriptor pair.

Reading: one reader registered on the event loop for as long as someone reads.

`anyio.wait_readable` registers the descriptor with the loop and removes it again for every read: two
`epoll_ctl` calls, a future and a context lookup per message, twice per forwarded call (the client's
line in, the server's answer back). Here the loop keeps watching while a reader waits, and the loop's
callback reads the chunk itself. When a chunk arrives and nobody waits (the reader is busy delivering
the last one), the watch is dropped, so the data stays in the pipe and its writer feels the back
pressure; the next `receive` reads it directly. At most one chunk is held here.
"""

import asyncio
import os
from typing import Protocol, runtime_checkable

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

CHUNK = 1024 * 1024
"""Bytes read at most at once."""


class FdReader:
    """Chunks from non-blocking descriptor `fd` (asyncio loops only); `detach` before closing it."""

    def __init__(self, fd: int) -> None:
        self.fd: int | None = fd
        self._chunk = 0
        """The size the waiting reader asked for."""
        self._loop: asyncio.AbstractEventLoop | None = None
        """Set while the loop watches the descriptor."""
        self._waiter: asyncio.Future[None] | None = None
        # What the loop's callback read for a waiter: kept here, not in the future, so a reader cancelled just
        # after being woken loses nothing (the next `receive` returns it).
        self._read: bytes | None = None
        self._failure: OSError | None = None

    async def receive(self, max_bytes: int) -> bytes:
        """The next chunk, of at most `max_bytes`.

        Raises:
            anyio.EndOfStream: the writer closed its end.
            anyio.ClosedResourceError: the descriptor was detached (closed), also while waiting.
            OSError: reading failed.
        """
        self._chunk = max_bytes
        while self._read is None and self._failure is None:
            if self.fd is None:
                raise anyio.ClosedResourceError
            if self._loop is None:
                try:
                    return _chunk_or_end(os.read(self.fd, max_bytes))
                except BlockingIOError:
                    self._loop = asyncio.get_running_loop()
                    self._loop.add_reader(self.fd, self._readable)
            self._waiter = self._loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        if self._failure is not None:
            raise self._failure
        data, self._read = self._read, None
        assert data is not None
        return _chunk_or_end(data)

    def _readable(self) -> None:
        waiter = self._waiter
        if waiter is None or waiter.done() or self.fd is None:
            self._unwatch()  # nobody waits: the data waits in the pipe
            return
        try:
            self._read = os.read(self.fd, self._chunk)
        except BlockingIOError:
            return
        except OSError as exc:
            self._failure = exc
        waiter.set_result(None)

    def _unwatch(self) -> None:
        if self._loop is not None and self.fd is not None:
            self._loop.remove_reader(self.fd)
        self._loop = None

    def detach(self) -> None:
        """Stop watching the descriptor (its owner closes it next); a waiting `receive` raises ClosedResourceError."""
        self._unwatch()
        self.fd = None
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


def _chunk_or_end(data: bytes) -> bytes:
    if not data:
        raise anyio.EndOfStream
    return data


@runtime_checkable
class NowaitSink(Protocol):
    def send_nowait(self, item: bytes | memoryview) -> int:
        """Write what the sink takes without waiting: how many bytes (0 when it would block or fails; the writer
        task then meets the failure on its own write)."""


def write_nowait(fd: int | None, item: bytes | memoryview) -> int:
    if fd is None:
        return 0
    try:
        return os.write(fd, item)
    except OSError:
        return 0


class FdStream(ByteReceiveStream, ByteSendStream):
    """A non-blocking file-descriptor pair as anyio byte streams, waited on by the event loop (no threads)."""

    def __init__(self, fd_in: int, fd_out: int) -> None:
        self.fd_in, self.fd_out = fd_in, fd_out
        self._reader = FdReader(fd_in)

    async def receive(self, max_bytes: int = CHUNK) -> bytes:
        return await self._reader.receive(max_bytes)

    async def send(self, item: bytes) -> None:
        view = memoryview(item)
        while view:
            try:
                written = os.write(self.fd_out, view)
            except BlockingIOError:
                await anyio.wait_writable(self.fd_out)
                continue
            view = view[written:]

    def send_nowait(self, item: bytes | memoryview) -> int:
        return write_nowait(self.fd_out, item)

    async def send_eof(self) -> None:
        return None

    async def aclose(self) -> None:
        self._reader.detach()  # the fds belong to whoever made them: they close them next
