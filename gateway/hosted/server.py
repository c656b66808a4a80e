"""The gateway's own tools and resources, served in-process so they take the same path as any downstream.

Tools: `status`, `read_output`, and the definitions of `find_tools` / `call_tool` (answered by the exposure
middleware, which knows the caller's session: `gateway.middleware.exposure.find`). Resources: `gateway://outputs/{id}`
(pages of a spilled result, `?offset=&length=`) and `gateway://prompts/{version}` (the full driver prompt).
A stored output is read as the caller's (the owner the forward names in `_meta`): another's id is an unknown one.
"""

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any
from urllib.parse import parse_qs, urlsplit

import mcp.types as types
from mcp import MCPError
from mcp.server import Server
from pydantic import Field

from gateway.hosted import inprocess
from gateway.hosted.contracts import Arguments, tool
from gateway.hosted.inprocess import Hosted, Refusals
from gateway.hosted.prompts import PromptLibrary, PromptNotFound
from gateway.results import text_result
from gateway.sdk import RequestCtx
from gateway.session import Origin, owner_in
from gateway.store.base import Outputs, StoreUnavailable
from gateway.store.outputs import MAX_PAGE_BYTES, OutputError, Page

StatusFn = Callable[[str | None], Awaitable[dict[str, dict[str, Any]]]]
"""Each server's status as the caller (their owner digest; None: not known) sees it."""
UNOWNED = "This call carries no caller identity: stored outputs are read through the gateway's front only."


class Status(Arguments):
    pass


class ReadOutput(Arguments):
    id: Annotated[str, Field(max_length=256, description="Output id (24 hex characters) from the gateway's notice.")]
    offset: Annotated[int, Field(ge=0)] = 0
    length: Annotated[int, Field(ge=1)] = MAX_PAGE_BYTES
    """Bytes to read; more than a page is clamped to one page (the answer says so, with the next offset)."""


STATUS = tool(
    "status",
    "Health of every server behind this gateway: state (starting|up|restarting|down), tool count, "
    "restarts, protocol and last error. Call it when a tool fails with 'unavailable' or is missing.",
    Status,
)
READ_OUTPUT = tool(
    "read_output",
    "Read part of a large tool result the gateway stored instead of sending it whole. Pass the id from "
    f"the notice; offset and length are in bytes (a page holds at most {MAX_PAGE_BYTES:,}; a longer length "
    "gets one page and the offset to go on from). Read only what you need.",
    ReadOutput,
)
OUTPUTS = types.ResourceTemplate(
    name="output",
    uri_template="gateway://outputs/{id}",
    description="A stored large result; add ?offset=N&length=M (bytes) to page through it.",
    mime_type="text/plain",
)


def clamped(length: int) -> tuple[int, str]:
    """A length within one page, and what to tell the model when it asked for more."""
    if length <= MAX_PAGE_BYTES:
        return length, ""
    return (
        MAX_PAGE_BYTES,
        f"(length {length:,} is over the page size; this page holds at most {MAX_PAGE_BYTES:,} bytes)\n",
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


def build(
    status: StatusFn,
    outputs: Outputs,
    prompts: PromptLibrary,
    answered_upstream: Sequence[types.Tool] = (),
    search: Callable[[], dict[str, Any]] | None = None,
) -> Server[Any]:
    """The `gateway` server (its tools appear as `gateway.status`, `gateway.read_output`). `answered_upstream`:
    tools listed here but answered by a middleware before a call reaches this server (find/call, which need
    the caller's session); the composition root passes them, so this room imports nothing above it. `search`:
    what answers find_tools (its rankers and model), said by gateway.status."""
    upstream = {t.name for t in answered_upstream}

    async def server_status(origin: Origin, args: Status) -> types.CallToolResult:
        servers = await status(origin.owner)
        up = sum(1 for s in servers.values() if s["state"] == "up")
        body: dict[str, Any] = {"servers": servers, "up": up, "total": len(servers)}
        if search is not None:
            body["search"] = search()
        text = f"{up}/{len(servers)} servers up.\n" + json.dumps(body, indent=1)
        return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=body)

    async def read_output(origin: Origin, args: ReadOutput) -> types.CallToolResult:
        owner = origin.owner
        if owner is None:
            return text_result(UNOWNED, error=True)
        try:
            length, note = clamped(args.length)
            return text_result(note + pagetext_result(await outputs.read(owner, args.id, args.offset, length)))
        except (OutputError, StoreUnavailable) as exc:
            return text_result(str(exc), error=True)

    tools = [Hosted(STATUS, Status, server_status), Hosted(READ_OUTPUT, ReadOutput, read_output)]

    def unknown(name: str) -> types.CallToolResult:
        if name in upstream:
            # Reached only when the chain has no exposure middleware (a custom chain): say so, do not guess.
            return text_result(f"{name} is answered by the gateway's middleware, absent here.", error=True)
        known = ", ".join(t.listed.name for t in tools)
        return text_result(f"Unknown tool {name!r}; this server has {known}.", error=True)

    async def list_resources(ctx: RequestCtx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
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
        ctx: RequestCtx, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[OUTPUTS])

    async def read_resource(ctx: RequestCtx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        parts = urlsplit(params.uri)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        try:
            if parts.netloc == "prompts":
                text, mime = prompts.get(parts.path.strip("/")).text, "text/markdown"
            elif parts.netloc == "outputs":
                owner = owner_in(ctx.meta)
                if owner is None:
                    raise MCPError(code=types.INVALID_PARAMS, message=UNOWNED)
                offset, length = int(query.get("offset", 0)), int(query.get("length", MAX_PAGE_BYTES))
                length, note = clamped(length) if length > 0 else (length, "")
                page = await outputs.read(owner, parts.path.strip("/"), offset, length)
                text, mime = note + pagetext_result(page), "text/plain"
            else:
                raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown gateway resource {params.uri!r}.")
        except (OutputError, PromptNotFound, StoreUnavailable) as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from None
        except ValueError:
            raise MCPError(code=types.INVALID_PARAMS, message="offset and length must be integers.") from None
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=params.uri, text=text, mime_type=mime)]
        )

    return inprocess.build(
        "gateway",
        tools,
        Refusals(unknown, lambda exc: text_result(exc.text(), error=True)),
        also_listed=answered_upstream,
        handlers={
            "on_list_resources": list_resources,
            "on_list_resource_templates": list_templates,
            "on_read_resource": read_resource,
        },
    )
