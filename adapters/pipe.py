"""One newline-delimited JSON-RPC pipe, used by the stdio front (toward the client) and the stdio adapter
(toward a downstream server).

Reading: bytes are split into lines in linear time with a per-line cap (`LineSplitter`), each line is
parsed (big ones in a worker thread) and handed on as a message, an `Oversized` record, or the parse
error with its line. A big line's buffer is released as soon as it is parsed.

Writing: lines are queued by whoever sends and written several per `write()` when they queue up meanwhile (a
batch under load). When the sink can write without waiting (`NowaitSink`), the lines posted while nothing was
queued are written by a callback at the end of the event loop's turn (`_flush`): most messages never wake the
writer task, and those posted in the same turn still share one `write()`. What the pipe does not take at once is
written by the writer task. A writer waits while more than `HIGH_WATER` bytes are queued, so a 100 MB answer
written in slices is streamed, never held twice.
"""

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

import anyio
import mcp.types as types
from anyio.abc import ByteReceiveStream, ByteSendStream
from pydantic_core import from_json, to_json

from adapters import jsonwire
from adapters.fds import NowaitSink
from adapters.lines import BIG_LINE_BYTES, LineSplitter, Oversized, check_id, parse, validate_small

logger = logging.getLogger(__name__)

HIGH_WATER = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A line that is not a JSON-RPC message: the parse error and the line's start (for its id)."""

    problem: ValueError
    line: bytes


Incoming = types.JSONRPCMessage | Oversized | Unreadable
Deliver = Callable[[Incoming], Awaitable[bool]]
"""Takes one incoming item; returns False to stop listening (the pipe still drains its source)."""
Take = Callable[[Any], bool]
"""Takes a small line's decoded JSON before it is validated as a message: True when it served it (the line is not
delivered), False to have it validated and delivered. For the one case a hot path recognizes by itself."""


