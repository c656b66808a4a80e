"""Signing a person in to an OAuth-protected downstream server (DESIGN §16), so each identity signs in once per
server and its calls there go out with its own token alone (the tokens and the connection's provider are
`oauth_providers.OAuthProviders`', which this class extends). Two ways to meet a person:

- a call that needs a sign-in (`admit`) gets `SignInNeeded`, whose text is what the model shows: a `/connect/<server>`
  link carrying a ticket, single-use, that stands for the identity;
- a sign-in (`begin`, then `finish` from `/oauth/callback`) runs the SDK's flow (discovery from the server's 401,
  registration, authorization code + PKCE with the resource indicator) in a task of its own. Its state is bound to the
  identity and to the browser that began it (a secret in a cookie) and used once: a callback from another browser is
  refused and leaves the sign-in to its owner. A sign-in finishes on the replica that began it.
"""

import logging
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from urllib.parse import parse_qs, urlparse

import anyio
import anyio.abc
from mcp.shared.auth import AuthorizationCodeResult

from gateway import sdk
from gateway.config import GatewayConfig, ServerConfig
from gateway.downstreams.oauth_providers import OAuthProviders, SignInNeeded, SignInRefused
from gateway.errors import describe
from gateway.session import Identity
from gateway.store.tokens import Tokens

logger = logging.getLogger(__name__)
SIGN_IN_S = 600.0
"""How long a begun sign-in waits for the person to come back through `/oauth/callback`."""
TICKET_S = 600.0
"""How long a sign-in link from a call stays good (used once)."""
MAX_TICKETS = 10_000
_PING = {"jsonrpc": "2.0", "id": "gateway-sign-in", "method": "ping"}
"""What a sign-in sends the server: its 401 starts the SDK's flow; the answer after it is not read."""


@dataclass(eq=False)
class _Pending:
    identity: Identity
    server: str
    browser: str
    """The secret of the browser that began it (its cookie): only that browser may finish it."""
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    state: str = ""
    answer: AuthorizationCodeResult | None = None
    answered: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    error: str | None = None


