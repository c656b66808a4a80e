"""stdio transport: a child process speaking newline-delimited JSON-RPC, read in linear time."""

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

from adapters._procgroup import kill_group
from adapters.lane import Lane
from adapters.lines import LineSplitter, Oversized, parse
from adapters.readstream import ReadStreamProxy
from gateway.config import StdioServerConfig
from gateway.sdk import TransportStreams

logger = logging.getLogger(__name__)

# Grace for the server to exit after its stdin closes, then again after SIGTERM (the SDK's values).
EXIT_GRACE_S = 2.0
TERM_GRACE_S = 2.0
# How long already-accepted outgoing messages may take to reach the child's stdin at close.
_FLUSH_S = 0.5


@asynccontextmanager
async def stdio_transport(config: StdioServerConfig, *, max_message_bytes: int) -> AsyncGenerator[TransportStreams]:
    """Start the server in its own process group and bridge its pipes to the session's streams.

    Raises:
        OSError: the executable or working directory is missing or not usable; names the command.
    """
    try:
        process = await anyio.open_process(
            [config.command, *config.args],
            env=get_default_environment() | config.env,
            cwd=config.cwd,
            stderr=None,  # inherit: the server's diagnostics belong in the gateway's log
            start_new_session=True,
        )
    except OSError as exc:
        where = config.cwd or os.getcwd()
        raise type(exc)(exc.errno, f"cannot start MCP server {config.command!r} in {where}: {exc.strerror}") from exc
    # No await between the spawn and the try below, or a cancellation there would leak the child.
    connection = _Connection(process, os.path.basename(config.command), max_message_bytes)
    async with anyio.create_task_group() as tg:
        tg.start_soon(connection.read)
        tg.start_soon(connection.write)
        tg.start_soon(connection.flush)
        tg.start_soon(connection.lane.expire)
        tg.start_soon(connection.watch)
        try:
            yield connection.streams
        finally:
            # Shielded so a cancelled caller cannot leak the process; every wait inside is bounded.
            with anyio.CancelScope(shield=True):
                await connection.close()
            tg.cancel_scope.cancel()


class _Connection:
    def __init__(self, process: Process, name: str, limit: int) -> None:
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
        self._outbox: list[bytes] = []
        self._outbox_ready = anyio.Event()
        self.lane = Lane(self._post)

    @property
    def streams(self) -> TransportStreams:
        return ReadStreamProxy(self.read_recv, self.lane), self.write_send

    async def _post(self, line: bytes) -> None:
        """Queue a lane line; `flush` writes what queued up meanwhile in one write (a batch under load)."""
        self._outbox.append(line)
        self._outbox_ready.set()

    async def flush(self) -> None:
        assert self.process.stdin is not None
        try:
            while True:
                await self._outbox_ready.wait()
                self._outbox_ready = anyio.Event()
                lines, self._outbox = self._outbox, []
                # One write() per batch of whole lines, so the SDK writer's messages never split one.
                await self.process.stdin.send(lines[0] if len(lines) == 1 else b"".join(lines))
                del lines
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            self.lane.close()  # the child stopped reading: lane calls fail now, not at their timeout

    async def read(self) -> None:
        """Split stdout into messages; at EOF close the read stream so pending calls fail at once."""
        assert self.process.stdout is not None
        splitter = LineSplitter(self.limit)
        listening = True
        try:
            async with self.read_send:
                async for chunk in self.process.stdout:
                    lines = splitter.feed(chunk)
                    lines.reverse()
                    while lines:
                        # Once the session stops listening we still drain, or a child blocked on a
                        # full stdout pipe could never notice its stdin closing and exit.
                        if listening:
                            listening = await self._deliver(lines)
                        else:
                            lines.pop()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError):
            pass  # our own close() shut stdout under the read
        finally:
            self.lane.close()
        if splitter.pending and not self.closing:
            logger.warning("MCP server %s: dropped %d bytes of an unterminated last line", self.name, splitter.pending)

    async def _deliver(self, lines: list[bytearray | Oversized]) -> bool:
        """Deliver the last of `lines` (taken off the list, so a big line's buffer is freed once parsed)."""
        item = lines.pop()
        try:
            if isinstance(item, Oversized):
                for message in self._rejection(item):
                    await self.read_send.send(message)
                return True
            try:
                parsed = await parse(item)
                del item
            except ValueError as exc:
                logger.warning("MCP server %s sent a line that is not JSON-RPC: %s", self.name, exc)
                await self.read_send.send(exc)
                return True
            if not await self.lane.route(parsed):
                await self.read_send.send(SessionMessage(parsed))
            return True
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return False

    def _rejection(self, item: Oversized) -> list[SessionMessage | Exception]:
        logger.warning(
            "MCP server %s sent a %d-byte message; dropped it (max_message_bytes is %d)",
            self.name,
            item.size,
            self.limit,
        )
        error = ValueError(f"message of {item.size} bytes exceeds max_message_bytes ({self.limit})")
        out: list[SessionMessage | Exception] = [error]
        # Fail the call the dropped response belonged to now, instead of leaving it to its timeout.
        request_id = item.response_id()
        if request_id is not None:
            data = types.ErrorData(
                code=types.INTERNAL_ERROR,
                message=f"response from {self.name} is {item.size} bytes, over max_message_bytes ({self.limit})",
            )
            out.append(SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=data)))
        return out

    async def write(self) -> None:
        assert self.process.stdin is not None
        try:
            async with self.write_recv:
                async for message in self.write_recv:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await self.process.stdin.send(data.encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            # The child stopped reading; end the session rather than let requests wait forever.
            await self.read_send.aclose()
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
