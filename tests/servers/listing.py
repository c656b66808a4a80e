"""A stdio MCP server that lists one server's tools from a JSON file and echoes calls (scale benches).

`--file F --server NAME`: F holds `[{"server": NAME, "tools": [{"name", "description", "inputSchema"}, ...]}, ...]`
(bench/livemcptool/tools.json: the LiveMCPTool catalog). Each server of the catalog runs as one such process
behind the gateway, so the gateway aggregates real stdio servers with real definitions; a call answers with
its arguments as JSON text (no server of the catalog is run for real).
"""

import argparse
import json
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

Ctx = ServerRequestContext[Any]


def tools_of(path: Path, server: str) -> list[types.Tool]:
    """The tools `server` has in the catalog file."""
    for entry in json.loads(path.read_text(encoding="utf-8")):
        if entry["server"] == server:
            return [
                types.Tool(name=t["name"], description=t["description"], input_schema=t["inputSchema"])
                for t in entry["tools"]
            ]
    raise SystemExit(f"no server {server!r} in {path}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--file", type=Path, required=True)
    parser.add_argument("--server", required=True)
    args = parser.parse_args(argv)
    tools = tools_of(args.file, args.server)
    names = {t.name for t in tools}

    async def list_tools(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in names:
            return types.CallToolResult(content=[types.TextContent(text=f"Unknown tool: {params.name}")], is_error=True)
        return types.CallToolResult(content=[types.TextContent(text=json.dumps(params.arguments or {}))])

    server: Server[Any] = Server(args.server, version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve)


if __name__ == "__main__":
    main()
