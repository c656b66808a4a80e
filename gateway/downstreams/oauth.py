"""Acting as the person on an OAuth-protected downstream server (DESIGN §16): each identity signs in once per server,
and its calls there go out with its own token alone.

The OAuth itself is the SDK's (`mcp.client.auth.OAuthClientProvider`: discovery from the server's 401, registration,
authorization code + PKCE with the resource indicator, refresh before expiry and on 401, step-up on
`insufficient_scope`); this module gives it the gateway's sealed storage (`oauth_tokens`) and two ways to meet a
person:

- a connection's provider (`provider`) never waits for one: where the SDK would send a person to the authorization
  server it forgets the stored grant (revoked, or its refresh expired) and raises `SignInNeeded`, whose text is
  what the model shows: the gateway's own `/connect/<server>` link;
- a sign-in (`begin` then `finish`) runs the same SDK flow in a task of its own: `begin` returns the authorization
  URL the person's browser goes to, `finish` hands the flow the code from `/oauth/callback`. Its state is bound to
  the identity that began it and used once: a callback from anyone else is refused and leaves it pending.
"""

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qs, quote, urlparse

import anyio
import anyio.abc
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata
from pydantic import AnyUrl

from gateway import sdk
from gateway.config import GatewayConfig, HttpServerConfig, ServerConfig, SseServerConfig
from gateway.downstreams.oauth_tokens import SealedTokens, sealer
from gateway.errors import GatewayError, describe
from gateway.session import Identity
from gateway.store.tokens import Tokens

logger = logging.getLogger(__name__)
OAuthServer = HttpServerConfig | SseServerConfig
SIGN_IN_S = 600.0
"""How long a begun sign-in waits for the person to come back through `/oauth/callback`."""
_PING = {"jsonrpc": "2.0", "id": "gateway-sign-in", "method": "ping"}
"""What a sign-in sends the server: its 401 starts the SDK's flow; the answer after it is not read."""


class SignInNeeded(GatewayError):
    def __init__(self, server: str, url: str) -> None:
        self.server, self.url = server, url
        super().__init__(
            f"[gateway] Sign in to {server}: {url} — then call again. (The server acts as each person; "
            "show this link to the user, who opens it in a browser.)"
        )


class SignInRefused(GatewayError):
    pass


@dataclass(eq=False)
class _Pending:
    identity: str
    server: str
    answer: AuthorizationCodeResult | None = None
    answered: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    error: str | None = None


