"""Kitchen-sink MCP test server for the gateway's tests and benchmarks (stdio, Streamable HTTP and legacy SSE)."""

import gc

if __name__ == "__main__":
    # Its imports (the SDK's models of two protocol eras) build ~10^5 objects and no garbage: the collector's passes
    # over them were a quarter of a start's CPU (0.53 -> 0.39 s), paid by each of the ~260 kitchens a suite run starts.
    gc.disable()

import argparse
import contextlib
import json
import logging
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from typing import Any, TextIO

import anyio
import mcp.types as types
import uvicorn
from mcp import MCPError
from mcp.server import InitializationOptions, NotificationOptions, Server, ServerRequestContext
from mcp.server.sse import SseServerTransport
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route

if __name__ == "__main__":
    gc.freeze()  # what the imports built stays out of every later pass
    gc.enable()

Ctx = ServerRequestContext[Any]
MAX_BODY = 256 * 1024 * 1024
NOTE_URI = "note://hello"
STR: dict[str, Any] = {"type": "string"}
INT: dict[str, Any] = {"type": "integer"}
NUM: dict[str, Any] = {"type": "number"}


def obj(**props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": props}


def text_result(text: str, structured: dict[str, Any] | None = None) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=structured)


BUILTIN: list[types.Tool] = [
    types.Tool(name="echo", description="Return the text unchanged.", input_schema=obj(text=STR)),
    types.Tool(name="measure", description="Report the length of the text.", input_schema=obj(text=STR)),
    types.Tool(
        name="blob",
        description="Return n copies of char (default 'x').",
        input_schema=obj(n=INT, char={**STR, "default": "x"}),
    ),
    types.Tool(
        name="slow",
        description="Report progress for each step, sleeping delay_s between steps.",
        input_schema=obj(steps={**INT, "default": 5}, delay_s={**NUM, "default": 0.2}),
    ),
    types.Tool(name="hang", description="Never return.", input_schema=obj()),
    types.Tool(name="crash", description="Kill the server process mid-call.", input_schema=obj()),
    types.Tool(name="boom", description="Raise ValueError('kaboom').", input_schema=obj()),
    types.Tool(name="pid", description="Return the server's process id.", input_schema=obj()),
    types.Tool(name="spawn_child", description="Start a `sleep 600` grandchild; return its pid.", input_schema=obj()),
    types.Tool(
        name="add_tool",
        description="Add an echo tool and announce list_changed (unless quiet).",
        input_schema=obj(name=STR, quiet={"type": "boolean"}),
    ),
]


REGION_TOOL = types.Tool(
    name="in_region",
    description="Report the region asked for and the Mcp-Name / Mcp-Param-* headers this request came with.",
    input_schema={
        "type": "object",
        "properties": {"region": {**STR, "x-mcp-header": "Region"}, "query": STR},
        "required": ["region"],
    },
)
"""`--region-tool`: the spec's `x-mcp-header` example. Over 2026-era HTTP the SDK refuses a call of it whose
`Mcp-Param-Region` header is missing or differs from `region` (-32020), and one whose `Mcp-Name` is not its name."""


def padding_tool(i: int) -> types.Tool:
    return types.Tool(
        name=f"tool_{i:03d}",
        description=(
            f"Synthetic catalog entry number {i:03d}. Looks up records matching the query, returns at most "
            "`limit` of them and adds diagnostic detail when `verbose` is set. "
            "In this test server it only echoes its arguments."
        ),
        input_schema=obj(
            query={**STR, "description": "Free-text search query."},
            limit={**INT, "description": "Maximum number of records to return.", "default": 10},
            verbose={"type": "boolean", "description": "Include diagnostic detail.", "default": False},
        ),
    )


def echo_tool(name: str) -> types.Tool:
    return types.Tool(name=name, description="Return the text unchanged.", input_schema=obj(text=STR))


class KitchenServer(Server[Any]):
    # StreamableHTTPSessionManager builds init options without NotificationOptions, which would
    # advertise tools.listChanged=false to handshake-era HTTP sessions.
    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
            extensions,
        )


