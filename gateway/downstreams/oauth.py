"""OAuth-protected downstream servers as calls meet them (DESIGN §16): each identity signs in once per server and its
calls there go out with its own token alone (the tokens and the connection's provider are
`oauth_providers.OAuthProviders`', the sign-in is `oauth_signin.SigningIn`'s; this class extends both). A call that
needs a sign-in (`admit`, or `failed` after a step-up) gets `SignInNeeded`, whose text is what the model shows: a
`/connect/<server>` link carrying a ticket, single-use, that stands for the identity. Who stands where (`standing`,
`needing`) and whose connection lists a server's tools for everyone (`lister`) are read here too.
"""

import json
from functools import partial

from cryptography.fernet import InvalidToken

from gateway.config import GatewayConfig, OAuthConfig
from gateway.downstreams.oauth_providers import SignInNeeded
from gateway.downstreams.oauth_signin import SigningIn, identity_of
from gateway.downstreams.oauth_tokens import TokenKeyMissing, lister_key, sealer, step_up_of, token_key_of
from gateway.session import Identity


class OAuth(SigningIn):
    """The sign-ins and per-identity providers of every `auth: {type: oauth}` server (`async with` it: it runs no
    task of its own, as each half of a sign-in is one request)."""

    async def __aenter__(self) -> "OAuth":
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        return None

    async def admit(self, server: str, identity: Identity) -> None:
        """Raise `SignInNeeded` unless `identity` holds a grant for `server` (before any connection is made)."""
        if not await self.storage(server, identity).held():  # read on every call: a sign-out anywhere counts at once
            waiter = partial(self.signed_in, server, identity)
            raise SignInNeeded(server, await self.link(server, identity), waiter)

    async def lister(self, server: str) -> Identity | None:
        """The last person to sign in to `server`, while their grant lasts: their connection may list its tools for
        everyone (kept in the token store, sealed, so it outlives a restart and serves every replica)."""
        settings = self._settings(server)
        assert isinstance(settings.auth, OAuthConfig)
        sealed = None if self.store is None else await self.store.get(lister_key(server))
        if sealed is None:
            return None
        try:
            identity = identity_of(json.loads(sealer(settings.auth.token_key_env).decrypt(sealed)))
        except InvalidToken:  # sealed under a former key: as if nobody signed in
            return None
        return identity if await self.storage(server, identity).get_tokens() is not None else None

    async def standing(self, server: str, owner: str | None) -> str | None:
        """Where the person with `owner` (`Identity.owner`) stands with `server`: "signed in", "needed" (no grant,
        or the server asked for more scope), or None when the caller is not known."""
        if owner is None or self.store is None:
            return None
        if await self.store.get(token_key_of(owner, server)) is None:
            return "needed"
        settings = self._settings(server)
        assert isinstance(settings.auth, OAuthConfig)
        try:
            stepping_up = await step_up_of(self.store, sealer(settings.auth.token_key_env), owner, server)
        except TokenKeyMissing:  # no key to open the grant with: a call would ask for a sign-in (saying why)
            return "needed"
        return "needed" if stepping_up is not None else "signed in"

    async def needing(self, owner: str, servers: set[str]) -> list[str]:
        """Those of `servers` that sign people in and where the person with `owner` must sign in first, sorted."""
        return [s for s in sorted(servers & self.servers.keys()) if await self.standing(s, owner) == "needed"]

    async def failed(self, server: str, identity: Identity) -> None:
        """After `identity`'s call to `server` failed: raise `SignInNeeded` if the server asked for more scope than
        they granted (a step-up; their grant stays for what it covers), or if their grant stopped working during the
        call (forgotten by the connection, which then closed: the call says "sign in", not "connection closed")."""
        storage = self.storage(server, identity)
        if await storage.step_up() is not None or not await storage.held():
            waiter = partial(self.signed_in, server, identity)
            raise SignInNeeded(server, await self.link(server, identity), waiter)


def public_base(config: GatewayConfig) -> str:
    """Where people's browsers reach this gateway: `auth.resource_url` without its `/mcp`, else the listen address."""
    if config.auth.resource_url is not None:
        url = config.auth.resource_url.rstrip("/")
        return url.removesuffix("/mcp")
    return f"http://{config.listen.host}:{config.listen.port}"
