"""The official conformance suite's reference fixtures as an MCP server (stdio and Streamable HTTP, both eras).

The names and contents are those the suite (`@modelcontextprotocol/conformance`, server scenarios) asks
for, as its own TypeScript "everything server" implements them. Server-to-client requests are pushed
in the handshake era and asked for with an `InputRequiredResult` in the 2026-07-28 era, so the same
fixture drives the gateway's relay both ways.
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

from tests.servers.kitchen import PortReportingServer

Ctx = ServerRequestContext[Any]
IMAGE = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
AUDIO = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
WATCHED = "test://watched-resource"
NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}}
SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}
DEFAULTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}
_OPTIONS = ["option1", "option2", "option3"]
ENUMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "description": "Select one option", "enum": _OPTIONS},
        "titledSingle": {
            "type": "string",
            "description": "Select one option with titles",
            "oneOf": [{"const": f"value{i}", "title": t} for i, t in ((1, "First Option"), (2, "Second Option"))]
            + [{"const": "value3", "title": "Third Option"}],
        },
        "legacyEnum": {
            "type": "string",
            "description": "Select one option (legacy)",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "description": "Select multiple options",
            "minItems": 1,
            "maxItems": 3,
            "items": {"type": "string", "enum": _OPTIONS},
        },
        "titledMulti": {
            "type": "array",
            "description": "Select multiple options with titles",
            "minItems": 1,
            "maxItems": 3,
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
    "required": [],
}
# tool -> (message, requested schema) for the elicitation fixtures; the message of test_elicitation is an argument.
ELICITATIONS: dict[str, tuple[str, dict[str, Any]]] = {
    "test_elicitation": (
        "",
        {
            "type": "object",
            "properties": {"response": {"type": "string", "description": "User's response"}},
            "required": ["response"],
        },
    ),
    "test_elicitation_sep1034_defaults": ("Please review and update the form fields with defaults", DEFAULTS_SCHEMA),
    "test_elicitation_sep1330_enums": ("Please select options from the enum fields", ENUMS_SCHEMA),
}


def tool(name: str, description: str, schema: dict[str, Any] = NO_ARGS) -> types.Tool:
    return types.Tool(name=name, description=description, input_schema=schema)


def string_args(**descriptions: str) -> dict[str, Any]:
    props = {k: {"type": "string", "description": v} for k, v in descriptions.items()}
    return {"type": "object", "properties": props, "required": list(descriptions)}


TOOLS = [
    tool("test_simple_text", "Tests simple text content response"),
    tool("test_image_content", "Tests image content response"),
    tool("test_audio_content", "Tests audio content response"),
    tool("test_embedded_resource", "Tests embedded resource content response"),
    tool("test_multiple_content_types", "Tests response with multiple content types (text, image, resource)"),
    tool("test_tool_with_logging", "Tests tool that emits log messages during execution"),
    tool("test_tool_with_progress", "Tests tool that reports progress notifications"),
    tool("test_error_handling", "Tests error response handling"),
    tool("test_sampling", "Tests server-initiated sampling (LLM completion request)", string_args(prompt="The prompt")),
    tool("test_elicitation", "Tests server-initiated elicitation", string_args(message="The message to show the user")),
    tool("test_elicitation_sep1034_defaults", "Tests elicitation with default values per SEP-1034"),
    tool("test_elicitation_sep1330_enums", "Tests elicitation with enum schema improvements per SEP-1330"),
    tool("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features (SEP-1613)", SCHEMA_2020_12),
    # Beyond the suite's fixtures, for the gateway's own tests:
    tool("fidelity", "Every kind of content block, with annotations, _meta and structured content"),
    tool("test_roots", "Asks the client for its roots and reports them"),
    tool("touch", "Announces an update of the resource `uri`", string_args(uri="The resource's URI")),
]
RESOURCES = [
    types.Resource(uri="test://static-text", name="static-text", title="Static Text Resource", mime_type="text/plain"),
    types.Resource(
        uri="test://static-binary", name="static-binary", title="Static Binary Resource", mime_type="image/png"
    ),
    types.Resource(uri=WATCHED, name="watched-resource", title="Watched Resource", mime_type="text/plain"),
]
TEMPLATES = [
    types.ResourceTemplate(
        uri_template="test://template/{id}/data",
        name="template",
        title="Resource Template",
        description="A resource template with parameter substitution",
        mime_type="application/json",
    )
]
PROMPTS = [
    types.Prompt(name="test_simple_prompt", description="A simple prompt without arguments"),
    types.Prompt(
        name="test_prompt_with_arguments",
        description="A prompt with required arguments",
        arguments=[
            types.PromptArgument(name="arg1", description="First test argument", required=True),
            types.PromptArgument(name="arg2", description="Second test argument", required=True),
        ],
    ),
    types.Prompt(
        name="test_prompt_with_embedded_resource",
        description="A prompt that includes an embedded resource",
        arguments=[types.PromptArgument(name="resourceUri", description="URI of the resource to embed", required=True)],
    ),
    types.Prompt(name="test_prompt_with_image", description="A prompt that includes image content"),
]


def text(value: str) -> types.TextContent:
    return types.TextContent(text=value)


def embedded(uri: str, body: str, mime: str = "text/plain") -> types.EmbeddedResource:
    return types.EmbeddedResource(resource=types.TextResourceContents(uri=uri, mime_type=mime, text=body))


STATIC_RESULTS: dict[str, list[types.ContentBlock]] = {
    "test_simple_text": [text("This is a simple text response for testing.")],
    "test_image_content": [types.ImageContent(data=IMAGE, mime_type="image/png")],
    "test_audio_content": [types.AudioContent(data=AUDIO, mime_type="audio/wav")],
    "test_embedded_resource": [embedded("test://embedded-resource", "This is an embedded resource content.")],
    "test_multiple_content_types": [
        text("Multiple content types test:"),
        types.ImageContent(data=IMAGE, mime_type="image/png"),
        embedded("test://mixed-content-resource", json.dumps({"test": "data", "value": 123}), "application/json"),
    ],
}


FIDELITY = types.CallToolResult(
    content=[
        types.TextContent(text="text", annotations=types.Annotations(audience=["user"], priority=0.5)),
        types.ImageContent(data=IMAGE, mime_type="image/png", meta={"fixture/k": "image"}),
        types.AudioContent(data=AUDIO, mime_type="audio/wav"),
        types.ResourceLink(uri="test://static-text", name="static-text", mime_type="text/plain"),
        types.EmbeddedResource(
            resource=types.BlobResourceContents(uri="test://static-binary", mime_type="image/png", blob=IMAGE)
        ),
    ],
    structured_content={"kinds": 5, "nested": {"list": [1, 2.5, None, "x"]}},
    meta={"fixture/result": True},
)


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
                    await ctx.session.send_notification(_log(line), related_request_id=ctx.request_id)
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
                return await self.ask(ctx, params, request, types.CreateMessageResult, _sampled)
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
                render = lambda r: f"{_rooted(r)}; list_changed seen {self.roots_changed}"  # noqa: E731
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
            return await self.ask(ctx, params, elicit, types.ElicitResult, lambda r: _elicited(done, r))
        return types.CallToolResult(content=[text(f"Unknown tool: {name}")], is_error=True)

    async def ask(
        self, ctx: Ctx, params: types.CallToolRequestParams, request: Any, result_type: Any, render: Any
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Ask the client: pushed in the handshake era, an input-required round in the 2026 era."""
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            if not params.input_responses or "q" not in params.input_responses:
                return types.InputRequiredResult(input_requests={"q": request}, request_state="round-1")
            return types.CallToolResult(content=[text(render(params.input_responses["q"]))])
        try:
            answer = await ctx.session.send_request(
                request, result_type, metadata=ServerMessageMetadata(related_request_id=ctx.request_id)
            )
        except Exception as exc:  # noqa: BLE001 -- the fixture reports a refusal as the reference does
            return types.CallToolResult(content=[text(f"Not supported or error: {exc}")])
        return types.CallToolResult(content=[text(render(answer))])

    async def list_resources(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=RESOURCES)

    async def list_templates(
        self, ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=TEMPLATES)

    async def read_resource(self, ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = params.uri
        contents: types.TextResourceContents | types.BlobResourceContents
        if uri == "test://static-text":
            contents = types.TextResourceContents(
                uri=uri, mime_type="text/plain", text="This is the content of the static text resource."
            )
        elif uri == "test://static-binary":
            contents = types.BlobResourceContents(uri=uri, mime_type="image/png", blob=IMAGE)
        elif uri == WATCHED:
            contents = types.TextResourceContents(uri=uri, mime_type="text/plain", text="Watched resource content")
        elif uri.startswith("test://template/") and uri.endswith("/data"):
            ident = uri.removeprefix("test://template/").removesuffix("/data")
            body = json.dumps({"id": ident, "templateTest": True, "data": f"Data for ID: {ident}"})
            contents = types.TextResourceContents(uri=uri, mime_type="application/json", text=body)
        else:
            raise ValueError(f"Resource not found: {uri}")
        return types.ReadResourceResult(contents=[contents])

    async def list_prompts(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=PROMPTS)

    async def get_prompt(self, ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        args = params.arguments or {}
        user = "user"
        match params.name:
            case "test_simple_prompt":
                messages = [types.PromptMessage(role=user, content=text("This is a simple prompt for testing."))]
            case "test_prompt_with_arguments":
                line = f"Prompt with arguments: arg1='{args.get('arg1')}', arg2='{args.get('arg2')}'"
                messages = [types.PromptMessage(role=user, content=text(line))]
            case "test_prompt_with_embedded_resource":
                resource = embedded(args.get("resourceUri", ""), "Embedded resource content for testing.")
                messages = [
                    types.PromptMessage(role=user, content=resource),
                    types.PromptMessage(role=user, content=text("Please process the embedded resource above.")),
                ]
            case "test_prompt_with_image":
                messages = [
                    types.PromptMessage(role=user, content=types.ImageContent(data=IMAGE, mime_type="image/png")),
                    types.PromptMessage(role=user, content=text("Please analyze the image above.")),
                ]
            case _:
                raise ValueError(f"Prompt not found: {params.name}")
        return types.GetPromptResult(messages=messages)

    async def complete(self, ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
        # The reference answers an empty list; echoing what was asked lets tests see the ref arrive unchanged.
        ref = params.ref
        asked = ref.name if isinstance(ref, types.PromptReference) else ref.uri
        values = [f"{asked}:{params.argument.name}={params.argument.value}"]
        return types.CompleteResult(completion=types.Completion(values=values, total=1, has_more=False))

    async def set_level(self, ctx: Ctx, params: types.SetLevelRequestParams) -> types.EmptyResult:
        await ctx.session.send_notification(_log(f"Log level set to: {params.level}", "conformance"))
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


def _log(line: str, logger: str | None = None) -> types.LoggingMessageNotification:
    # The session's send_log_message is deprecated with the logging capability (2026); the wire message is not.
    return types.LoggingMessageNotification(
        params=types.LoggingMessageNotificationParams(level="info", data=line, logger=logger)
    )


def _rooted(result: types.ListRootsResult) -> str:
    return "roots: " + ", ".join(str(root.uri) for root in result.roots)


def _sampled(result: types.CreateMessageResult) -> str:
    content = result.content
    return f"LLM response: {content.text if isinstance(content, types.TextContent) else 'No response'}"


def _elicited(prefix: str, result: types.ElicitResult) -> str:
    return f"{prefix}: action={result.action}, content={json.dumps(result.content or {})}"


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
