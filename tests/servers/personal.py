"""A per-user stdio test server whose resources, resource templates and prompts are its user's own, as a
person's files, repositories or saved prompts would be: all named after the secret `OWNER` it was started with.

Tools: `whoami` answers the owner; `add_note {name}` adds the resource `note://<owner>/<name>` and announces
`notifications/resources/list_changed`; `touch_prompts` announces `notifications/prompts/list_changed`. Reading a
URI, getting a prompt, or completing a prompt's argument that is not this owner's answers "Unknown ..." as any
server does for a name it does not have.
"""

import os
from typing import Any

import anyio
import mcp.types as types
from mcp import MCPError
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.stdio import stdio_server

Ctx = ServerRequestContext[Any]
OWNER = os.environ["OWNER"]
NOTES = [f"note://{OWNER}/diary"]
TOOLS = [
    types.Tool(name="whoami", description="Whose process this is.", input_schema={"type": "object"}),
    types.Tool(
        name="add_note",
        description="Add a note resource and announce the resources list changed.",
        input_schema={"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    ),
    types.Tool(name="touch_prompts", description="Announce the prompts list changed.", input_schema={"type": "object"}),
]
PROMPT = types.Prompt(
    name=f"{OWNER}_week",
    description=f"Summarise {OWNER}'s week",
    arguments=[types.PromptArgument(name="topic", required=False)],
)


def text(value: str) -> types.TextContent:
    return types.TextContent(text=value)


async def list_tools(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name == "add_note":
        NOTES.append(f"note://{OWNER}/{(params.arguments or {})['name']}")
        await ctx.session.send_resource_list_changed()
    elif params.name == "touch_prompts":
        await ctx.session.send_prompt_list_changed()
    return types.CallToolResult(content=[text(OWNER)])


async def list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
    resources = [types.Resource(uri=uri, name=f"{OWNER} {uri}", description=f"{OWNER}'s private note") for uri in NOTES]
    return types.ListResourcesResult(resources=resources)


async def list_templates(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourceTemplatesResult:
    template = types.ResourceTemplate(uri_template=f"repo://{OWNER}/{{name}}", name=f"{OWNER}-repositories")
    return types.ListResourceTemplatesResult(resource_templates=[template])


async def read_resource(ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    if params.uri not in NOTES:
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown resource {params.uri}")
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=params.uri, text=f"{OWNER}'s secrets")])


async def list_prompts(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=[PROMPT])


async def get_prompt(ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    if params.name != PROMPT.name:
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt {params.name}")
    return types.GetPromptResult(messages=[types.PromptMessage(role="user", content=text(f"{OWNER}'s week"))])


async def complete(ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
    ref = params.ref
    if isinstance(ref, types.PromptReference) and ref.name != PROMPT.name:
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt {ref.name}")
    return types.CompleteResult(completion=types.Completion(values=[f"{OWNER}-{params.argument.value}"]))


async def serve() -> None:
    server: Server[Any] = Server(
        "personal",
        version="1.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_completion=complete,
    )
    options = server.create_initialization_options(NotificationOptions(resources_changed=True, prompts_changed=True))
    async with stdio_server() as (read, write):
        await server.run(read, write, options)


if __name__ == "__main__":
    anyio.run(serve)
