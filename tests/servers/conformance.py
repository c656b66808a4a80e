"""The official conformance suite's reference fixtures as an MCP server (stdio and Streamable HTTP, both eras).

The names and contents are those the suite (`@modelcontextprotocol/conformance`, server scenarios) asks
for, as its own TypeScript "everything server" implements them. Server-to-client requests are pushed
in the handshake era and asked for with an `InputRequiredResult` in the 2026-07-28 era, so the same
fixture drives the gateway's relay both ways. The tools are in `conformance_tools`, the resources and
prompts in `conformance_content`.
"""

import argparse
import contextlib
import json
import logging
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import mcp.types as types
import uvicorn
from mcp.server import InitializationOptions, NotificationOptions, Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.message import ServerMessageMetadata
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.routing import Route

from tests.servers.conformance_content import PROMPTS, RESOURCES, TEMPLATES, WATCHED, prompt, read, text
from tests.servers.conformance_tools import (
    ELICITATIONS,
    FIDELITY,
    STATIC_RESULTS,
    TOOLS,
    elicited,
    log,
    rooted,
    sampled,
)
from tests.servers.kitchen import PortReportingServer

Ctx = ServerRequestContext[Any]
Answerable = types.CallToolRequestParams | types.GetPromptRequestParams | types.ReadResourceRequestParams
"""The requests a 2026-era server may answer input-required."""


