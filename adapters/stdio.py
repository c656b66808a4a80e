"""stdio transport: a child process speaking newline-delimited JSON-RPC (`NdjsonPipe`), with a lane for `tools/call`."""

import logging
import os
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager, suppress

import anyio
import anyio.to_thread
import mcp.types as types
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

from adapters.lane import Lane
from adapters.lines import Oversized, response_id
from adapters.link import Link
from adapters.pipe import Incoming, NdjsonPipe, Unreadable
from adapters.procgroup import kill_group
from adapters.spawn import open_child
from gateway.config import StdioServerConfig

logger = logging.getLogger(__name__)

# Grace for the server to exit after its stdin closes, then again after SIGTERM (the SDK's values).
EXIT_GRACE_S = 2.0
TERM_GRACE_S = 2.0
# How long already-accepted outgoing messages may take to reach the child's stdin at close.
_FLUSH_S = 0.5


@asynccontextmanager
async def stdio_transport(config: StdioServerConfig, *, max_message_bytes: int) -> AsyncGenerator[Link]:
    """Start the server in its own process group and bridge its pipes to the session's streams and a lane.

    Raises:
        OSError: the executable or working directory is missing or not usable; names the command.
    """
    command = config.command
    assert command is not None, "a package's server is given its environment's program (downstreams.envs)"
    try:
        # stderr is inherited: the server's diagnostics belong in the gateway's log.
        process = await open_child([command, *config.args], env=get_default_environment() | config.env, cwd=config.cwd)
    except OSError as exc:
        where = config.cwd or os.getcwd()
        raise type(exc)(exc.errno, f"cannot start MCP server {command!r} in {where}: {exc.strerror}") from exc
    # No await between the spawn and the try below, or a cancellation there would leak the child.
    connection = _Connection(process, os.path.basename(command), max_message_bytes)
    async with anyio.create_task_group() as tg:
        tg.start_soon(connection.read)
        tg.start_soon(connection.write)
        tg.start_soon(connection.pipe.write, connection.stop_reading)
        tg.start_soon(connection.lane.expire)
        tg.start_soon(connection.watch)
        try:
            yield Link((connection.read_recv, connection.write_send), connection.lane)
        finally:
            # Shielded so a cancelled caller cannot leak the process; every wait inside is bounded.
            with anyio.CancelScope(shield=True):
                await connection.close()
            tg.cancel_scope.cancel()


class _Connection:
    def __init__(self, process: Process, name: str, limit: int) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self.name = name
        self.limit = limit
        self.closing = False
        self.writer_done = anyio.Event()
        self.read_send: MemoryObjectSendStream[SessionMessage | Exception]
        self.read_recv: MemoryObjectReceiveStream[SessionMessage | Exception]
        self.read_send, self.read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        self.write_send: MemoryObjectSendStream[SessionMessage]
        self.write_recv: MemoryObjectReceiveStream[SessionMessage]
        self.write_send, self.write_recv = anyio.create_memory_object_stream[SessionMessage](0)
        self.pipe = NdjsonPipe(process.stdout, process.stdin, limit)
        self.lane = Lane(self.pipe.post)

    def stop_reading(self) -> None:
        """The child stopped reading: lane calls fail now, not at their timeout, and the session ends."""
        self.lane.close()
        self.read_send.close()

    async def read(self) -> None:
        """Deliver the child's messages; at EOF close the read stream so pending calls fail at once."""
        try:
            async with self.read_send:
                await self.pipe.read(self._deliver, self.lane.answer)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError):
            pass  # our own close() shut stdout under the read
        finally:
            self.lane.close()
        if self.pipe.pending_bytes and not self.closing:
            logger.warning(
                "MCP server %s: dropped %d bytes of an unterminated last line", self.name, self.pipe.pending_bytes
            )

    async def _deliver(self, item: Incoming) -> bool:
        try:
            match item:
                case Oversized():
                    logger.warning(
                        "MCP server %s sent a %d-byte message; dropped it (max_message_bytes is %d)",
                        self.name,
                        item.size,
                        self.limit,
                    )
                    problem = (
                        f"response from {self.name} is {item.size:,} bytes, over max_message_bytes ({self.limit:,})"
                    )
                    stray = ValueError(f"message of {item.size} bytes exceeds max_message_bytes ({self.limit})")
                    await self._fail(item.response_id(), problem, stray)
                case Unreadable(problem=problem, line=line):
                    first = _first_lines(problem)
                    logger.warning("MCP server %s sent a line that is not JSON-RPC: %s", self.name, first)
                    await self._fail(
                        response_id(line), f"response from {self.name} is not a valid answer: {first}", problem
                    )
                case _:
                    if not await self.lane.route(item):
                        await self.read_send.send(SessionMessage(item))
            return True
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return False  # the session stopped listening

    async def _fail(self, request_id: types.RequestId | None, problem: str, exc: Exception) -> None:
        """A line that cannot be delivered: fail the call it answers now (on the lane or the SDK session, whichever
        sent it) instead of leaving it to its timeout; a line that answers nothing is reported to the session."""
        if request_id is None:
            await self.read_send.send(exc)
            return
        answer = types.JSONRPCError(
            jsonrpc="2.0", id=request_id, error=types.ErrorData(code=types.INTERNAL_ERROR, message=problem)
        )
        if not await self.lane.route(answer):
            await self.read_send.send(SessionMessage(answer))

    async def write(self) -> None:
        """The SDK session's messages, queued on the pipe in order with the lane's."""
        try:
            async with self.write_recv:
                async for message in self.write_recv:
                    await self.pipe.post(
                        message.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
                    )
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            self.stop_reading()
        finally:
            self.writer_done.set()

    async def watch(self) -> None:
        """When the server dies on its own, also end its group so stdout reaches EOF."""
        code = await self.process.wait()
        if self.closing:
            return
        logger.warning("MCP server %s (pid %d) exited with code %d", self.name, self.process.pid, code)
        # A surviving grandchild holding the stdout pipe would otherwise keep the reader from EOF,
        # leaving in-flight calls hanging instead of failing with "Connection closed".
        await kill_group(self.process, TERM_GRACE_S)

    async def close(self) -> None:
        self.closing = True
        self.write_send.close()
        with anyio.move_on_after(_FLUSH_S):
            await self.writer_done.wait()
            await self.pipe.drained()
        assert self.process.stdin is not None
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await self.process.stdin.aclose()
        with anyio.move_on_after(EXIT_GRACE_S):
            await self.process.wait()
        # Even when the server exited cleanly, children it left in its group must not survive it.
        await kill_group(self.process, TERM_GRACE_S)
        with anyio.move_on_after(TERM_GRACE_S):
            await self.process.aclose()
        if self.process.returncode is None:
            logger.error("MCP server %s (pid %d) survived SIGKILL; abandoning it", self.name, self.process.pid)
        self.read_recv.close()


def _first_lines(exc: Exception) -> str:
    """Enough of an error to say what is wrong (a pydantic error lists every member of the message union)."""
    return " ".join(str(exc).splitlines()[:3])[:300]
