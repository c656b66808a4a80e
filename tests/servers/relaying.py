"""The conformance fixture with what the suite does not ask for but the relay must carry: legacy SSE serving,
URL-mode elicitation (of any `url`; a refusal is reported in the tool's text) followed by
`notifications/elicitation/complete` (handshake era), and a prompt and a resource that ask the client before they
answer (pushed, or input-required in the 2026 era).

`--transport sse` serves `/sse` (+ `/messages/`) next to Streamable HTTP `/mcp`; `stdio` as the fixture does.
"""

import contextlib
import os
from collections.abc import AsyncIterator

import mcp.types as types
from mcp import MCPError
from mcp.server.sse import SseServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.shared.message import ServerMessageMetadata
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route

from tests.servers import conformance
from tests.servers.conformance import Ctx, Fixtures
from tests.servers.conformance_content import text
from tests.servers.conformance_tools import log, string_args, tool

CRASH_TOOL = tool("crash", "Exits the server process at once (a crash, for supervision tests)")
URL_ARGS = string_args(id="Its id")
URL_ARGS["properties"]["url"] = {
    "type": "string",
    "description": "The URL to send; default https://example.test/auth/<id>",
}
URL_TOOL = tool("test_url_elicitation", "Sends a URL-mode elicitation, then its completion", URL_ARGS)
LATER_TOOL = tool(
    "test_url_elicitation_later", "Sends a URL-mode elicitation; completes later", string_args(id="Its id")
)
CAPABILITIES_TOOL = tool("test_capabilities", "Reports the client capabilities this request declares")
COMPLETE_TOOL = tool("complete_elicitation", "Announces an elicitation's completion", string_args(id="Its id"))
NEVER_TOOL = tool("test_never_satisfied", "2026 era: asks the client whom to greet again, whatever it answers")

ASKING_PROMPT = types.Prompt(name="asking_prompt", description="Asks the client (elicitation) whom to greet")
ASKING_RESOURCE = types.Resource(uri="test://asking", name="asking", description="Asks the client (sampling) first")
WHO = types.ElicitRequest(
    params=types.ElicitRequestFormParams(
        message="Whom should the prompt greet?",
        requested_schema={"type": "object", "properties": {"response": {"type": "string"}}, "required": ["response"]},
    )
)
SAMPLE = types.CreateMessageRequest(
    params=types.CreateMessageRequestParams(
        messages=[types.SamplingMessage(role="user", content=text("What does the resource say?"))], max_tokens=10
    )
)