class OAuth:
    """The sign-ins and per-identity providers of every `auth: {type: oauth}` server; run it as `async with`."""

    def __init__(self, servers: Callable[[], Mapping[str, ServerConfig]], store: Tokens | None, base_url: str) -> None:
        self._servers = servers
        """The running config's servers, read at each use: a reload may add, change or drop one."""
        self.store = store
        self.base_url = base_url.rstrip("/")
        """Where people reach this gateway's `/connect/<server>` and `/oauth/callback`."""
        self._pending: dict[str, _Pending] = {}
        """Sign-ins waiting for their callback, by the state the SDK put in the authorization URL."""
        self._tg: anyio.abc.TaskGroup | None = None

    async def __aenter__(self) -> "OAuth":
        self._tg = await anyio.create_task_group().__aenter__()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._tg is not None
        tg, self._tg = self._tg, None
        tg.cancel_scope.cancel()
        await tg.__aexit__(None, None, None)

    def connect_url(self, server: str) -> str:
        return f"{self.base_url}/connect/{quote(server)}"

    @property
    def redirect_uri(self) -> str:
        return f"{self.base_url}/oauth/callback"

    # -- a connection's provider -------------------------------------------------------------------

    def provider(self, server: str, identity: Identity) -> OAuthClientProvider:
        """The httpx2 auth of `identity`'s connection to `server`: their token, refreshed; never a person's wait."""
        storage = self.storage(server, identity)

        async def no_person(url: str) -> None:
            await storage.forget()  # the grant no longer works: the next call says "sign in", not "down"
            raise SignInNeeded(server, self.connect_url(server))

        return self._provider(server, storage, no_person, _never)

    async def admit(self, server: str, identity: Identity) -> None:
        """Raise `SignInNeeded` unless `identity` holds a grant for `server` (before any connection is made)."""
        if await self.storage(server, identity).get_tokens() is None:
            raise SignInNeeded(server, self.connect_url(server))

    async def sign_out(self, server: str, identity: Identity) -> None:
        await self.storage(server, identity).forget()

    def storage(self, server: str, identity: Identity) -> SealedTokens:
        settings = self._settings(server)
        assert settings.auth is not None
        if self.store is None:
            raise SignInRefused("this gateway keeps no tokens (its store has none); OAuth servers need one")
        configured = None
        if settings.auth.client_id is not None:
            configured = OAuthClientInformationFull(
                client_id=settings.auth.client_id,
                client_secret=settings.auth.client_secret,
                redirect_uris=[AnyUrl(self.redirect_uri)],
                token_endpoint_auth_method="client_secret_post" if settings.auth.client_secret else "none",
            )
        return SealedTokens(self.store, sealer(settings.auth.token_key_env), identity, server, configured)

    # -- a person's sign-in ------------------------------------------------------------------------

    async def begin(self, server: str, identity: Identity) -> str | None:
        """Start `identity`'s sign-in to `server`: the authorization URL to send their browser to (None: their
        grant still works, nothing to do). Raises SignInRefused when the flow fails before it has one."""
        storage = self.storage(server, identity)
        ready = anyio.Event()
        found: dict[str, str] = {}
        pending = _Pending(identity.key, server)

        async def redirect(url: str) -> None:
            state = parse_qs(urlparse(url).query).get("state", [""])[0]
            self._pending[state] = pending
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
                with anyio.fail_after(SIGN_IN_S):
                    async with sdk.create_mcp_http_client(headers=dict(settings.headers)) as http:
                        accept = {"accept": "application/json, text/event-stream"}
                        await http.post(settings.url, json=_PING, headers=accept, auth=provider)
            except Exception as exc:  # noqa: BLE001 -- reported to whoever waits on this sign-in
                pending.error = describe(exc)
                logger.warning("sign-in to %s failed: %s", server, pending.error)
            finally:
                self._pending.pop(found.get("state", ""), None)
                pending.done.set()
                ready.set()

        assert self._tg is not None, "OAuth is not running"
        self._tg.start_soon(run, name=f"sign-in to {server}")
        await ready.wait()
        if "url" not in found and pending.error is not None:
            raise SignInRefused(f"Signing in to {server} failed before the authorization server: {pending.error}")
        return found.get("url")

    async def finish(self, identity: Identity, state: str, code: str, iss: str | None) -> str:
        """Hand the sign-in with `state` its code; the server's name once the tokens are kept."""
        pending = self._pending.get(state)
        if pending is None:
            raise SignInRefused("This sign-in link was used already or has expired; start again from the call's link.")
        if pending.identity != identity.key:
            raise SignInRefused(f"This sign-in to {pending.server} was started by someone else; sign in as yourself.")
        del self._pending[state]  # single-use
        pending.answer = AuthorizationCodeResult(code=code, state=state, iss=iss)
        pending.answered.set()
        await pending.done.wait()
        if pending.error is not None:
            raise SignInRefused(f"Signing in to {pending.server} failed: {pending.error}")
        return pending.server

    # -- the SDK's provider --------------------------------------------------------------------------

    @property
    def servers(self) -> dict[str, OAuthServer]:
        """The servers that sign each person in."""
        return {
            name: s
            for name, s in self._servers().items()
            if isinstance(s, HttpServerConfig | SseServerConfig) and s.auth is not None
        }

    def _settings(self, server: str) -> OAuthServer:
        settings = self.servers.get(server)
        if settings is None:
            raise SignInRefused(f"No server {server!r} signs people in (auth: {{type: oauth}}): {sorted(self.servers)}")
        return settings

    def _provider(
        self,
        server: str,
        storage: SealedTokens,
        redirect: Callable[[str], Awaitable[None]],
        callback: Callable[[], Awaitable[AuthorizationCodeResult]],
    ) -> OAuthClientProvider:
        settings = self._settings(server)
        assert settings.auth is not None
        metadata = OAuthClientMetadata(
            redirect_uris=[AnyUrl(self.redirect_uri)],
            client_name="mcp-gateway",
            grant_types=["authorization_code", "refresh_token"],
            scope=" ".join(settings.auth.scopes) or None,
            token_endpoint_auth_method="none",
        )
        return sdk.ResumingOAuthProvider(
            settings.url,
            metadata,
            storage,
            redirect_handler=redirect,
            callback_handler=callback,
            client_metadata_url=settings.auth.client_metadata_url,
        )


async def _never() -> AuthorizationCodeResult:
    raise AssertionError("a connection's provider raises SignInNeeded before it waits for a callback")


def public_base(config: GatewayConfig) -> str:
    """Where people's browsers reach this gateway: `auth.resource_url` without its `/mcp`, else the listen address."""
    if config.auth.resource_url is not None:
        url = config.auth.resource_url.rstrip("/")
        return url.removesuffix("/mcp")
    return f"http://{config.listen.host}:{config.listen.port}"
