"""The stdio front: the SDK's stdio transport, plus a JSON-RPC error for every line that is not a message."""

import logging
from typing import Any

import anyio
import mcp.types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

logger = logging.getLogger(__name__)


def _rejection(exc: Exception) -> SessionMessage:
    """The SDK drops unparseable lines silently; JSON-RPC wants an answer with id null."""
    parse = isinstance(exc, ValidationError) and any(e["type"] == "json_invalid" for e in exc.errors())
    code, what = (types.PARSE_ERROR, "not valid JSON") if parse else (types.INVALID_REQUEST, "not a JSON-RPC message")
    message = f"The gateway could not read a line: it is {what}. Send one JSON-RPC 2.0 object per line."
    error = types.ErrorData(code=code, message=message)
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=None, error=error))


async def relay_answering_garbage(
    source: ReadStream[SessionMessage | Exception],
    sink: anyio.abc.ObjectSendStream[SessionMessage | Exception],
    write: WriteStream[SessionMessage],
) -> None:
    """Pass messages from `source` to `sink`; answer each bad line on `write` instead of passing it."""
    async with sink:
        async for item in source:
            if isinstance(item, Exception):
                logger.warning("stdio front: unreadable line: %s", type(item).__name__)
                await write.send(_rejection(item))
                continue
            await sink.send(item)


async def serve_stdio(server: Server[Any]) -> None:
    """Serve `server` on this process's stdin/stdout until the client closes stdin."""
    async with stdio_server() as (read, write):
        send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        async with anyio.create_task_group() as tg:
            tg.start_soon(relay_answering_garbage, read, send, write)
            await server.run(receive, write, server.create_initialization_options())
            tg.cancel_scope.cancel()
