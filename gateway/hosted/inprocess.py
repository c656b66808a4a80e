"""One builder for the gateway's in-process MCP servers (`gateway`, `think`, `prompt`).

Each lists the tools it declares, checks a call's arguments against the schema its tool declares before anything
acts on them, and hands them, with whose call it is (from `_meta`), to the tool's handler. What differs between
the servers is how they word a refusal (`Refusals`): Think answers structured JSON bodies, the gateway plain text.
"""

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import mcp.types as types
from mcp.server import Server

from gateway import __version__
from gateway.hosted.contracts import Arguments, ArgumentsError, parse
from gateway.sdk import RequestCtx
from gateway.session import Origin

Handler = Callable[[Origin, Any], Awaitable[types.CallToolResult]]
"""Takes whose call it is (`Origin`: the owner's and the session's keys, None when the call did not come through
the gateway's forward) and the arguments, already checked against the tool's model."""


@dataclass(frozen=True, slots=True)
class Hosted:
    """One in-process tool: what is listed, the model its arguments are checked against, and what answers it."""

    listed: types.Tool
    model: type[Arguments]
    handler: Handler


@dataclass(frozen=True, slots=True)
class Refusals:
    """How a server words the calls it refuses (always as a tool error the model reads, never a protocol error)."""

    unknown: Callable[[str], types.CallToolResult]
    """For a tool name this server does not answer."""
    invalid: Callable[[ArgumentsError], types.CallToolResult]
    """For arguments that do not match the tool's schema."""


def build(
    name: str,
    tools: Sequence[Hosted],
    refusals: Refusals,
    *,
    also_listed: Sequence[types.Tool] = (),
    handlers: Mapping[str, Any] | None = None,
) -> Server[Any]:
    """The in-process server `name` answering `tools`. `also_listed`: tools listed here but answered before a call
    reaches this server (by a middleware); `handlers`: the server's other request handlers (resources)."""
    listed = [t.listed for t in tools] + list(also_listed)
    by_name = {t.listed.name: t for t in tools}

    async def list_tools(ctx: RequestCtx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: RequestCtx, params: types.CallToolRequestParams) -> types.CallToolResult:
        found = by_name.get(params.name)
        if found is None:
            return refusals.unknown(params.name)
        try:
            arguments = parse(f"{name}.{params.name}", found.model, params.arguments)
        except ArgumentsError as exc:
            return refusals.invalid(exc)
        return await found.handler(Origin.of(ctx.meta), arguments)

    return Server(name, version=__version__, on_list_tools=list_tools, on_call_tool=call_tool, **(handlers or {}))
