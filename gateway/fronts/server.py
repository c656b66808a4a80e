"""The client-facing MCP server: SDK handlers in, one `Call` through the pipeline, result or mapped error out."""

import functools
import logging
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import mcp.types as types
from mcp import MCPError
from mcp.server.subscriptions import ListenHandler

from gateway import __version__, sdk, telemetry
from gateway.errors import to_mcp_error, to_tool_result
from gateway.fronts import eras, relayed, tasks_offer
from gateway.fronts.audience import AudienceBus
from gateway.fronts.auth.callers import Caller, Callers
from gateway.fronts.declared import GatewayServer
from gateway.fronts.notify import Notifier
from gateway.fronts.rounds import Rounds, ours, wire_rounds
from gateway.fronts.wording import in_session_names
from gateway.inflight import Peer, offerable
from gateway.middleware.exposure.view import Exposure
from gateway.middleware.policy import Denial
from gateway.pipeline import Call, Pipeline
from gateway.results import Hint, render_hints
from gateway.routing.registry import Registry
from gateway.sdk import ProgressFn, RequestCtx
from gateway.session import Session, SessionStore, os_user
from gateway.telemetry import tracecontext

R = TypeVar("R", bound=types.Result)
R2 = TypeVar("R2", bound=types.Result)

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
        hint_budget: int = 2048,
        callers: Callers | None = None,
        exposure: Exposure | None = None,
        denial: Denial | None = None,
    ) -> None:
        self.hint_budget = hint_budget
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
        self.server = GatewayServer(
            "mcp-gateway",
            version=__version__,
            instructions=instructions,
            get_tool_input_schema=registry.input_schema,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=functools.partial(self._listed, "resources/list", types.ListResourcesResult),
            on_list_resource_templates=functools.partial(
                self._listed, "resources/templates/list", types.ListResourceTemplatesResult
            ),
            on_read_resource=self._read_resource,
            on_list_prompts=functools.partial(self._listed, "prompts/list", types.ListPromptsResult),
            on_get_prompt=self._get_prompt,
            on_subscriptions_listen=ListenHandler(self.bus),
        )
        self.server.add_notification_handler("notifications/initialized", types.NotificationParams, self._initialized)
        relayed.install(self)

    async def _initialized(self, ctx: RequestCtx, params: types.NotificationParams | None) -> None:
        # The connection, not `ctx.session`: that is a per-request view of it, gone with the request.
        connection = sdk.connection_of(ctx.session)
        caller = self.callers.of(ctx.request)
        key = caller.key
        self.relay.attach(key, connection, caller.identity.key)
        weakref.finalize(connection, self.sessions.drop, key)
        weakref.finalize(connection, relayed.ended, self, key)  # its log level and subscriptions

    # -- handlers ------------------------------------------------------------------------------

    async def handle_ctx(self, ctx: RequestCtx, method: str, params: dict[str, Any]) -> Call:
        """One request with its client end known to the relay (what a downstream asks meanwhile reaches it)."""
        caller = self._caller(ctx)
        call = await self.handle(caller, method, params, _progress(ctx), relayed.peer(ctx, caller.key, self.relay))
        call.result = eras.adapted(call.result, ctx.protocol_version)  # as the client's version defines it
        return call

    def _caller(self, ctx: RequestCtx) -> Caller:
        """Who is calling; the client's `clientInfo.name` (its handshake's, or a 2026-era request's envelope's) is
        noted on first sight: exposure rules match it, and with the identity it names the client (`Session.client`)."""
        caller = self.callers.of(ctx.request)
        tracecontext.note(ctx.meta)
        session = self.sessions.get(caller.key, caller.identity, roaming=caller.roaming)
        if session.client is None and (params := ctx.session.client_params) is not None:
            session.client = params.client_info.name
        if session.task_mark is None and self.server.offers_tasks:  # a lane may have seen the client first
            session.task_mark = tasks_offer.mark(ctx.protocol_version)
        return caller

    async def handle(
        self,
        caller: Caller,
        method: str,
        params: dict[str, Any],
        progress: ProgressFn | None = None,
        peer: Peer | None = None,
    ) -> Call:
        """One request of `caller` through the pipeline (the SDK handlers and the lanes share it)."""
        session: Session = self.sessions.get(caller.key, caller.identity, roaming=caller.roaming)
        call = Call(session, method, params, secrets=caller.secrets)
        call.progress = progress
        if peer is not None:
            call.peer = peer
        await self.pipeline.handle(call)
        if not telemetry.recording():  # most calls: no span keeps them, and a result is not measured for nothing
            return call
        telemetry.annotate(
            **{
                telemetry.METHOD: method,
                telemetry.SERVER: call.server,
                telemetry.TOOL: call.tool,
                telemetry.REQUEST_BYTES: call.request_bytes,
                telemetry.RESPONSE_BYTES: call.response_bytes(),
            }
        )
        return call

    async def _list_tools(self, ctx: RequestCtx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        listing = _answer(await self.handle_ctx(ctx, "tools/list", {}), types.ListToolsResult)
        if self.server.offers_tasks and self.exposure is None:  # else exposure marked them, within the budget
            return tasks_offer.listed(listing, ctx.protocol_version)
        return listing

    async def _listed(self, method: str, kind: type[R], ctx: RequestCtx, params: Any) -> R:
        return _answer(await self.handle_ctx(ctx, method, {}), kind)

    async def _call_tool(
        self, ctx: RequestCtx, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        caller = self._caller(ctx)
        peer = relayed.peer(ctx, caller.key, self.relay)
        result = await self.call_tool(caller, params.name, params.arguments, peer, _progress(ctx), wire_rounds(params))
        return eras.adapted(result, ctx.protocol_version)

    async def call_tool(
        self,
        caller: Caller,
        name: str,
        arguments: dict[str, Any] | None,
        peer: Peer,
        progress: ProgressFn | None = None,
        rounds: dict[str, Any] | None = None,
    ) -> types.CallToolResult | types.InputRequiredResult:
        """A tool call of `caller` (`peer`: its client end, where the relay sends what a downstream asks meanwhile):
        the result with its hints rendered, or the mapped error; a 2026-era client may get an input request (a
        handshake-era server's request, `rounds`)."""
        run = functools.partial(self._tool, caller, name, arguments, peer, progress, rounds)
        return await self._in_rounds(caller, peer, rounds, run)

    async def _in_rounds(
        self, caller: Caller, peer: Peer, rounds: dict[str, Any] | None, run: Callable[[], Awaitable[R]]
    ) -> R | types.InputRequiredResult:
        """`run`, for a 2026-era client that can be asked (or answers) with its server's requests as input rounds."""
        if peer.modern and (offerable(peer) or ours(rounds)):
            return await self.rounds.call(caller.identity.key, peer, rounds, run)
        return await run()

    async def _tool(
        self,
        caller: Caller,
        name: str,
        arguments: dict[str, Any] | None,
        peer: Peer,
        progress: ProgressFn | None,
        rounds: dict[str, Any] | None,
    ) -> types.CallToolResult | types.InputRequiredResult:
        # Params built by hand: model_dump would deep-copy arguments that may be megabytes.
        call = await self.handle(
            caller, "tools/call", {"name": name, "arguments": arguments, **(rounds or {})}, progress, peer
        )
        if isinstance(call.result, types.InputRequiredResult) and call.error is None:
            return call.result  # the client answers and retries; hints wait for the final result
        result = to_tool_result(call.error) if call.error is not None else _answer(call, types.CallToolResult)
        hints = call.hints
        if self.exposure is not None:
            names = self.exposure.session_names(await self.registry.catalog(), call.session)
            result, hints = in_session_names(names, call, result)
        return render_hints(result, [*hints, *(Hint("relay", notice) for notice in peer.notices)], self.hint_budget)

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
        caller, rounds = self._caller(ctx), wire_rounds(params)
        peer = relayed.peer(ctx, caller.key, self.relay)

        async def run() -> R | types.InputRequiredResult:
            call = await self.handle(caller, method, {**fields, **rounds}, _progress(ctx), peer)
            return _answer(call, kind, types.InputRequiredResult)

        return eras.adapted(await self._in_rounds(caller, peer, rounds, run), ctx.protocol_version)


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
