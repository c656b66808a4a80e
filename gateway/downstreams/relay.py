"""Requests and notifications from a downstream back to the right client session (DESIGN §15).

One downstream connection is shared by every client session, and the handshake-era protocol says
nothing about which of our calls a server's `sampling/createMessage`, `elicitation/create` or
`roots/list` belongs to. The relay keeps, per downstream, the client calls in flight on it (a `Peer`
each: the client's request-scoped session, its request id, its capabilities):

* a request from a downstream goes to the one client session with a call in flight there, on that
  call's own channel (`related_request_id`), bounded by the server's `timeout_s`. With calls of
  several sessions in flight it cannot be told apart, so the downstream gets an error saying so
  (2026-era downstreams have no such gap: their input-required results come back in the call's
  own answer, see `asking.answer`). A client that lacks the capability, answers garbage or errs gives
  the downstream a clear error and the client a notice on its tool result; nothing hangs (`asking`).
* `notifications/message` goes to the sessions with a call in flight on that server, by the rules and at the
  pace of `logs.py`.
* `notifications/resources/updated` goes only to the sessions subscribed to that URI (of a per-user server's
  process: only its identity's sessions).
* a URL-mode elicitation reaches the client only with an `https:` URL (or `http:` to loopback); any other is
  refused with the reason, to the server (a 2026-era server's round: the call fails saying why) and in a notice
  to the client (`url_asks.url_refusal`). Its `notifications/elicitation/complete` goes to the session that was
  asked (remembered within bounds, `url_asks`).
"""

import time
import weakref
from collections import defaultdict
from collections.abc import Callable
from types import TracebackType
from typing import Any

import mcp.types as types
from mcp.client.session import ClientRequestContext

from gateway.downstreams.asking import Asking, refusal
from gateway.downstreams.logs import Logs
from gateway.downstreams.url_asks import UrlAsks
from gateway.inflight import Peer, quietly, standalone


