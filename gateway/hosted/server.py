"""The gateway's own tools and resources, served in-process so they take the same path as any downstream.

Tools: `status`, `read_output`. Resources: `gateway://outputs/{id}` (pages of a spilled result, `?offset=&length=`)
and `gateway://prompts/{version}` (the full driver prompt).
"""

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import mcp.types as types
from mcp import MCPError
from mcp.server import Server, ServerRequestContext

from gateway import __version__
from gateway.prompts import PromptLibrary, PromptNotFound
from gateway.results import text_result
from gateway.store.outputs import MAX_PAGE_BYTES, OutputError, OutputStore, Page

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
READ_OUTPUT = types.Tool(
    name="read_output",
    description=(
        "Read part of a large tool result the gateway stored instead of sending it whole. Pass the id from "
        f"the notice; offset and length are in bytes (length ≤ {MAX_PAGE_BYTES:,}). Read only what you need."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "Output id (24 hex characters) from the gateway's notice."},
            "offset": {"type": "integer", "minimum": 0, "default": 0},
            "length": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_BYTES, "default": MAX_PAGE_BYTES},
        },
        "required": ["id"],
    },
)
OUTPUTS = types.ResourceTemplate(
    name="output",
    uri_template="gateway://outputs/{id}",
    description="A stored large result; add ?offset=N&length=M (bytes) to page through it.",
    mime_type="text/plain",
)


def pagetext_result(page: Page) -> str:
    end = page.offset + len(page.text.encode())
    if page.next_offset is None:
        where = f"bytes {page.offset:,}-{end:,} of {page.total_bytes:,} (end of output)"
    else:
        where = (
            f"bytes {page.offset:,}-{end:,} of {page.total_bytes:,}; next: gateway.read_output "
            f'{{"id": "{page.id}", "offset": {page.next_offset}}}'
        )
    return f"--- {where} ---\n{page.text}"


def build(status: StatusFn, outputs: OutputStore, prompts: PromptLibrary) -> Server[Any]:
    """The `gateway` server (its tools appear as `gateway.status`, `gateway.read_output`)."""

    async def list_tools(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[STATUS, READ_OUTPUT])

    async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = params.arguments or {}
        if params.name == STATUS.name:
            servers = status()
            up = sum(1 for s in servers.values() if s["state"] == "up")
            body = {"servers": servers, "up": up, "total": len(servers)}
            text = f"{up}/{len(servers)} servers up.\n" + json.dumps(body, indent=1)
            return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=body)
        if params.name == READ_OUTPUT.name:
            offset, length = args.get("offset", 0), args.get("length", MAX_PAGE_BYTES)
            if not isinstance(offset, int) or not isinstance(length, int):
                return text_result(f"offset and length must be integers, got {offset!r} and {length!r}.", error=True)
            try:
                return text_result(pagetext_result(outputs.read(str(args.get("id", "")), offset, length)))
            except OutputError as exc:
                return text_result(str(exc), error=True)
        return text_result(f"Unknown tool {params.name!r}; this server has 'status' and 'read_output'.", error=True)

    async def list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=f"gateway://prompts/{v}",
                    name=f"driver-{v}",
                    mime_type="text/markdown",
                    description="Driver prompt: how to work through this gateway and run Think workflows.",
                )
                for v in prompts.versions
            ]
        )

    async def list_templates(
        ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[OUTPUTS])

    async def read_resource(ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        parts = urlsplit(params.uri)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        try:
            if parts.netloc == "prompts":
                text, mime = prompts.get(parts.path.strip("/")).text, "text/markdown"
            elif parts.netloc == "outputs":
                offset, length = int(query.get("offset", 0)), int(query.get("length", MAX_PAGE_BYTES))
                text, mime = pagetext_result(outputs.read(parts.path.strip("/"), offset, length)), "text/plain"
            else:
                raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown gateway resource {params.uri!r}.")
        except (OutputError, PromptNotFound) as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from None
        except ValueError:
            raise MCPError(code=types.INVALID_PARAMS, message="offset and length must be integers.") from None
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=params.uri, text=text, mime_type=mime)]
        )

    return Server(
        "gateway",
        version=__version__,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )
