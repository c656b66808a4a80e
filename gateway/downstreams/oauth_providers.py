"""A connection's side of OAuth on a downstream server (DESIGN §16): the servers that sign each person in, each
identity's sealed token storage there (`oauth_tokens`), and the SDK's provider built on it
(`mcp.client.auth.OAuthClientProvider`). A connection's provider (`provider`) never waits for a person: where the SDK
would send one to the authorization server it forgets the stored grant (revoked, or its refresh expired) and raises
`SignInNeeded`, whose text is what the model shows. Signing people in is `oauth_signin.SigningIn`'s."""

import functools
from collections.abc import Awaitable, Callable, Mapping
from urllib.parse import quote

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata
from pydantic import AnyUrl

from gateway.config import HttpServerConfig, OAuthConfig, ServerConfig, SseServerConfig
from gateway.downstreams import oauth_sdk
from gateway.downstreams.oauth_tokens import SealedTokens, sealer
from gateway.errors import GatewayError
from gateway.session import Identity
from gateway.store.local.signins import LocalSignIns
from gateway.store.signins import SignIns
from gateway.store.tokens import Tokens

OAuthServer = HttpServerConfig | SseServerConfig


class SignInNeeded(GatewayError):
    def __init__(
        self, server: str, url: str | None, signed_in: Callable[[float], Awaitable[bool]] | None = None
    ) -> None:
        self.server, self.url = server, url
        self.signed_in = signed_in
        """Waits (up to the seconds given) for this person's sign-in to finish on this replica; True if it did."""
        if url is None:  # a stdio session with no page beside it: nothing here serves a browser
            super().__init__(
                f"[gateway] Sign in to {server}: ask the user to run `gateway login {server}` in a terminal "
                "— then call again. (The server acts as each person.)"
            )
            return
        super().__init__(
            f"[gateway] Sign in to {server}: {url} — then call again. (The server acts as each person; "
            "show this link to the user, who opens it in a browser.)"
        )

    def hide(self, text: str) -> str:
        """`text` with this link's ticket withheld: it stands for the person until used, so only they may see it."""
        if self.url is None or "?ticket=" not in self.url:
            return text
        return text.replace(self.url, self.url.split("?ticket=")[0] + "?ticket=(withheld)")


@functools.lru_cache(maxsize=64)
def _configured(client_id: str, secret: str | None, redirect_uri: str) -> OAuthClientInformationFull:
    """The client a server's config names, a function of its values alone and built once per value, as `_cipher` is
    (`oauth_tokens`): `storage` runs on every call to the server, and building the model there cost more than the
    rest of the call's admission (`SealedTokens` hands each connection a copy)."""
    # A secret goes in HTTP Basic: the method every authorization server must accept from a client issued a password
    # (RFC 6749 §2.3.1; RFC 8414's default when the metadata names none).
    method = "client_secret_basic" if secret else "none"
    return OAuthClientInformationFull(
        client_id=client_id,
        client_secret=secret,
        redirect_uris=[AnyUrl(redirect_uri)],
        token_endpoint_auth_method=method,
    )


class SignInRefused(GatewayError):
    pass


