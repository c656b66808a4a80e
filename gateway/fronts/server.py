"""The client-facing MCP server: SDK handlers in, one `Call` through the pipeline, result or mapped error out."""

import functools
import logging
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import mcp.types as types
from mcp import MCPError

from gateway import __version__, sdk, telemetry
from gateway.errors import to_mcp_error
from gateway.fronts import eras, relayed, tasks_offer
from gateway.fronts.audience import AudienceBus
from gateway.fronts.auth.callers import Callers
from gateway.fronts.declared import GatewayServer
from gateway.fronts.door import Door
from gateway.fronts.freshness import Freshness
from gateway.fronts.notify import Notifier
from gateway.fronts.rounds import Rounds, ours, wire_rounds
from gateway.inflight import offerable
from gateway.middleware.exposure.view import Exposure
from gateway.middleware.policy import Denial
from gateway.pipeline import Call, Pipeline
from gateway.routing.registry import Registry
from gateway.sdk import ProgressFn, RequestCtx
from gateway.session import SessionStore, os_user

R = TypeVar("R", bound=types.Result)
R2 = TypeVar("R2", bound=types.Result)
L = TypeVar("L", bound=types.CacheableResult)

logger = logging.getLogger(__name__)


class Front:
    """Builds the SDK `Server` whose handlers turn requests into `Call`s; `notify` fans out list changes."""

    def __init__(
        self,
        pipeline: Pipeline,
        registry: Registry,
        sessions: SessionStore,
        *,
        instructions: str | None = None,
        callers: Callers | None = None,
        exposure: Exposure | None = None,
        denial: Denial | None = None,
    ) -> None:
        self.denial: Denial = denial or (lambda identity, subject: None)  # for a 2026-era stream's resource URIs
        self.callers = callers or Callers(os_user())
        self.exposure = exposure
        self.pipeline = pipeline
        self.registry = registry
        self.sessions = sessions
        self.bus = AudienceBus()
        # Handshake-era connections that can receive pushes, by session key. Weak: an entry goes when the
        # SDK lets go of the connection (closed, expired), and with it the session's state (`_initialized`).
        self.relay = registry.relay
        self.notify = Notifier(self.relay, self.bus)
        self.rounds = Rounds()  # a 2026-era client's calls whose handshake-era servers ask it something
        self.freshness = Freshness(registry, exposure, policed=lambda: False)  # lists' ttlMs and cacheScope
        self.door = Door(sessions, self.relay, lambda: self.server.offers_tasks)
        self.server = GatewayServer(
            "mcp-gateway",
            version=__version__,
            instructions=instructions,
            get_tool_input_schema=self._input_schema,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=functools.partial(self._listed, "resources/list", types.ListResourcesResult),
            on_list_resource_templates=functools.partial(
                self._listed, "resources/templates/list", types.ListResourceTemplatesResult
            ),
            on_read_resource=self._read_resource,
            on_list_prompts=functools.partial(self._listed, "prompts/list", types.ListPromptsResult),
            on_get_prompt=self._get_prompt,
        )
        self.server_info = self.server.server_info_stamp
        """The `serverInfo` stamp a lane's 2026-era answer carries, dumped once: the SDK's property deep-copies it on
        every access so no caller can change it; a lane's answer is encoded as it is and never changed."""
        self.server.add_notification_handler("notifications/initialized", types.NotificationParams, self._initialized)
        relayed.install(self)

    def _input_schema(self, name: str) -> dict[str, Any] | None:
        """A tool's input schema by the name a client calls it (a client rule may rename), for the SDK's check of
        the call's `Mcp-Param-*` headers."""
        found, catalog = self.registry.input_schema(name), self.registry.merged
        if found is not None or self.exposure is None or catalog is None:
            return found
        return self.exposure.input_schema(catalog, name)

    async def _initialized(self, ctx: RequestCtx, params: types.NotificationParams | None) -> None:
        # The connection, not `ctx.session`: that is a per-request view of it, gone with the request.
        connection = sdk.connection_of(ctx.session)
        caller = self.callers.of(ctx.request)
        key = caller.key
        self.relay.attach(key, connection, caller.identity.key)
        weakref.finalize(connection, self.sessions.drop, key)
        weakref.finalize(connection, relayed.ended, self, key)  # its log level and subscriptions

    # -- handlers ------------------------------------------------------------------------------

    def _open(self, ctx: RequestCtx, method: str, params: dict[str, Any]) -> Call:
        """The `Call` of an SDK handler's request (the door builds every way in's)."""
        caller = self.callers.of(ctx.request)
        return self.door.open(
            caller,
            method,
            params,
            version=ctx.protocol_version,
            meta=ctx.meta,
            connection=ctx.session,
            request_id=ctx.request_id,
            progress=_progress(ctx),
        )

    async def handle_ctx(self, ctx: RequestCtx, method: str, params: dict[str, Any]) -> Call:
        """One request of an SDK handler through the pipeline, its answer rendered for the client."""
        call = self._open(ctx, method, params)
        await self.handle(call)
        return call

    async def handle(self, call: Call) -> None:
        """`call` through the pipeline (the SDK handlers, the lanes and task runs share it)."""
        await self.pipeline.handle(call)
        if not telemetry.recording():  # most calls: no span keeps them, and a result is not measured for nothing
            return
        telemetry.annotate(
            **{
                telemetry.METHOD: call.method,
                telemetry.SERVER: call.server,
                telemetry.TOOL: call.tool,
                telemetry.REQUEST_BYTES: call.request_bytes,
                telemetry.RESPONSE_BYTES: call.response_bytes(),
            }
        )

    async def _list_tools(self, ctx: RequestCtx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        call = await self.handle_ctx(ctx, "tools/list", {})
        listing = await self.freshness.hinted(call.method, _answer(call, types.ListToolsResult), call.session)
        if self.server.offers_tasks and self.exposure is None:  # else exposure marked them, within the budget
            return tasks_offer.listed(listing, ctx.protocol_version)
        return listing

    async def _listed(self, method: str, kind: type[L], ctx: RequestCtx, params: Any) -> L:
        call = await self.handle_ctx(ctx, method, {})
        return await self.freshness.hinted(method, _answer(call, kind), call.session)

    async def _call_tool(
        self, ctx: RequestCtx, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        rounds = wire_rounds(params)
        # Params built by hand: model_dump would deep-copy arguments that may be megabytes.
        return await self.call_tool(
            self._open(ctx, "tools/call", {"name": params.name, "arguments": params.arguments, **rounds}), rounds
        )

    async def call_tool(
        self, call: Call, rounds: dict[str, Any] | None = None
    ) -> types.CallToolResult | types.InputRequiredResult:
        """A tool call from the door: its result as the render stage left it (hints, names, the client's version;
        a refusal as an error result); a 2026-era client may get an input request (a handshake-era server's
        request, `rounds`: the retry's `inputResponses` and `requestState`)."""

        async def run() -> types.CallToolResult | types.InputRequiredResult:
            await self.handle(call)
            if call.result.__class__ is types.CallToolResult:  # a refusal too: rendered as an error result
                return call.result
            return _answer(call, types.InputRequiredResult)

        return await self._in_rounds(call, rounds, run)

    async def _in_rounds(
        self, call: Call, rounds: dict[str, Any] | None, run: Callable[[], Awaitable[R]]
    ) -> R | types.InputRequiredResult:
        """`run`, for a 2026-era client that can be asked (or answers) with its server's requests as input rounds."""
        peer = call.peer
        if peer is not None and peer.modern and (offerable(peer) or ours(rounds)):
            return await self.rounds.call(call.session.identity.key, peer, rounds, run)
        return await run()

    async def _read_resource(
        self, ctx: RequestCtx, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult | types.InputRequiredResult:
        return await self._asking(ctx, "resources/read", {"uri": params.uri}, params, types.ReadResourceResult)

    async def _get_prompt(
        self, ctx: RequestCtx, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | types.InputRequiredResult:
        fields = {"name": params.name, "arguments": params.arguments}
        return await self._asking(ctx, "prompts/get", fields, params, types.GetPromptResult)

    async def _asking(
        self,
        ctx: RequestCtx,
        method: str,
        fields: dict[str, Any],
        params: types.ReadResourceRequestParams | types.GetPromptRequestParams,
        kind: type[R],
    ) -> R | types.InputRequiredResult:
        """A request whose server may ask the client something: as a tool call's, its question reaches a 2026-era
        client as an input round (issue 22, item 2)."""
        rounds = wire_rounds(params)
        call = self._open(ctx, method, {**fields, **rounds})

        async def run() -> R | types.InputRequiredResult:
            await self.handle(call)
            return _answer(call, kind, types.InputRequiredResult)

        return await self._in_rounds(call, rounds, run)


def _answer(call: Call, kind: type[R], also: type[R2] | None = None) -> R | R2:
    """The call's result as the SDK handler returns it (of `kind`, or `also`), or its error mapped for the client."""
    if call.error is not None:
        raise to_mcp_error(call.error)
    if also is not None and isinstance(call.result, also):
        return call.result
    if not isinstance(call.result, kind):  # a bug: the pipeline produced nothing (or the wrong thing)
        detail = f"the gateway produced {type(call.result).__name__} instead of {kind.__name__} for {call.method}"
        raise MCPError(code=types.INTERNAL_ERROR, message=detail)
    return call.result


def _progress(ctx: RequestCtx) -> ProgressFn | None:
    """Where to relay progress: the client's session, when the request carries a progress token."""
    meta: Any = ctx.meta or {}
    token = meta.get("progress_token", meta.get("progressToken"))
    return None if token is None else eras.progress(ctx.session.report_progress, ctx.protocol_version)
