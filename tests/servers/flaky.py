"""Test server whose tool fails on demand, for Think's failure paths: the first `fail_first` calls per `key` fail,
as the model would see a real downstream fail, and the ones after succeed.

Tools:
  fetch {key, fail_first, how}  fails the first `fail_first` calls with this key (`how`: `tool_error`, an isError
                                result, the default; `server_error`, a JSON-RPC error; `hang`, no answer until the
                                caller's timeout), then answers {"key", "calls"}
  echo {text}                   answers {"text"}
"""

from typing import Any

import anyio
import mcp.types as types
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

Ctx = ServerRequestContext[Any]
TOOLS = [
    types.Tool(
        name="fetch",
        description="Fetch `key`; fails the first `fail_first` calls per key (how: tool_error, server_error, hang).",
        input_schema={
            "type": "object",
            "properties": {
                "key": {"type": "string"},
                "fail_first": {"type": "integer"},
                "how": {"enum": ["tool_error", "server_error", "hang"]},
            },
            "required": ["key"],
        },
    ),
    types.Tool(
        name="echo",
        description="Return the text.",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
    ),
]


def build() -> Server[Any]:
    calls: dict[str, int] = {}

    async def list_tools(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = params.arguments or {}
        if params.name == "echo":
            text = str(args.get("text", ""))
            return types.CallToolResult(content=[types.TextContent(text=text)], structured_content={"text": text})
        key = str(args.get("key", ""))
        calls[key] = count = calls.get(key, 0) + 1
        if count <= int(args.get("fail_first", 0)):
            message = f"{key} is unavailable (call {count} of {key})"
            match args.get("how", "tool_error"):
                case "server_error":
                    raise MCPError(code=-32000, message=message)
                case "hang":
                    await anyio.sleep_forever()
            return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)
        body = {"key": key, "calls": count}
        return types.CallToolResult(content=[types.TextContent(text=f"{key}: call {count}")], structured_content=body)

    return Server("flaky", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve() -> None:
    server = build()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(serve)
