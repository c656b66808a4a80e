"""The resources clients are subscribed to at one downstream server, kept across its restarts.

A server that restarts knows nothing of the subscriptions its clients still hold, so they are remembered
here and asked for again on each new connection. The two eras differ on the wire: before 2026-07-28 a
subscription is a `resources/subscribe` request; from it, one listen stream per URI that the gateway holds
open (`changes.watch`).
"""

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.abc
import mcp.types as types
from mcp import Client
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from gateway.downstreams import changes
from gateway.errors import describe

logger = logging.getLogger(__name__)

Updated = Callable[[str, str], Awaitable[None]]
"""Called with (server, URI) when a subscribed resource changed."""
Request = Callable[[types.ClientRequest, Any], Awaitable[Any]]
"""The server's request method: one request with its timeout and error mapping."""


class Subscriptions:
    """One server's subscribed URIs, and on a 2026-era connection the listen stream of each."""

    def __init__(self, server: str, on_updated: Updated | None) -> None:
        self._server = server
        self._on_updated = on_updated
        self._uris: set[str] = set()
        self._watches: dict[str, anyio.CancelScope] = {}
        """2026-era resource subscriptions: one listen stream per URI, by URI."""

    def __bool__(self) -> bool:
        return bool(self._uris)

    def remember(self, uri: str, on: bool) -> None:
        """Note (or forget) a subscription before asking: a server down now is asked when it is back."""
        if on:
            self._uris.add(uri)
        else:
            self._uris.discard(uri)

    async def ask(self, client: Client, uri: str, on: bool, request: Request, tg: anyio.abc.TaskGroup | None) -> None:
        """Tell the connected server: subscribe or unsubscribe, or open or close the URI's listen stream."""
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            message = types.SubscribeRequest if on else types.UnsubscribeRequest
            params = types.SubscribeRequestParams if on else types.UnsubscribeRequestParams
            await request(message(params=params(uri=uri)), types.EmptyResult)
            return
        watch = self._watches.pop(uri, None)
        if watch is not None:
            watch.cancel()
        if on and tg is not None and self._on_updated is not None:
            self._watches[uri] = await tg.start(changes.watch, client, self._server, uri, self._on_updated)

    async def leave(self, client: Client, uri: str, request: Request, tg: anyio.abc.TaskGroup | None) -> None:
        """Stop a subscription nobody holds any more (already forgotten here), in the background: a failure is
        logged, never raised."""
        try:
            await self.ask(client, uri, False, request, tg)
        except Exception as exc:  # noqa: BLE001 -- a server that cannot unsubscribe just sends updates nobody hears
            logger.info("server %s: leaving %s failed: %s", self._server, uri, describe(exc))

    async def renew(self, client: Client, request: Request, tg: anyio.abc.TaskGroup | None) -> None:
        """Ask a new connection for every remembered subscription."""
        for uri in list(self._uris):
            try:
                await self.ask(client, uri, True, request, tg)
            except Exception as exc:  # noqa: BLE001 -- one refused URI must cost neither the connection nor the others
                logger.warning("server %s: subscribing again to %s failed: %s", self._server, uri, describe(exc))
