"""Test server that reports which credential it holds (its SHA-256): over stdio the `--env` variable it was started
with, over Streamable HTTP the `Authorization` header of each request. Its tools carry annotations for policy tests."""

import argparse
import contextlib
import hashlib
import json
import os
import socket
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp.types as types
import uvicorn
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.routing import Route

Ctx = ServerRequestContext[Any]
EMPTY: dict[str, Any] = {"type": "object", "properties": {}}
TOOLS = [
    types.Tool(
        name="whoami",
        description="Which credential this server holds, and its pid.",
        input_schema=EMPTY,
        annotations=types.ToolAnnotations(read_only_hint=True),
    ),
    types.Tool(
        name="wipe",
        description="Pretend to delete everything.",
        input_schema=EMPTY,
        annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=True),
    ),
    types.Tool(name="note", description="Pretend to write a note (no annotations).", input_schema=EMPTY),
]


def build(variable: str) -> Server[Any]:
    async def list_tools(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        request = ctx.request
        held = os.environ.get(variable) if request is None else request.headers.get("authorization")
        # A digest, not the value: the secret itself must not reach any log, even through a tool result.
        digest = None if held is None else hashlib.sha256(held.encode()).hexdigest()
        text = json.dumps({"tool": params.name, "holds_sha256": digest, "pid": os.getpid()})
        return types.CallToolResult(content=[types.TextContent(text=text)])

    return Server("holder", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)


class PortReportingServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, port_file: str) -> None:
        super().__init__(config)
        self.port_file = port_file

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            port = self.servers[0].sockets[0].getsockname()[1]
            await anyio.Path(self.port_file + ".tmp").write_text(f"{port}\n")
            os.replace(self.port_file + ".tmp", self.port_file)


async def serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


async def serve_http(server: Server[Any], port_file: str) -> None:
    manager = StreamableHTTPSessionManager(app=server)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    app = Starlette(routes=[Route("/mcp", endpoint=StreamableHTTPASGIApp(manager))], lifespan=lifespan)
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_config=None, access_log=False)
    await PortReportingServer(config, port_file).serve()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--env", default="USER_TOKEN", help="the variable holding the credential (stdio)")
    parser.add_argument("--port-file", help="serve Streamable HTTP on a free port and write it here")
    args = parser.parse_args()
    server = build(args.env)
    if args.port_file:
        anyio.run(serve_http, server, args.port_file)
    else:
        anyio.run(serve_stdio, server)


if __name__ == "__main__":
    main()