class OAuth(OAuthProviders):
    """The sign-ins and per-identity providers of every `auth: {type: oauth}` server; run it as `async with`."""

    def __init__(self, servers: Callable[[], Mapping[str, ServerConfig]], store: Tokens | None, base_url: str) -> None:
        super().__init__(servers, store, base_url)
        self._pending: dict[str, _Pending] = {}
        """Sign-ins waiting for their callback, by the state the SDK put in the authorization URL."""
        self._tickets: dict[str, tuple[str, Identity, float]] = {}
        """Sign-in links handed out with `SignInNeeded`: ticket -> (server, identity, when it ends)."""
        self._begun: dict[tuple[str, str], _Pending] = {}
        """The sign-in under way per (identity key, server)."""
        self._waiting: dict[tuple[str, str], set[anyio.Event]] = {}
        """Calls waiting for a person's sign-in per (identity key, server) (`signed_in`): one event each."""
        self._tg: anyio.abc.TaskGroup | None = None

    async def __aenter__(self) -> "OAuth":
        self._tg = await anyio.create_task_group().__aenter__()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._tg is not None
        tg, self._tg = self._tg, None
        tg.cancel_scope.cancel()
        await tg.__aexit__(None, None, None)

    def link(self, server: str, identity: Identity) -> str | None:
        """A sign-in link for `identity` to show where they are (a model's answer): it stands for them, once."""
        if self.base_url is None:
            return None
        now = time.monotonic()
        self._tickets = {t: v for t, v in self._tickets.items() if v[2] > now}
        while len(self._tickets) >= MAX_TICKETS:
            del self._tickets[next(iter(self._tickets))]
        ticket = secrets.token_urlsafe(24)
        self._tickets[ticket] = (server, identity, now + TICKET_S)
        return f"{self.connect_url(server)}?ticket={ticket}"

    def redeem(self, server: str, ticket: str) -> Identity | None:
        """The identity a link's ticket stands for; None if it was used, has ended, or is for another server."""
        found = self._tickets.pop(ticket, None)
        if found is None or found[0] != server or found[2] <= time.monotonic():
            return None
        return found[1]

    async def admit(self, server: str, identity: Identity) -> None:
        """Raise `SignInNeeded` unless `identity` holds a grant for `server` (before any connection is made)."""
        if await self.storage(server, identity).get_tokens() is None:
            waiter = partial(self.signed_in, server, identity)
            raise SignInNeeded(server, self.link(server, identity), waiter)

    async def signed_in(self, server: str, identity: Identity, timeout_s: float) -> bool:
        """Wait up to `timeout_s` for `identity` to finish signing in to `server` here; True if they did. (A sign-in
        finished on another replica while this waits is not seen: the wait then ends at its bound.)"""
        waiting = self._waiting.setdefault((identity.key, server), set())
        done = anyio.Event()
        waiting.add(done)
        try:
            if await self.storage(server, identity).get_tokens() is not None:
                return True  # finished before this wait began (its event was set for nobody), or on another replica
            with anyio.move_on_after(timeout_s):
                await done.wait()
        finally:
            waiting.discard(done)
            if not waiting:
                self._waiting.pop((identity.key, server), None)
        return done.is_set()

    # -- a person's sign-in ------------------------------------------------------------------------

    async def begin(self, server: str, identity: Identity) -> tuple[str | None, str]:
        """Start `identity`'s sign-in to `server`: (the authorization URL to send their browser to, or None when
        their grant still works; the secret that browser must bring back to `finish`). Raises SignInRefused when the
        flow fails before it has a URL."""
        storage = self.storage(server, identity, signing_in=True)
        ready = anyio.Event()
        found: dict[str, str] = {}
        pending = _Pending(identity, server, secrets.token_urlsafe(24))

        async def redirect(url: str) -> None:
            state = parse_qs(urlparse(url).query).get("state", [""])[0]
            self._pending[state] = pending
            pending.state = state
            found.update(url=url, state=state)
            ready.set()

        async def callback() -> AuthorizationCodeResult:
            await pending.answered.wait()
            assert pending.answer is not None
            return pending.answer

        async def run() -> None:
            settings = self._settings(server)
            provider = self._provider(server, storage, redirect, callback)
            try:
                with pending.scope:
                    try:
                        with anyio.fail_after(SIGN_IN_S):
                            async with sdk.create_mcp_http_client(headers=dict(settings.headers)) as http:
                                accept = {"accept": "application/json, text/event-stream"}
                                await http.post(settings.url, json=_PING, headers=accept, auth=provider)
                    except Exception as exc:  # noqa: BLE001 -- reported to whoever waits on this sign-in
                        pending.error = describe(exc)
                        logger.warning("sign-in to %s failed: %s", server, pending.error)
                if pending.scope.cancelled_caught:
                    pending.error = f"a newer sign-in to {server} replaced this one"
            finally:
                if self._begun.get(key) is pending:
                    del self._begun[key]
                if self._pending.get(pending.state) is pending:
                    del self._pending[pending.state]
                pending.done.set()
                ready.set()

        # One sign-in per person and server at a time: a newer one ends the older (and bounds what a person holds).
        key = (identity.key, server)
        older, self._begun[key] = self._begun.get(key), pending
        if older is not None:
            self._pending.pop(older.state, None)  # at once: its callback finds nothing to finish
            older.scope.cancel()
        assert self._tg is not None, "OAuth is not running"
        self._tg.start_soon(run, name=f"sign-in to {server}")
        await ready.wait()
        if "url" not in found and pending.error is not None:
            raise SignInRefused(f"Signing in to {server} failed before the authorization server: {pending.error}")
        return found.get("url"), pending.browser

    async def finish(self, state: str, code: str, iss: str | None, browser: str | None) -> tuple[str, Identity]:
        """Hand the sign-in with `state` its code, from the `browser` that began it: (the server, who signed in)
        once the tokens are kept."""
        pending = self._pending.get(state)
        if pending is None:
            raise SignInRefused("This sign-in link was used already or has expired; start again from the call's link.")
        if browser is None or not secrets.compare_digest(browser, pending.browser):
            raise SignInRefused(
                f"This sign-in to {pending.server} was started by someone else (or in another browser); "
                "sign in as yourself from your own link."
            )
        del self._pending[state]  # single-use
        pending.answer = AuthorizationCodeResult(code=code, state=state, iss=iss)
        pending.answered.set()
        await pending.done.wait()
        if pending.error is not None:
            raise SignInRefused(f"Signing in to {pending.server} failed: {pending.error}")
        for done in self._waiting.pop((pending.identity.key, pending.server), set()):
            done.set()
        return pending.server, pending.identity


def public_base(config: GatewayConfig) -> str:
    """Where people's browsers reach this gateway: `auth.resource_url` without its `/mcp`, else the listen address."""
    if config.auth.resource_url is not None:
        url = config.auth.resource_url.rstrip("/")
        return url.removesuffix("/mcp")
    return f"http://{config.listen.host}:{config.listen.port}"