class NdjsonPipe:
    """Messages in from `source`, lines out to `sink`; see the module docstring."""

    def __init__(self, source: ByteReceiveStream, sink: ByteSendStream, limit: int) -> None:
        self.source, self.sink, self.limit = source, sink, limit
        self.pending_bytes = 0
        """Bytes of an unterminated last line when the source ended."""
        self._nowait = sink.send_nowait if isinstance(sink, NowaitSink) else None
        self._outbox: list[bytes | memoryview] = []
        self._queued = 0
        self._ready = anyio.Event()
        self._busy = False
        """Lines are queued or being written."""
        self._flushing = False
        """A `_flush` is scheduled: it writes what is queued."""
        # Made only when someone waits (rarely): a message costs one event, the writer's wake-up.
        self._drained: anyio.Event | None = None
        self._idle: anyio.Event | None = None
        self._broken: BaseException | None = None

    # -- reading -------------------------------------------------------------------------------

    async def read(self, deliver: Deliver, take: Take | None = None) -> None:
        """Deliver every message until the source ends (each small line offered to `take` first); after `deliver`
        says stop, drain without parsing (a peer blocked on a full pipe could otherwise never notice its input
        closing)."""
        splitter = LineSplitter(self.limit)
        listening = True
        try:
            while True:
                try:
                    chunk = await self.source.receive()
                except anyio.EndOfStream:
                    break
                lines = splitter.feed(chunk)
                del chunk
                lines.reverse()
                while lines:
                    item = lines.pop()  # off the list, so a big line's buffer is freed once parsed
                    if listening:
                        incoming = await self._incoming(item, take)
                        if incoming is not None:
                            listening = await deliver(incoming)
                        del incoming
                    del item
        finally:
            self.pending_bytes = splitter.pending

    @staticmethod
    async def _incoming(item: bytearray | Oversized, take: Take | None) -> Incoming | None:
        """The message `item` is, or None when `take` served it."""
        if isinstance(item, Oversized):
            return item
        try:
            if take is not None and len(item) < BIG_LINE_BYTES:
                try:
                    data = from_json(item)
                except ValueError:
                    message = await parse(item)  # not JSON: the same error as without `take`
                else:
                    if take(data):
                        return None
                    message = validate_small(data)
            else:
                message = await parse(item)
            check_id(message, item)
        except ValueError as exc:
            return Unreadable(exc, bytes(item[:256]))
        return message

    # -- writing -------------------------------------------------------------------------------

    async def post(self, data: bytes | memoryview) -> None:
        """Queue whole lines (or consecutive slices of one); waits while the queue is over `HIGH_WATER`.

        Raises:
            anyio.BrokenResourceError: the sink failed (the peer stopped reading).
        """
        if self._broken is not None:
            raise anyio.BrokenResourceError from self._broken
        self._outbox.append(data)
        self._queued += len(data)
        if not self._busy and self._nowait is not None:
            # Nothing queued nor being written: the flush writes this line and those posted before it runs.
            asyncio.get_running_loop().call_soon(self._flush, self._nowait)
            self._flushing = True
        elif not self._flushing:  # else the flush takes this line too, in order
            self._ready.set()
        self._busy = True
        while self._queued > HIGH_WATER and self._broken is None:
            if self._drained is None:
                self._drained = anyio.Event()
            await self._drained.wait()

    def _flush(self, nowait: Callable[[bytes | memoryview], int]) -> None:
        self._flushing = False
        lines, self._outbox, self._queued = self._outbox, [], 0
        data = lines[0] if len(lines) == 1 else b"".join(lines)
        del lines
        written = nowait(data)
        self._wake_drained()
        if written == len(data):
            self._wake_idle()
            return
        rest = memoryview(data)[written:]  # without copying it; before anything posted after this turn
        self._outbox.append(rest)
        self._queued += len(rest)
        self._ready.set()

    async def send_message(self, message: types.JSONRPCMessage) -> None:
        """One message and its newline; a big response is encoded and queued in slices (see `jsonwire`)."""
        if not isinstance(message, types.JSONRPCResponse) or jsonwire.text_size(message.result) <= jsonwire.STREAM_FROM:
            await self.post(message.__pydantic_serializer__.to_json(message, by_alias=True, exclude_unset=True) + b"\n")
            return
        await self.send_json(message.model_dump(mode="json", by_alias=True, exclude_unset=True))  # shares the strings

    async def send_json(self, message: Any, *, small: bool = False) -> None:
        """One message given as plain JSON data, and its newline; a big one is encoded and queued in slices.
        `small`: the caller knows its strings add up to at most `jsonwire.STREAM_FROM` characters (not counted)."""
        if small or jsonwire.text_size(message) <= jsonwire.STREAM_FROM:
            await self.post(to_json(message) + b"\n")
            return
        for piece in jsonwire.slices(message):
            await self.post(piece)
        await self.post(b"\n")

    async def write(self, on_broken: Callable[[], None] = lambda: None) -> None:
        """The pipe's one writer: run it beside the pipe. `on_broken` runs when the sink fails."""
        try:
            while True:
                await self._ready.wait()
                self._ready = anyio.Event()
                lines, self._outbox, self._queued = self._outbox, [], 0
                self._wake_drained()
                # One write() per batch of whole lines, so no message is ever split by another.
                # A memoryview (the rest of a line written in part) is queued only for a `NowaitSink`, whose `send`
                # takes any buffer.
                await self.sink.send(cast(bytes, lines[0]) if len(lines) == 1 else b"".join(lines))
                del lines
                if not self._outbox:
                    self._wake_idle()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as exc:
            self._broken = exc
            self._wake_drained()
            self._wake_idle()
            on_broken()

    def _wake_drained(self) -> None:
        if self._drained is not None:
            self._drained.set()
            self._drained = None

    def _wake_idle(self) -> None:
        self._busy = False
        if self._idle is not None:
            self._idle.set()
            self._idle = None

    async def drained(self) -> None:
        """Wait until everything posted so far has been written (or the sink failed)."""
        while self._busy and self._broken is None:
            if self._idle is None:
                self._idle = anyio.Event()
            await self._idle.wait()