class Relaying(Fixtures):
    async def list_tools(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        if os.environ.get("LOG_LISTINGS"):  # a log outside any call, naming whose process this is (as servers do)
            await ctx.session.send_notification(log(f"listing tools for X={os.environ.get('X')}", "relaying"))
        listed = await super().list_tools(ctx, params)
        return types.ListToolsResult(
            tools=[*listed.tools, URL_TOOL, LATER_TOOL, COMPLETE_TOOL, CRASH_TOOL, CAPABILITIES_TOOL, NEVER_TOOL]
        )

    async def list_prompts(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        listed = await super().list_prompts(ctx, params)
        return types.ListPromptsResult(prompts=[*listed.prompts, ASKING_PROMPT])

    async def list_resources(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        listed = await super().list_resources(ctx, params)
        return types.ListResourcesResult(resources=[*listed.resources, ASKING_RESOURCE])

    async def get_prompt(  # type: ignore[override]  # the 2026 era may answer input-required
        self, ctx: Ctx, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | types.InputRequiredResult:
        if params.name != ASKING_PROMPT.name:
            return await super().get_prompt(ctx, params)
        answer = await self.question(ctx, params, WHO, types.ElicitResult)
        if isinstance(answer, types.InputRequiredResult):
            return answer
        who = (answer.content or {}).get("response")
        return types.GetPromptResult(messages=[types.PromptMessage(role="user", content=text(f"Hello, {who}!"))])

    async def read_resource(  # type: ignore[override]  # the 2026 era may answer input-required
        self, ctx: Ctx, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult | types.InputRequiredResult:
        if params.uri != ASKING_RESOURCE.uri:
            return await super().read_resource(ctx, params)
        answer = await self.question(ctx, params, SAMPLE, types.CreateMessageResult)
        if isinstance(answer, types.InputRequiredResult):
            return answer
        said = answer.content.text if isinstance(answer.content, types.TextContent) else "?"
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=params.uri, text=f"sampled: {said}")])

    async def complete(self, ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
        result = await super().complete(ctx, params)
        owner = os.environ.get("X")  # a per-user server's process holds its user's secret: says whose answered
        if owner is None:
            return result
        values = [*result.completion.values, f"X={owner}"]
        return types.CompleteResult(completion=types.Completion(values=values, total=len(values), has_more=False))

    async def call_tool(
        self, ctx: Ctx, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        if params.name == CRASH_TOOL.name:
            os._exit(3)
        if params.name == NEVER_TOOL.name:  # a round count that cannot converge (handshake era: answered once)
            answered = len(params.input_responses or {})
            state = f"round-{int((params.request_state or 'round-0').removeprefix('round-')) + 1}"
            if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
                return types.InputRequiredResult(input_requests={f"who-{state}": WHO}, request_state=state)
            return types.CallToolResult(content=[text(f"answered {answered}")])
        if params.name == CAPABILITIES_TOOL.name:  # 2026 era: this request's own; handshake era: the connection's
            caps = ctx.session.client_capabilities or types.ClientCapabilities()
            return types.CallToolResult(content=[text(" ".join(sorted(caps.model_dump(exclude_none=True))))])
        ident = str((params.arguments or {}).get("id", "e-1"))
        done = types.ElicitCompleteNotification(params=types.ElicitCompleteNotificationParams(elicitation_id=ident))
        if params.name == COMPLETE_TOOL.name:  # out of band, after the asking call ended: on no request's stream
            await ctx.session.send_notification(done)
            return types.CallToolResult(content=[text(f"completed {ident}")])
        if params.name not in (URL_TOOL.name, LATER_TOOL.name):
            return await super().call_tool(ctx, params)
        url = str((params.arguments or {}).get("url", f"https://example.test/auth/{ident}"))
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:  # an input-required round: the era has no ids
            modern = types.ElicitRequest(params=types.ElicitRequestURLParams(message="Sign in to continue", url=url))
            render = lambda r: f"url elicitation {ident}: action={r.action}{_content(r)}"  # noqa: E731
            return await self.ask(ctx, params, modern, types.ElicitResult, render)
        request = types.ElicitRequest(
            params=types.ElicitRequestURLParams(message="Sign in to continue", url=url, elicitation_id=ident)
        )
        related = ServerMessageMetadata(related_request_id=ctx.request_id)
        try:
            answer = await ctx.session.send_request(request, types.ElicitResult, metadata=related)
        except MCPError as exc:  # what the server was told, for the tests to see
            return types.CallToolResult(content=[text(f"url elicitation {ident}: refused: {exc.error.message}")])
        if params.name == URL_TOOL.name:  # the out-of-band step finished: say so (the client may retry, update its UI)
            await ctx.session.send_notification(done, related_request_id=ctx.request_id)
        return types.CallToolResult(
            content=[text(f"url elicitation {ident}: action={answer.action}{_content(answer)}")]
        )


def _content(answer: types.ElicitResult) -> str:
    """What an answer to a URL-mode elicitation carried besides its action: nothing, by the spec (its data goes
    to the URL's page, never through the client), so any content shows here for the tests to see."""
    return "" if answer.content is None else f", content={answer.content}"


def build_app(fixtures: Fixtures) -> Starlette:
    server = fixtures.server
    manager = StreamableHTTPSessionManager(app=server)
    sse = SseServerTransport("/messages/")

    async def sse_endpoint(request: Request) -> Response:
        async with sse.connect_sse(request.scope, request.receive, request._send) as (read, write):
            await server.run(read, write, server.create_initialization_options())
        return Response()

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    routes = [
        Route("/mcp", endpoint=StreamableHTTPASGIApp(manager)),
        Route("/sse", endpoint=sse_endpoint, methods=["GET"]),
        Mount("/messages/", app=sse.handle_post_message),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


if __name__ == "__main__":
    conformance.main(Relaying, build_app, ("stdio", "sse"), __doc__)