class Fixtures:
    """The handlers; one instance serves every session (subscriptions are per process, like the reference)."""

    def __init__(self) -> None:
        self.subscribed: set[str] = set()
        self.roots_changed = 0
        self.bus = InMemorySubscriptionBus()
        self.server = _Server(
            "mcp-conformance-test-server",
            version="1.0.0",
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=self.list_resources,
            on_list_resource_templates=self.list_templates,
            on_read_resource=self.read_resource,
            on_list_prompts=self.list_prompts,
            on_get_prompt=self.get_prompt,
            on_completion=self.complete,
            on_subscriptions_listen=ListenHandler(self.bus),
        )
        self.server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, self.set_level)
        self.server.add_request_handler("resources/subscribe", types.SubscribeRequestParams, self.subscribe)
        self.server.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, self.unsubscribe)
        self.server.add_notification_handler(
            "notifications/roots/list_changed", types.NotificationParams, self.on_roots_changed
        )

    async def list_tools(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(
        self, ctx: Ctx, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        name, args = params.name, params.arguments or {}
        if name in STATIC_RESULTS:
            return types.CallToolResult(content=STATIC_RESULTS[name])
        match name:
            case "test_tool_with_logging":
                for i, line in enumerate(
                    ("Tool execution started", "Tool processing data", "Tool execution completed")
                ):
                    if i:
                        await anyio.sleep(0.05)
                    await ctx.session.send_notification(log(line), related_request_id=ctx.request_id)
                return types.CallToolResult(content=[text("Tool with logging executed successfully")])
            case "test_tool_with_progress":
                for step in (0, 50, 100):
                    await ctx.session.report_progress(step, 100, f"Completed step {step} of 100")
                token = (ctx.meta or {}).get("progress_token", (ctx.meta or {}).get("progressToken", 0))
                return types.CallToolResult(content=[text(str(token))])
            case "test_error_handling":
                return types.CallToolResult(
                    content=[text("This tool intentionally returns an error for testing")], is_error=True
                )
            case "test_sampling":
                request = types.CreateMessageRequest(
                    params=types.CreateMessageRequestParams(
                        messages=[types.SamplingMessage(role="user", content=text(str(args.get("prompt", ""))))],
                        max_tokens=100,
                    )
                )
                return await self.ask(ctx, params, request, types.CreateMessageResult, sampled)
            case "touch":
                uri = str(args.get("uri", WATCHED))
                if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
                    await self.touch(uri)
                else:
                    await ctx.session.send_resource_updated(uri)
                return types.CallToolResult(content=[text(f"touched {uri}")])
            case "fidelity":
                return FIDELITY
            case "test_roots":
                roots = types.ListRootsRequest()
                render = lambda r: f"{rooted(r)}; list_changed seen {self.roots_changed}"  # noqa: E731
                return await self.ask(ctx, params, roots, types.ListRootsResult, render)
            case "json_schema_2020_12_tool":
                return types.CallToolResult(content=[text(f"JSON Schema 2020-12 tool called with: {json.dumps(args)}")])
        if name in ELICITATIONS:
            message, schema = ELICITATIONS[name]
            elicit = types.ElicitRequest(
                params=types.ElicitRequestFormParams(
                    message=message or str(args.get("message", "")), requested_schema=schema
                )
            )
            done = "User response" if name == "test_elicitation" else "Elicitation completed"
            return await self.ask(ctx, params, elicit, types.ElicitResult, lambda r: elicited(done, r))
        return types.CallToolResult(content=[text(f"Unknown tool: {name}")], is_error=True)

    async def ask(
        self, ctx: Ctx, params: types.CallToolRequestParams, request: Any, result_type: Any, render: Any
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Ask the client during a tool call; a refusal is reported in the result, as the reference does."""
        try:
            answer = await self.question(ctx, params, request, result_type)
        except Exception as exc:  # noqa: BLE001 -- the fixture reports a refusal as the reference does
            return types.CallToolResult(content=[text(f"Not supported or error: {exc}")])
        if isinstance(answer, types.InputRequiredResult):
            return answer
        return types.CallToolResult(content=[text(render(answer))])

    async def question(
        self, ctx: Ctx, params: Answerable, request: Any, result_type: Any
    ) -> Any | types.InputRequiredResult:
        """The client's answer to `request`: pushed in the handshake era; in the 2026 era an input-required
        round to return (the first time) or the answer the retry carries."""
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            if not params.input_responses or "q" not in params.input_responses:
                return types.InputRequiredResult(input_requests={"q": request}, request_state="round-1")
            return params.input_responses["q"]
        related = ServerMessageMetadata(related_request_id=ctx.request_id)
        return await ctx.session.send_request(request, result_type, metadata=related)

    async def list_resources(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=RESOURCES)

    async def list_templates(
        self, ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=TEMPLATES)

    async def read_resource(self, ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        return read(params.uri)

    async def list_prompts(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=PROMPTS)

    async def get_prompt(self, ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        return prompt(params.name, params.arguments or {})

    async def complete(self, ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
        # The reference answers an empty list; echoing what was asked lets tests see the ref arrive unchanged.
        ref = params.ref
        asked = ref.name if isinstance(ref, types.PromptReference) else ref.uri
        values = [f"{asked}:{params.argument.name}={params.argument.value}"]
        return types.CompleteResult(completion=types.Completion(values=values, total=1, has_more=False))

    async def set_level(self, ctx: Ctx, params: types.SetLevelRequestParams) -> types.EmptyResult:
        await ctx.session.send_notification(log(f"Log level set to: {params.level}", "conformance"))
        return types.EmptyResult()

    async def subscribe(self, ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        self.subscribed.add(params.uri)
        # Announce an update at once, so a relay of resources/updated can be seen without a timer.
        await ctx.session.send_resource_updated(params.uri)
        return types.EmptyResult()

    async def unsubscribe(self, ctx: Ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        self.subscribed.discard(params.uri)
        return types.EmptyResult()

    async def on_roots_changed(self, ctx: Ctx, params: types.NotificationParams | None) -> None:
        self.roots_changed += 1

    async def touch(self, uri: str) -> None:
        """Publish an update of `uri` to 2026-era listeners."""
        await self.bus.publish(ResourceUpdated(uri=uri))


class _Server(Server[Any]):
    # The HTTP session manager builds init options without NotificationOptions (listChanged would read false).
    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        options = notification_options or NotificationOptions(
            tools_changed=True, resources_changed=True, prompts_changed=True
        )
        return super().create_initialization_options(options, experimental_capabilities, extensions)


def build_app(fixtures: Fixtures) -> Starlette:
    hosts = ["127.0.0.1:*", "localhost:*"]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=[f"http://{h}" for h in hosts],
    )
    manager = StreamableHTTPSessionManager(app=fixtures.server, security_settings=security)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    return Starlette(routes=[Route("/mcp", endpoint=StreamableHTTPASGIApp(manager))], lifespan=lifespan)


async def serve(
    fixtures: Fixtures, app: Callable[[Fixtures], Starlette], transport: str, port: int, port_file: str | None
) -> None:
    if transport == "stdio":
        async with stdio_server() as (read, write):
            await fixtures.server.run(read, write, fixtures.server.create_initialization_options())
        return
    config = uvicorn.Config(
        app(fixtures), host="127.0.0.1", port=port, log_config=None, access_log=False, timeout_graceful_shutdown=1
    )
    await PortReportingServer(config, port_file).serve()


def main(
    make: Callable[[], Fixtures] = Fixtures,
    app: Callable[[Fixtures], Starlette] = build_app,
    transports: tuple[str, ...] = ("stdio", "http"),
    doc: str | None = __doc__,
) -> None:
    """The command line of a fixture server (this one, or one built on its `Fixtures`)."""
    parser = argparse.ArgumentParser(description=doc)
    parser.add_argument("--transport", choices=transports, default="stdio")
    parser.add_argument("--port", type=int, default=0, help="HTTP port (0: any free one, written to --port-file)")
    parser.add_argument("--port-file")
    args = parser.parse_args()
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(name)s: %(message)s")
    anyio.run(serve, make(), app, args.transport, args.port, args.port_file)


if __name__ == "__main__":
    main()
