"""Each caller acts as themselves on a downstream server without a browser (`auth: {type: token_exchange}`, DESIGN
§16; RFC 8693): their verified front-door JWT (`Identity.jwt`) is exchanged at the configured token endpoint for a
token for that server, sealed per (identity, server) in the token store until it ends (the same `SealedTokens` as
`auth: oauth`), and their calls go out on their own pooled connection with it. `admit` runs the exchange before a
connection is leased, so a caller without a JWT, or one the authorization server refuses, gets an answer naming why
and no connection. The JWT is sent to that token endpoint only, never to the server. (A service identity shared by
every caller is `downstreams.client_credentials`.)
"""

import base64
import math
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from functools import partial
from urllib.parse import quote

import anyio
import httpx2
from cachetools import LRUCache
from mcp.shared.auth import OAuthToken
from pydantic import ValidationError

from gateway import sdk
from gateway.config import HttpServerConfig, ServerConfig, SseServerConfig, TokenExchangeConfig
from gateway.downstreams.oauth_tokens import SealedTokens, sealer
from gateway.errors import GatewayError, describe
from gateway.session import Identity
from gateway.store.tokens import Tokens

EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
TOKEN_TYPES = {
    "jwt": "urn:ietf:params:oauth:token-type:jwt",
    "access_token": "urn:ietf:params:oauth:token-type:access_token",
}
LIVE_KEPT = 10_000
"""(identity, server) pairs whose token end is remembered (the least recently used is read from the store again)."""
EXCHANGE_TIMEOUT_S = 30.0
"""How long the token endpoint may take to answer an exchange."""
_ADVICE = {
    "invalid_grant": "the authorization server does not accept the caller's JWT: check that it trusts the gateway's "
    "identity provider (issuer, audience), or have the caller get a fresh token",
    "invalid_target": "it issues no token for this audience/resource: check `audience` and `resource` in the server's "
    "`auth`",
    "invalid_client": "check `client_id` and `client_secret` in the server's `auth`",
    "unauthorized_client": "the gateway's client may not use token exchange there: allow the grant for it",
    "invalid_scope": "check `scopes` in the server's `auth`",
}


_WITHOUT_JWT = {
    "jwt": "called without it here",  # from the page, whose sign-in is a cookie
    "static": "called with a static token",
    "os": "is a stdio session's user",
    "anonymous": "called without any token",
}


class ExchangeNeedsJwt(GatewayError):
    def __init__(self, server: str, identity: Identity) -> None:
        how = _WITHOUT_JWT[identity.kind]
        super().__init__(
            f"[gateway] {server} acts as each caller by exchanging the JWT they called the gateway with (auth: "
            f"token_exchange), and this call carries none ({identity.name} {how}). Call through the HTTP front with "
            f"a bearer JWT from the gateway's identity provider (auth.jwt); stdio and static-token callers cannot "
            f"reach {server}."
        )


class ExchangeRefused(GatewayError):
    pass