class Kitchen:
    def __init__(
        self, name: str, events_path: str | None, n_tools: int, extra_tools: list[str], region_tool: bool = False
    ) -> None:
        self.name = name
        self.events: TextIO | None = open(events_path, "a", encoding="utf-8") if events_path else None
        self.tools: dict[str, types.Tool] = {t.name: t for t in BUILTIN}
        self.echoes: set[str] = set()
        self.padding: set[str] = set()
        for i in range(n_tools):
            tool = padding_tool(i)
            self.tools[tool.name] = tool
            self.padding.add(tool.name)
        for extra in extra_tools:
            self.add_echo(extra)
        if region_tool:
            self.tools[REGION_TOOL.name] = REGION_TOOL
        # Kept so the Popen objects are never collected (which would warn) while the children run.
        self.children: list[subprocess.Popen[bytes]] = []
        self.bus = InMemorySubscriptionBus()
        self.server = KitchenServer(
            name,
            version="1.0",
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=self.list_resources,
            on_read_resource=self.read_resource,
            on_list_prompts=self.list_prompts,
            on_get_prompt=self.get_prompt,
            on_subscriptions_listen=ListenHandler(self.bus),
        )

    def event(self, line: str) -> None:
        if self.events is not None:
            self.events.write(line + "\n")
            self.events.flush()

    def add_echo(self, name: str) -> None:
        self.tools[name] = echo_tool(name)
        self.echoes.add(name)

    def spawn_sleeper(self) -> int:
        child = subprocess.Popen(
            ["sleep", "600"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        self.children.append(child)
        return child.pid

    async def list_tools(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(self.tools.values()))

    async def call_tool(self, ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        name, args = params.name, params.arguments or {}
        self.event(f"call {name}")
        traceparent = (ctx.meta or {}).get("traceparent")
        if traceparent:
            self.event(f"traceparent {traceparent}")
        tracestate = (ctx.meta or {}).get("tracestate")
        if tracestate:
            self.event(f"tracestate {tracestate}")
        if name == "echo" or name in self.echoes:
            return text_result(str(args.get("text", "")))
        if name in self.padding:
            return text_result(json.dumps(args, sort_keys=True))
        if name == "measure":
            n = len(str(args.get("text", "")))
            return text_result(f"received {n} chars", {"len": n})
        if name == "blob":
            n = int(args["n"])
            return text_result((str(args.get("char") or "x") * n)[:n])
        if name == "slow":
            return await self.slow(ctx, int(args.get("steps", 5)), float(args.get("delay_s", 0.2)))
        if name == "hang":
            return await self.hang()
        if name == "crash":
            self.event("crash")
            os._exit(3)
        if name == "boom":
            raise ValueError("kaboom")
        if name == "pid":
            return text_result(str(os.getpid()))
        if name == REGION_TOOL.name:
            headers = getattr(ctx.request, "headers", None) or {}  # the HTTP request's (none on stdio)
            seen = {k: v for k, v in headers.items() if k in ("mcp-name", "mcp-param-region")}
            return text_result(json.dumps({"region": args.get("region"), "headers": seen}, sort_keys=True))
        if name == "spawn_child":
            return text_result(str(self.spawn_sleeper()))
        if name == "add_tool":
            return await self.add_tool(ctx, str(args["name"]), quiet=bool(args.get("quiet")))
        return types.CallToolResult(content=[types.TextContent(text=f"Unknown tool: {name}")], is_error=True)

    async def slow(self, ctx: Ctx, steps: int, delay_s: float) -> types.CallToolResult:
        try:
            for i in range(1, steps + 1):
                await ctx.session.report_progress(i, steps, f"step {i}")
                await anyio.sleep(delay_s)
        except anyio.get_cancelled_exc_class():
            self.event("cancelled slow")
            raise
        return text_result("slow done")

    async def hang(self) -> types.CallToolResult:
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.event("cancelled hang")
            raise
        raise AssertionError("unreachable")

    async def add_tool(self, ctx: Ctx, name: str, *, quiet: bool) -> types.CallToolResult:
        self.add_echo(name)
        if quiet:  # only a listing after the client's cache expired finds it
            return text_result(f"added {name}")
        # 2026-era sessions have no standalone channel; they only hear about it on subscriptions/listen.
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            await ctx.session.send_tool_list_changed()
        await self.bus.publish(ToolsListChanged())
        return text_result(f"added {name}")

    async def list_resources(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[types.Resource(uri=NOTE_URI, name="hello", mime_type="text/plain")])

    async def read_resource(self, ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        if params.uri != NOTE_URI:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown resource {params.uri}")
        contents = types.TextResourceContents(uri=NOTE_URI, mime_type="text/plain", text=f"hello from {self.name}")
        return types.ReadResourceResult(contents=[contents])

    async def list_prompts(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        arg = types.PromptArgument(name="name", description="Who to greet.", required=True)
        return types.ListPromptsResult(
            prompts=[types.Prompt(name="greet", description="Greet someone.", arguments=[arg])]
        )

    async def get_prompt(self, ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        if params.name != "greet":
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt {params.name}")
        who = (params.arguments or {}).get("name", "")
        message = types.PromptMessage(role="user", content=types.TextContent(text=f"Hello, {who}!"))
        return types.GetPromptResult(messages=[message])

    def build_app(self, json_response: bool) -> Starlette:
        manager = StreamableHTTPSessionManager(
            app=self.server, json_response=json_response, max_request_body_size=MAX_BODY
        )
        sse = SseServerTransport("/messages/", max_request_body_size=MAX_BODY)

        async def sse_endpoint(request: Request) -> Response:
            async with sse.connect_sse(request.scope, request.receive, request._send) as (read, write):
                await self.server.run(read, write, self.server.create_initialization_options())
            return Response()

        @contextlib.asynccontextmanager
        async def lifespan(app: Starlette) -> AsyncIterator[None]:
            async with manager.run():
                yield

        return Starlette(
            routes=[
                Route("/mcp", endpoint=StreamableHTTPASGIApp(manager)),
                Route("/sse", endpoint=sse_endpoint, methods=["GET"]),
                Mount("/messages/", app=sse.handle_post_message),
            ],
            lifespan=lifespan,
        )


def write_port_file(path: str, port: int) -> None:
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".port-")
    with os.fdopen(fd, "w") as f:
        f.write(f"{port}\n")
    os.replace(tmp, path)


async def serve_stdio(kitchen: Kitchen) -> None:
    async with stdio_server() as (read, write):
        await kitchen.server.run(read, write, kitchen.server.create_initialization_options())


class PortReportingServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, port_file: str | None) -> None:
        super().__init__(config)
        self.port_file = port_file

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started and self.port_file:
            write_port_file(self.port_file, int(self.servers[0].sockets[0].getsockname()[1]))


async def serve_http(kitchen: Kitchen, host: str, port: int, port_file: str | None, json_response: bool) -> None:
    app = kitchen.build_app(json_response)
    # log_config=None keeps uvicorn's access log off stdout; graceful shutdown must not wait on open SSE streams.
    config = uvicorn.Config(app, host=host, port=port, log_config=None, access_log=False, timeout_graceful_shutdown=1)
    await PortReportingServer(config, port_file).serve()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--name", default="kitchen")
    parser.add_argument("--transport", choices=["stdio", "http", "sse"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file")
    parser.add_argument("--events-file")
    parser.add_argument("--tools", type=int, default=0)
    parser.add_argument("--extra-tool", action="append", default=[])
    parser.add_argument("--json-response", action="store_true")
    parser.add_argument("--region-tool", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(name)s: %(message)s")
    kitchen = Kitchen(args.name, args.events_file, args.tools, args.extra_tool, args.region_tool)
    kitchen.event(f"started {os.getpid()}")
    if args.transport == "stdio":
        anyio.run(serve_stdio, kitchen)
    else:
        anyio.run(serve_http, kitchen, args.host, args.port, args.port_file, args.json_response)


if __name__ == "__main__":
    main()
