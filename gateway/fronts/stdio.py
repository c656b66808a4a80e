"""The stdio front: the client's pipes as an `NdjsonPipe` (shared with the stdio adapter), and a JSON-RPC error
for every line that is not a message.

The SDK's `stdio_server` reads and writes through worker threads (two or three thread hops per
message), drops unparseable lines silently, and cannot stop while its thread waits for a line: a gateway
on a terminal would not end on Ctrl-C or SIGTERM until the next Enter. This transport waits on the event
loop instead, whatever stdin and stdout are: pipes and sockets (how IDEs launch us), a terminal (opened
again by its name, so the non-blocking mode the loop needs is not the shell's too), a file or /dev/null
(never waited on: they never block).
"""

import json
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp.types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from adapters.fds import FdStream
from adapters.lines import BadId, NotJson, Oversized, request_id
from adapters.pipe import Incoming, NdjsonPipe, Unreadable
from gateway.errors import jsonrpc_error
from gateway.fronts import probe
from gateway.fronts.lanes.stdio import StdioLane
from gateway.fronts.server import Front
from gateway.sdk import ReadStream, WriteStream
from gateway.telemetry.repeats import Repeating

logger = logging.getLogger(__name__)
repeats = Repeating(logger)

Streams = tuple[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]]


def rejection(problem: Exception | Oversized, limit: int, line: bytes | bytearray = b"") -> SessionMessage:
    """JSON-RPC's answer to a line that is not a message: an error with the request's id when its start shows
    one (so the caller is not left waiting), else id null."""
    if isinstance(problem, Oversized):
        message = (
            f"Message of {problem.size:,} bytes exceeds the gateway's limit of {limit:,} bytes "
            "(limits.max_message_bytes). Send a file path or a summary instead of the content."
        )
        error = types.ErrorData(code=types.INVALID_REQUEST, message=message)
        return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=problem.request_id(), error=error))
    errors = problem.errors() if isinstance(problem, ValidationError) else []
    json_ok = not isinstance(problem, NotJson) and not any(e["type"] == "json_invalid" for e in errors)
    code, what = (types.INVALID_REQUEST, "not a JSON-RPC message") if json_ok else (types.PARSE_ERROR, "not valid JSON")
    why = f" ({errors[0]['msg']})" if errors else ""
    message = f"The gateway could not read a line: it is {what}{why}. Send one JSON-RPC 2.0 object per line."
    error = types.ErrorData(code=code, message=message)
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id(line), error=error))


def bad_id_answer(value: Any) -> bytes:
    """The answer to a request whose id is neither a string nor an integer.

    JSON-RPC answers an unusable id with id null; a number with a fraction is echoed, so a client that
    sent it can still match the answer. Raw bytes: the SDK's message types cannot carry such an id.
    """
    message = (
        f"The request's id {json.dumps(value)[:80]} is not a string or an integer (JSON-RPC 2.0 and MCP require "
        "one of the two); nothing was done. Send it again with a string or integer id."
    )
    echo = value if isinstance(value, float) else None
    return json.dumps(jsonrpc_error(echo, types.INVALID_REQUEST, message)).encode() + b"\n"


def _own(saved: int, flags: int) -> int:
    """The descriptor the wire uses for `saved` (a dup of stdin or stdout). A terminal is opened again by its name:
    a description of its own, so making it non-blocking leaves the shell's as it was (a shell reading a
    non-blocking terminal gets EAGAIN, and may exit). Anything else is used as it is."""
    if os.isatty(saved):
        try:
            return os.open(os.ttyname(saved), flags | os.O_NOCTTY)
        except OSError:
            pass  # no name to open it by: the shared description it is (restored at the end)
    return saved


