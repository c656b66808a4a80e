"""The floor under any MCP proxy written in Python in front of a stdio server: a relay that does nothing else.

Usage: `python -m bench.relay_floor --port PORT -- COMMAND [ARGS...]` serves POST /mcp on 127.0.0.1:PORT
with uvicorn (uvloop, httptools, as the gateway), writes each JSON-RPC body to the child's stdin as one
line under a fresh id, and answers with the child's reply under the caller's id.
`python -m bench.relay_floor --stdio -- COMMAND [ARGS...]` copies lines between its own stdio and the
child's (uvloop; one client, so ids need no rewriting).
No validation, no namespacing, no pipeline, no tracing, no size guard, no second era: whatever a real
gateway does costs time on top of this. `bench.peers` and `bench.http_reference` measure it beside the
gateway: the ratio of this floor to the direct connection is what the extra process hop alone costs.
"""

import argparse
import asyncio
import itertools
import json
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import uvicorn
import uvloop
from starlette.types import Receive, Scope, Send

_JSON = [(b"content-type", b"application/json")]


class Relay:
    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self.ids = itertools.count(1)
        self.waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.child: asyncio.subprocess.Process | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        pipe = asyncio.subprocess.PIPE
        self.child = await asyncio.create_subprocess_exec(*self.argv, stdin=pipe, stdout=pipe, limit=1 << 30)
        reader = asyncio.ensure_future(self._read())
        try:
            yield
        finally:
            reader.cancel()
            self.child.terminate()
            await self.child.wait()

    async def _read(self) -> None:
        assert self.child is not None and self.child.stdout is not None
        while line := await self.child.stdout.readline():
            reply = json.loads(line)
            future = self.waiting.pop(reply.get("id"), None)
            if future is not None:
                future.set_result(reply)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["method"] != "POST":
            await _send(send, 405, b"")
            return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        request = json.loads(body)
        assert self.child is not None and self.child.stdin is not None
        if "id" not in request:  # a notification
            self.child.stdin.write(body + b"\n")
            await _send(send, 202, b"")
            return
        caller_id, request["id"] = request["id"], f"relay-{next(self.ids)}"
        future = self.waiting[request["id"]] = asyncio.get_running_loop().create_future()
        self.child.stdin.write(json.dumps(request).encode() + b"\n")
        reply = await future
        reply["id"] = caller_id
        await _send(send, 200, json.dumps(reply).encode())

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        await receive()  # lifespan.startup
        async with self.running():
            await send({"type": "lifespan.startup.complete"})
            await receive()  # lifespan.shutdown
        await send({"type": "lifespan.shutdown.complete"})


async def _send(send: Send, status: int, body: bytes) -> None:
    headers = [*_JSON, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def copy_stdio(argv: list[str]) -> None:
    """Lines from our stdin to the child's, and from the child's stdout to ours, until the client goes."""
    loop = asyncio.get_running_loop()
    pipe = asyncio.subprocess.PIPE
    child = await asyncio.create_subprocess_exec(*argv, stdin=pipe, stdout=pipe, limit=1 << 30)
    assert child.stdin is not None and child.stdout is not None
    incoming = asyncio.StreamReader(limit=1 << 30)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(incoming), sys.stdin)
    outgoing, _ = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, sys.stdout)

    async def copy(source: asyncio.StreamReader, write: Callable[[bytes], None]) -> None:
        while line := await source.readline():
            write(line)

    back = asyncio.ensure_future(copy(child.stdout, outgoing.write))
    await copy(incoming, child.stdin.write)
    child.stdin.close()  # the client went: the child ends, and with its output the copy back
    await back
    await child.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--port", type=int, help="serve Streamable HTTP on this port")
    where.add_argument("--stdio", action="store_true", help="serve on stdio")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    argv = args.command[1:] if args.command[:1] == ["--"] else args.command
    if args.stdio:
        uvloop.run(copy_stdio(argv))
        return
    uvicorn.run(Relay(argv), host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
