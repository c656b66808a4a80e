"""The gateway's own tools, served as an in-process MCP server so they take the same path as any downstream."""

import json
from collections.abc import Callable
from typing import Any

import mcp.types as types
from mcp.server import Server, ServerRequestContext

from gateway import __version__

Ctx = ServerRequestContext[Any]
StatusFn = Callable[[], dict[str, dict[str, Any]]]

STATUS = types.Tool(
    name="status",
    description=(
        "Health of every server behind this gateway: state (starting|up|restarting|down), tool count, "
        "restarts, protocol and last error. Call it when a tool fails with 'unavailable' or is missing."
    ),
    input_schema={"type": "object", "properties": {}},
)


def build(status: StatusFn) -> Server[Any]:
    """An MCP server exposing `status` (reached as `gateway.status` through the registry)."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[STATUS])

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name != STATUS.name:
            return types.CallToolResult(
                content=[types.TextContent(text=f"Unknown tool {params.name!r}.")], is_error=True
            )
        servers = status()
        up = sum(1 for s in servers.values() if s["state"] == "up")
        body = {"servers": servers, "up": up, "total": len(servers)}
        text = f"{up}/{len(servers)} servers up.\n" + json.dumps(body, indent=1)
        return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=body)

    return Server("gateway", version=__version__, on_list_tools=list_tools, on_call_tool=call_tool)