class OAuthProviders:
    """The per-identity token storage and providers of every `auth: {type: oauth}` server."""

    def __init__(
        self,
        servers: Callable[[], Mapping[str, ServerConfig]],
        store: Tokens | None,
        base_url: str,
        flows: SignIns | None = None,
    ) -> None:
        self.flows: SignIns = flows if flows is not None else LocalSignIns()
        """What lives between the steps of a sign-in, shared by every replica (`store.signins`: expiring records):
        tickets and begun sign-ins. (A step-up is kept with the tokens: `gateway login`, another process, reads it.)"""
        self._servers = servers
        """The running config's servers, read at each use: a reload may add, change or drop one."""
        self.store = store
        self.base_url: str | None = base_url.rstrip("/")
        """Where people reach this gateway's `/connect/<server>` and `/oauth/callback`; None: nowhere (a stdio
        session without `--ui`), so a call that needs a sign-in points at `gateway login`."""

    def connect_url(self, server: str) -> str | None:
        return None if self.base_url is None else f"{self.base_url}/connect/{quote(server)}"

    @property
    def redirect_uri(self) -> str:
        # Without a base only connections run, and a connection never sends a person to it (`provider`).
        return f"{self.base_url or 'http://127.0.0.1'}/oauth/callback"

    # -- a connection's provider -------------------------------------------------------------------

    def provider(self, server: str, identity: Identity) -> OAuthClientProvider:
        """The httpx2 auth of `identity`'s connection to `server`: their token, refreshed; never a person's wait."""
        storage = self.storage(server, identity)

        async def no_person(url: str) -> None:
            await storage.forget()  # the grant no longer works: the next call says "sign in", not "down"
            # No ticket: this ends a connection attempt, whose error is logged; the next call's admit hands one out.
            raise SignInNeeded(server, self.connect_url(server))

        # The step-up is kept for the call's `failed` and the person's sign-in, wherever it runs.
        return self._provider(server, storage, no_person, _never, stepped_up=storage.ask_step_up)

    async def sign_out(self, server: str, identity: Identity) -> None:
        await self.storage(server, identity).forget()

    def storage(
        self, server: str, identity: Identity, *, signing_in: bool = False, renewing: bool = False
    ) -> SealedTokens:
        """`identity`'s tokens for `server`; `signing_in`: for a sign-in's flow (its callback's registration);
        `renewing`: a sign-in for more scope, whose flow must not take the narrower grant kept there for it."""
        settings = self._settings(server)
        assert isinstance(settings.auth, OAuthConfig)
        if self.store is None:
            raise SignInRefused("this gateway keeps no tokens (its store has none); OAuth servers need one")
        configured = None
        if settings.auth.client_id is not None:
            configured = _configured(settings.auth.client_id, settings.auth.client_secret, self.redirect_uri)
        redirect = self.redirect_uri if signing_in else None
        fernet = sealer(settings.auth.token_key_env)
        return SealedTokens(self.store, fernet, identity, server, configured, redirect, renewing=renewing)

    # -- the SDK's provider --------------------------------------------------------------------------

    @property
    def servers(self) -> dict[str, OAuthServer]:
        """The servers that sign each person in."""
        return {
            name: s
            for name, s in self._servers().items()
            if isinstance(s, HttpServerConfig | SseServerConfig) and isinstance(s.auth, OAuthConfig)
        }

    def _settings(self, server: str) -> OAuthServer:
        settings = self._servers().get(server)  # one lookup: this runs on every call to the server
        if not isinstance(settings, HttpServerConfig | SseServerConfig) or not isinstance(settings.auth, OAuthConfig):
            raise SignInRefused(f"No server {server!r} signs people in (auth: {{type: oauth}}): {sorted(self.servers)}")
        return settings

    def _provider(
        self,
        server: str,
        storage: SealedTokens,
        redirect: Callable[[str], Awaitable[None]],
        callback: Callable[[], Awaitable[AuthorizationCodeResult]],
        authorized: Callable[[str, str, str, httpx2.Request], Awaitable[None]] | None = None,
        *,
        wanted_scope: str | None = None,
        stepped_up: Callable[[str | None], Awaitable[None]] | None = None,
    ) -> OAuthClientProvider:
        """The SDK's provider for `server` on `storage`; with `authorized`, one that hands its sign-in off there
        (`oauth_sdk.HandingOffOAuthProvider`)."""
        settings = self._settings(server)
        assert isinstance(settings.auth, OAuthConfig)
        metadata = OAuthClientMetadata(
            redirect_uris=[AnyUrl(self.redirect_uri)],
            client_name="mcp-gateway",
            grant_types=["authorization_code", "refresh_token"],
            scope=" ".join(settings.auth.scopes) or None,
            token_endpoint_auth_method="none",
        )
        if authorized is not None:
            return oauth_sdk.HandingOffOAuthProvider(
                settings.url,
                metadata,
                storage,
                redirect_handler=redirect,
                callback_handler=callback,
                client_metadata_url=settings.auth.client_metadata_url,
                authorized=authorized,
                wanted_scope=wanted_scope,
            )
        return oauth_sdk.ResumingOAuthProvider(
            settings.url,
            metadata,
            storage,
            redirect_handler=redirect,
            callback_handler=callback,
            client_metadata_url=settings.auth.client_metadata_url,
            stepped_up=stepped_up,
        )


async def _never() -> AuthorizationCodeResult:
    raise AssertionError("a connection's provider raises SignInNeeded before it waits for a callback")
