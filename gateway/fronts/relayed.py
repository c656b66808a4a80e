"""The client's side of the relay (DESIGN §15): logging level, resource subscriptions, completion, roots.

Registered on the front's SDK server by `install`; each request becomes a `Call` through the pipeline
like any other, so the registry maps exposed names back to the owning server's own.
"""

import logging
from typing import Any, Protocol

import anyio
import mcp.types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.subscriptions import ListenHandler
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from mcp_types import LOG_LEVEL_META_KEY

from gateway.downstreams.downstream import Downstream
from gateway.downstreams.relay import Relay
from gateway.errors import GatewayError, to_mcp_error
from gateway.fronts.audience import LISTENER, AudienceBus
from gateway.fronts.auth.callers import Callers
from gateway.inflight import Peer
from gateway.middleware.policy import Denial, Subject
from gateway.pipeline import Call
from gateway.routing.features import Who
from gateway.routing.registry import Registry

logger = logging.getLogger(__name__)

Ctx = ServerRequestContext[Any]


class Front(Protocol):
    """What the relay handlers need of the client-facing server (`fronts.server.Front` is one)."""

    @property
    def server(self) -> Server[Any]: ...
    @property
    def registry(self) -> Registry: ...
    @property
    def bus(self) -> AudienceBus: ...
    @property
    def callers(self) -> Callers: ...
    @property
    def denial(self) -> Denial:
        """The policy, for what the relay resolves itself (a 2026-era listen stream's resource URIs)."""

    async def handle_ctx(self, ctx: Ctx, method: str, params: dict[str, Any]) -> Call: ...


def peer(ctx: Ctx, key: str, relay: Relay) -> Peer:
    """The client end of the request `ctx` answers: where the relay sends what a downstream asks during it."""
    modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
    meta: Any = ctx.meta or {}
    level = meta.get(LOG_LEVEL_META_KEY) if modern else relay.logs.level(key)
    return Peer(key, ctx.session, ctx.request_id, ctx.session.client_capabilities, modern, level)


def install(front: Front) -> None:
    """Serve logging/setLevel, resources/subscribe and /unsubscribe, completion/complete, roots list changes."""
    server = front.server

    async def forward(ctx: Ctx, method: str, params: dict[str, Any]) -> Any:
        call = await front.handle_ctx(ctx, method, params)
        if call.error is not None:
            raise to_mcp_error(call.error)
        return call.result

    async def set_level(ctx: Ctx, params: types.SetLevelRequestParams) -> types.EmptyResult:
        result: types.EmptyResult = await forward(ctx, "logging/setLevel", {"level": params.level})
        return result

    async def subscribe(ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        result: types.EmptyResult = await forward(ctx, "resources/subscribe", {"uri": params.uri})
        return result

    async def unsubscribe(ctx: Ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        result: types.EmptyResult = await forward(ctx, "resources/unsubscribe", {"uri": params.uri})
        return result

    async def complete(ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
        wire = params.model_dump(by_alias=True, mode="json", exclude_none=True, exclude={"meta"})
        result: types.CompleteResult = await forward(ctx, "completion/complete", wire)
        return result

    async def roots_changed(ctx: Ctx, params: types.NotificationParams | None) -> None:
        # The roots a downstream sees are the calling client's; any client's change may concern it.
        for ds in front.registry.downstreams.values():
            if isinstance(ds, Downstream) and ds.protocol_version not in MODERN_PROTOCOL_VERSIONS:
                await ds.notify(types.RootsListChangedNotification())

    listen_handler = ListenHandler(front.bus)

    async def listen(ctx: Ctx, params: types.SubscriptionsListenRequestParams) -> types.SubscriptionsListenResult:
        # A 2026-era stream's resource URIs are watched at their servers for as long as the stream lives;
        # the updates reach it through the bus (`Gateway._resource_updated`), filtered by the handler.
        caller = front.callers.of(ctx.request)
        key, who = f"{caller.key}#listen-{ctx.request_id}", (caller.identity, caller.secrets)
        watched: list[tuple[str, str]] = []
        try:
            catalog = await front.registry.catalog()
            for uri in params.notifications.resource_subscriptions or ():
                server, original = front.registry.resource_owner(uri, catalog)
                denial = front.denial(caller.identity, Subject("resource", server, uri, original))
                if denial is not None:  # as resources/subscribe would be refused (`PolicyCheck`)
                    raise denial
                await front.registry.features.watch(key, server, original, True, who)
                watched.append((server, original))
        except GatewayError as exc:
            await _unwatch(front, key, watched, who)
            raise to_mcp_error(exc) from None
        token = LISTENER.set(caller.identity.key)  # its per-user servers' updates are for this identity alone
        try:
            return await listen_handler(ctx, params)
        finally:
            LISTENER.reset(token)
            await _unwatch(front, key, watched, who)

    server.add_request_handler("subscriptions/listen", types.SubscriptionsListenRequestParams, listen)
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    server.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
    server.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe)
    server.add_request_handler("completion/complete", types.CompleteRequestParams, complete)
    server.add_notification_handler("notifications/roots/list_changed", types.NotificationParams, roots_changed)


def ended(front: Front, key: str) -> None:
    """A handshake-era client's connection is gone (a finalizer: nothing may wait): the relay forgets the session,
    and the resources only it watched are left at their servers."""
    for exposed, audience in front.registry.relay.forget(key):
        front.registry.features.release(exposed, audience)


async def _unwatch(front: Front, key: str, watched: list[tuple[str, str]], who: Who) -> None:
    with anyio.CancelScope(shield=True):  # a stream ends by cancellation: its subscriptions end all the same
        for server, original in watched:
            try:
                await front.registry.features.watch(key, server, original, False, who)
            except GatewayError as exc:
                logger.info("server %s: unsubscribing %s failed: %s", server, original, exc)