class Relay:
    """Routes what downstreams send back; one per gateway, shared by all downstreams and client sessions."""

    def __init__(self, *, logger_name: Callable[[str, str | None], str], url_asks: UrlAsks | None = None) -> None:
        self._inflight: dict[str, list[Peer]] = defaultdict(list)
        self._connections: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
        """The SDK's connections of handshake-era clients by session key, for pushes outside any call (an entry
        goes with its connection)."""
        self._attached: dict[str, tuple[float, str | None]] = {}
        """When each client attached, and its identity's key (a connection's entry can go with it; this one goes
        with `forget`)."""
        self.logs = Logs(logger_name)
        """Where a server's logs go, at which levels and pace."""
        self._subscribers: dict[tuple[str, str | None], set[str]] = defaultdict(set)
        """(exposed resource URI, identity key for a per-user server's, else None) -> keys of the client sessions
        subscribed to it."""
        self.url_asks = url_asks if url_asks is not None else UrlAsks()  # (an empty one is falsy)
        """Whom each URL-mode elicitation asked: its completion goes there."""
        self.asking = Asking(self.url_asks)
        """How a downstream's request is put to one client, and what the server is told when it cannot be."""
        self.sole = False
        """True behind the stdio front: its one client is "the client" even when no call is in flight."""

    # -- what the relay keeps per client session (these verbs are its only writers) ---------------

    def attach(self, key: str, connection: Any, identity: str | None = None) -> None:
        """A handshake-era client of `identity` (its key) finished its handshake: pushes outside any call reach it
        on `connection`."""
        self._connections[key] = connection
        self._attached[key] = (time.monotonic(), identity)

    def identity_of(self, key: str) -> str | None:
        """The identity key an attached session was opened by (None: not attached, or not said)."""
        attached = self._attached.get(key)
        return None if attached is None else attached[1]

    def connection(self, key: str) -> Any | None:
        return self._connections.get(key)

    def connected(self, before: float | None = None) -> list[tuple[str, Any]]:
        """(session key, connection) of every attached client, as a list (sending may drop some); `before`: only
        those attached before that moment (`time.monotonic()`)."""
        if before is None:
            return list(self._connections.items())
        return [(k, c) for k, c in self._connections.items() if self._attached.get(k, (0.0, None))[0] < before]

    def detach(self, key: str) -> None:
        self._connections.pop(key, None)
        self._attached.pop(key, None)

    def watch(self, key: str, exposed: str, audience: str | None, on: bool) -> bool:
        """Session `key` subscribes to (or leaves) a resource; True when that changed whether anyone watches it
        (the first subscriber subscribes the server, the last one leaves)."""
        keys = self._subscribers[(exposed, audience)]
        had = bool(keys)
        if on:
            keys.add(key)
        else:
            keys.discard(key)
        if not keys:
            del self._subscribers[(exposed, audience)]
        return had != bool(keys)

    def bound_url_asks(self, per_session: int, max_age_s: float) -> None:
        """Bounds for URL-mode elicitations remembered from now on (a reload changes them)."""
        self.url_asks.per_session, self.url_asks.max_age_s = per_session, max_age_s

    def calling(self, server: str, peer: Peer | None) -> "Calling":
        """Mark `peer`'s request as in flight on `server` for the duration of the `with` block."""
        return Calling(self._inflight, self.logs, server, peer)

    def forget(self, key: str) -> list[tuple[str, str | None]]:
        """A client session ended: drop what the relay remembers about it. Returns the (exposed URI, audience) it
        was the last to watch: nobody needs them from their servers any more."""
        self.detach(key)
        self.logs.forget(key)
        self.url_asks.forget(key)
        left: list[tuple[str, str | None]] = []
        for watched, keys in list(self._subscribers.items()):
            keys.discard(key)
            if not keys:
                del self._subscribers[watched]
                left.append(watched)
        return left

    # -- requests from a downstream -------------------------------------------------------------

    def callbacks(
        self, server: str, timeout_s: float, configured: list[types.Root] | None = None, audience: str | None = None
    ) -> dict[str, Any]:
        """The `mcp.Client` callbacks of one downstream: each relays to the client session in flight (`roots`: what
        it is told when it asks for roots with none in flight: `servers.<name>.roots`; `audience`: the identity
        whose own process of a per-user server it is: its logs reach that identity's sessions alone)."""

        async def sampling(ctx: ClientRequestContext, params: types.CreateMessageRequestParams) -> Any:
            return await self._pushed(server, types.CreateMessageRequest(params=params), timeout_s)

        async def elicitation(ctx: ClientRequestContext, params: types.ElicitRequestParams) -> Any:
            return await self._pushed(server, types.ElicitRequest(params=params), timeout_s)

        async def roots(ctx: ClientRequestContext) -> Any:
            if not self._inflight.get(server):
                return await self._roots_outside(server, timeout_s, configured or [])
            return await self._pushed(server, types.ListRootsRequest(), timeout_s)

        async def log(params: types.LoggingMessageNotificationParams) -> None:
            await self.logs.route(
                server, params, self._inflight.get(server, []), self._connections.get, self.identity_of, audience
            )

        return {
            "sampling_callback": sampling,
            "elicitation_callback": elicitation,
            "list_roots_callback": roots,
            "logging_callback": log,
        }

    async def _pushed(self, server: str, request: Any, timeout_s: float) -> Any:
        peers = {peer.key: peer for peer in self._inflight.get(server, [])}
        if not peers:
            return refusal(
                f"the gateway has no client call in flight on server {server!r}, so there is no client to ask "
                f"for {request.method}; ask only while handling a request"
            )
        if len(peers) > 1:
            return refusal(
                f"calls of {len(peers)} client sessions are in flight on server {server!r}, and a handshake-era "
                f"{request.method} does not say which one it is for; connect the server with protocol: modern "
                "(its input requests then travel in the call's own answer) or retry"
            )
        return await self.asking.ask(server, next(iter(peers.values())), request, timeout_s)

    async def _roots_outside(self, server: str, timeout_s: float, configured: list[types.Root]) -> Any:
        """`roots/list` with no call in flight (servers ask at start): behind the stdio front its one client, when it
        offers roots; else the roots configured for the server (none by default). Never an error: some servers
        take one as fatal at start."""
        for key, connection in self.connected()[:1] if self.sole else []:
            caps = connection.client_capabilities
            if caps is not None and caps.roots is not None:
                answer = await self.asking.ask(
                    server, Peer(key, connection, None, caps, False), types.ListRootsRequest(), timeout_s
                )
                if isinstance(answer, types.ListRootsResult):
                    return answer
        return types.ListRootsResult(roots=configured)

    async def elicitation_complete(self, server: str, elicitation_id: str) -> None:
        """A downstream finished a URL-mode elicitation: tell the session it asked (its call may be over)."""
        key = self.url_asks.asked(server, elicitation_id)
        if key is None:  # logged, saying why
            return
        done = types.ElicitCompleteNotification(
            params=types.ElicitCompleteNotificationParams(elicitation_id=elicitation_id)
        )
        for peer in self._inflight.get(server, []):
            if peer.key == key and peer.request_id is not None:  # on its call's stream: ahead of the call's answer
                await quietly(peer.session.send_notification, done, peer.request_id)
                return
        connection = self._connections.get(key)
        if connection is not None:
            await quietly(standalone, connection, done)

    # -- notifications from a downstream --------------------------------------------------------

    async def updated(self, exposed_uri: str, audience: str | None = None) -> None:
        """A downstream's resource changed: tell the sessions subscribed to it (and no other); `audience`: the
        identity whose own process of a per-user server it is."""
        for key in list(self._subscribers.get((exposed_uri, audience), ())):
            session = self._connections.get(key)
            if session is not None:
                await quietly(session.send_resource_updated, exposed_uri)


class Calling:
    """`Relay.calling`'s block: a class, not a generator, as every forwarded request enters one (a generator's
    context manager costs four frames and a StopIteration a request)."""

    __slots__ = ("_inflight", "_logs", "_peer", "_server")

    def __init__(self, inflight: dict[str, list[Peer]], logs: Logs, server: str, peer: Peer | None) -> None:
        self._inflight, self._logs, self._server, self._peer = inflight, logs, server, peer

    def __enter__(self) -> None:
        if self._peer is not None:
            self._inflight[self._server].append(self._peer)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._peer is None:
            return
        peers = self._inflight[self._server]
        peers.remove(self._peer)
        if not peers:
            del self._inflight[self._server]
        self._logs.ended(self._server, self._peer)