class _Front:
    """The client's pipe (`NdjsonPipe` over fds 0 and 1) bridged to the SDK server's streams."""

    def __init__(self, pipe: NdjsonPipe, lane: StdioLane | None) -> None:
        self.pipe = pipe
        self.lane = lane
        self.read_send: MemoryObjectSendStream[SessionMessage | Exception]
        self.read_recv: MemoryObjectReceiveStream[SessionMessage | Exception]
        self.read_send, self.read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        self.write_send: MemoryObjectSendStream[SessionMessage]
        self.write_recv: MemoryObjectReceiveStream[SessionMessage]
        self.write_send, self.write_recv = anyio.create_memory_object_stream[SessionMessage](16)
        self.written = anyio.Event()
        self.opened = False
        """Whether a request decided the connection's era (`probe`: a refused one does not)."""

    async def read(self) -> None:
        async with self.read_send:  # the client closed stdin: the session ends
            await self.pipe.read(self._deliver, None if self.lane is None else self.lane.take_decoded)

    async def _deliver(self, item: Incoming) -> bool:
        limit = self.pipe.limit
        match item:
            case Oversized():
                repeats.warning("stdio front: rejected a %d-byte message (limit %d)", item.size, limit)
                await self.pipe.send_message(rejection(item, limit).message)
            case Unreadable(problem=BadId(value=value)):
                logger.info("stdio front: refused a request with id %.40r", value)
                await self.pipe.post(bad_id_answer(value))
            case Unreadable(problem=problem, line=line):
                repeats.warning("stdio front: unreadable line starting %r", line[:40])
                await self.pipe.send_message(rejection(problem, limit, line).message)
            case types.JSONRPCRequest() if not self.opened and (refused := probe.refusal(item)) is not None:
                await self.pipe.send_message(refused)
            case types.JSONRPCRequest() if not self.opened:
                self.opened = True
                await self._pass(item)
            case _:
                await self._pass(item)
        return True

    async def _pass(self, item: types.JSONRPCMessage) -> None:
        """A message for the lane, or else the SDK."""
        if self.lane is None or not self.lane.take(item):
            await self.read_send.send(SessionMessage(item))

    async def write(self) -> None:
        try:
            async with self.write_recv:
                async for item in self.write_recv:
                    if self.lane is not None:
                        self.lane.answered(item.message)
                    await self.pipe.send_message(item.message)
        except anyio.BrokenResourceError:
            logger.info("stdio front: the client closed stdout")
        finally:
            self.written.set()


@asynccontextmanager
async def stdio_wire(limit: int, front: Front | None = None) -> AsyncIterator[Streams]:
    """Claim fds 0 and 1 for the protocol; while serving, fd 0 reads /dev/null and fd 1 goes to stderr,
    so a stray print or a child inheriting them cannot corrupt the wire. With `front`, its plain tool
    calls take the lane (`stdio_lane`)."""
    saved_in, saved_out = os.dup(0), os.dup(1)
    fd_in, fd_out = _own(saved_in, os.O_RDONLY), _own(saved_out, os.O_WRONLY)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    os.set_blocking(fd_in, False)
    os.set_blocking(fd_out, False)
    fds = FdStream(fd_in, fd_out)
    pipe = NdjsonPipe(fds, fds, limit)
    lane = None if front is None else StdioLane(front, pipe)
    wire = _Front(pipe, lane)
    try:
        async with anyio.create_task_group() as tg:
            if lane is not None:
                await tg.start(lane.serve)
            tg.start_soon(wire.read)
            tg.start_soon(wire.write)
            tg.start_soon(wire.pipe.write)
            yield wire.read_recv, wire.write_send
            # Let the writer drain what the server queued before it returned, then stop reading.
            await wire.write_send.aclose()
            with anyio.move_on_after(5):
                await wire.written.wait()
                await wire.pipe.drained()
            tg.cancel_scope.cancel()
    finally:
        await fds.aclose()  # the loop stops watching fd_in before it is closed
        for fd, saved, std in ((fd_in, saved_in, 0), (fd_out, saved_out, 1)):
            if fd != saved:
                os.close(fd)
            os.set_blocking(saved, True)
            os.dup2(saved, std)
            os.close(saved)


async def serve_stdio(front: Front, *, max_message_bytes: int) -> None:
    """Serve the front's server on this process's stdin/stdout until the client closes stdin."""
    server = front.server
    options = server.create_initialization_options()
    front.relay.sole = True  # one client per process: a server's roots/list outside a call asks it
    async with stdio_wire(max_message_bytes, front) as (read, write):
        await server.run(read, write, options)