class Grants:
    """The exchanged tokens of every `token_exchange` server, per caller."""

    def __init__(self, servers: Callable[[], Mapping[str, ServerConfig]], store: Tokens | None) -> None:
        self._servers = servers
        """The running config's servers, read at each use: a reload may add, change or drop one."""
        self._store = store
        self._locks: dict[tuple[str, str], anyio.Lock] = {}
        """One exchange at a time per (identity, server): concurrent first calls share it."""
        self._live: LRUCache[tuple[str, str], float] = LRUCache(maxsize=LIVE_KEPT)
        """(identity key, server) -> when their token counts as ended (monotonic): a call before then reads no store
        (a file read in a worker thread, or a Redis round trip, on every call otherwise)."""

    # -- token exchange ----------------------------------------------------------------------------

    async def admit(self, server: str, identity: Identity) -> None:
        """Hold a live exchanged token for `identity` at `server`, exchanging their JWT for one if needed.

        Raises ExchangeNeedsJwt (the call carries no JWT) or ExchangeRefused (the authorization server said no)."""
        key = (identity.key, server)
        if self._live.get(key, -math.inf) > time.monotonic():
            return
        storage = self.storage(server, identity)
        tokens = await storage.get_tokens()
        if not _live(tokens):
            if identity.jwt is None:
                raise ExchangeNeedsJwt(server, identity)
            lock = self._locks.setdefault(key, anyio.Lock())
            try:
                async with lock:
                    tokens = await storage.get_tokens()  # another call of theirs may have exchanged meanwhile
                    if not _live(tokens):
                        await storage.set_tokens(await self._exchange(server, identity.jwt, identity))
                        tokens = await storage.get_tokens()  # its end counted as every read counts it
            finally:
                if not lock.locked() and not lock.statistics().tasks_waiting and self._locks.get(key) is lock:
                    del self._locks[key]
        assert tokens is not None
        self._live[key] = time.monotonic() + (math.inf if tokens.expires_in is None else tokens.expires_in)

    def auth(self, server: str, identity: Identity) -> httpx2.Auth:
        """The httpx2 auth of `identity`'s connection to `server`: the token `admit` keeps for them."""
        return _Exchanged(self.storage(server, identity), partial(self._forget, server, identity))

    async def _forget(self, server: str, identity: Identity) -> None:
        """The server refused their token: the next call exchanges anew."""
        self._live.pop((identity.key, server), None)
        await self.storage(server, identity).forget()

    def storage(self, server: str, identity: Identity) -> SealedTokens:
        settings = self._settings(server)
        if self._store is None:
            raise ExchangeRefused("this gateway keeps no tokens (its store has none); token_exchange servers need one")
        assert isinstance(settings.auth, TokenExchangeConfig)
        return SealedTokens(self._store, sealer(settings.auth.token_key_env), identity, server)

    async def _exchange(self, server: str, subject: str, identity: Identity) -> OAuthToken:
        settings = self._settings(server)
        auth = settings.auth
        assert isinstance(auth, TokenExchangeConfig)
        form = {
            "grant_type": EXCHANGE_GRANT,
            "subject_token": subject,
            "subject_token_type": TOKEN_TYPES[auth.subject_token_type],
            "requested_token_type": TOKEN_TYPES["access_token"],
        }
        resource = auth.resource or (settings.url if auth.audience is None else None)
        form |= {k: v for k, v in (("audience", auth.audience), ("resource", resource)) if v is not None}
        if auth.scopes:
            form["scope"] = " ".join(auth.scopes)
        headers = {"accept": "application/json"}
        if auth.client_id is not None and auth.client_secret is not None:  # RFC 6749 §2.3.1: form-encoded, then Basic
            pair = f"{quote(auth.client_id, safe='')}:{quote(auth.client_secret, safe='')}"
            headers["authorization"] = f"Basic {base64.b64encode(pair.encode()).decode()}"
        elif auth.client_id is not None:
            form["client_id"] = auth.client_id
        where = f"the token endpoint of {server} ({auth.token_endpoint})"
        try:
            with anyio.fail_after(EXCHANGE_TIMEOUT_S):
                async with sdk.create_mcp_http_client() as http:
                    response = await http.post(auth.token_endpoint, data=form, headers=headers)
        except (httpx2.HTTPError, TimeoutError) as exc:
            reason = f"no answer in {EXCHANGE_TIMEOUT_S:.0f} s" if isinstance(exc, TimeoutError) else describe(exc)
            raise ExchangeRefused(
                f"Could not reach {where} to exchange {identity.name}'s token: {reason}. Check that the gateway "
                "reaches it (the URL, the network), then call again."
            ) from None
        if response.status_code != 200:
            error, description = _error_of(response)
            advice = _ADVICE.get(error, "see the authorization server's log for why")
            raise ExchangeRefused(
                f"[gateway] {where} refused to exchange {identity.name}'s token for one for {server}: "
                f"{error} (HTTP {response.status_code}{': ' + description if description else ''}). {advice}."
            )
        try:
            return OAuthToken.model_validate_json(response.content)
        except ValidationError:
            raise ExchangeRefused(
                f"{where} answered the exchange without a usable access token (RFC 8693 `access_token`, `token_type` "
                "Bearer); check that it issues access tokens by token exchange to the gateway's client."
            ) from None

    def _settings(self, server: str) -> HttpServerConfig | SseServerConfig:
        settings = self._servers().get(server)
        if not isinstance(settings, HttpServerConfig | SseServerConfig) or not isinstance(
            settings.auth, TokenExchangeConfig
        ):
            raise ExchangeRefused(f"Server {server!r} has no `auth: {{type: token_exchange}}` in the config now.")
        return settings


def _live(tokens: OAuthToken | None) -> bool:
    """Held and not about to end (`SealedTokens` counts `expires_in` from now, early by `REFRESH_EARLY_S`)."""
    return tokens is not None and (tokens.expires_in is None or tokens.expires_in > 0)


def _error_of(response: httpx2.Response) -> tuple[str, str]:
    """RFC 6749 §5.2's `error` and `error_description`, from whatever the endpoint sent."""
    try:
        body = response.json()
    except ValueError:
        return "an answer that is not JSON", ""
    if not isinstance(body, dict):
        return "an answer that is not an error object", ""
    description = body.get("error_description")
    return str(body.get("error", "no error code")), str(description)[:300] if description else ""


class _Exchanged(httpx2.Auth):
    """Sends the exchanged token `admit` keeps (read from the store once, then until it ends); a 401 forgets it, so
    the caller's next call exchanges their JWT anew."""

    def __init__(self, storage: SealedTokens, forget: Callable[[], Awaitable[None]]) -> None:
        self._storage, self._forget = storage, forget
        self._held: tuple[str, float] | None = None
        """(access token, monotonic time it counts as ended)."""

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        if self._held is None or self._held[1] <= time.monotonic():
            tokens = await self._storage.get_tokens()
            ends = float("inf") if tokens is None or tokens.expires_in is None else tokens.expires_in
            self._held = None if tokens is None else (tokens.access_token, time.monotonic() + ends)
        if self._held is not None:
            request.headers["authorization"] = f"Bearer {self._held[0]}"
        response = yield request
        if response.status_code == 401:
            self._held = None
            await self._forget()
