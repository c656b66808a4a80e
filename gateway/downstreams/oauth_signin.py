"""A person's sign-in to an OAuth-protected downstream server (DESIGN §16), from the link a call hands out to the
tokens kept, and the wake-up of the calls waiting for it. The link's ticket stands for the identity, once; the
sign-in (`begin`, then `finish` from `/oauth/callback`) runs the SDK's flow (discovery from the server's 401,
registration, authorization code + PKCE with the resource indicator) up to the person's redirect
(`oauth_sdk.HandingOffOAuthProvider`). Its state is bound to the identity and to the browser that began it (a secret
in a cookie) and used once: a callback from another browser is refused and leaves the sign-in to its owner.

Everything between the two halves lives in the shared store (`flows`, Redis on replicas), never in one process: a
ticket, and a begun sign-in (identity, server, the browser's digest, and sealed the PKCE verifier and the token
request to finish it with). So a link handed out by replica A opens on replica B, and the callback of a sign-in
begun on A is finished by whichever replica it reaches. Keys are digests of the ticket or state, never the value.
"""

import hashlib
import json
import logging
import secrets
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import httpx2
from mcp.shared.auth import AuthorizationCodeResult, OAuthMetadata

from gateway import sdk
from gateway.config import OAuthConfig, ServerConfig
from gateway.downstreams import oauth_sdk
from gateway.downstreams.oauth_providers import OAuthProviders, SignInRefused
from gateway.downstreams.oauth_tokens import lister_key, sealer
from gateway.errors import describe
from gateway.session import Identity
from gateway.store.signins import SignIns
from gateway.store.tokens import Tokens

logger = logging.getLogger(__name__)
SIGN_IN_S = 600.0
"""How long a begun sign-in waits for the person to come back through `/oauth/callback`."""
TICKET_S = 600.0
"""How long a sign-in link from a call stays good (used once)."""
_PING = {"jsonrpc": "2.0", "id": "gateway-sign-in", "method": "ping"}
"""What a sign-in sends the server: its 401 starts the SDK's flow; the answer after it is not read."""


def _digest(kind: str, *parts: str) -> str:
    return f"oauth-{kind}:" + hashlib.sha256("\0".join(parts).encode()).hexdigest()


def identity_of(record: dict[str, Any]) -> Identity:
    """The identity a stored record (`record_of`) stands for."""
    return Identity(
        record["name"],
        record["kind"],
        record["subject"],
        record["issuer"],
        frozenset(record["groups"]),
        frozenset(record["scopes"]),
    )


def record_of(identity: Identity) -> dict[str, Any]:
    """`identity` as JSON to keep: in a ticket, a begun sign-in, and (sealed) who signed in last."""
    return {
        "name": identity.name,
        "kind": identity.kind,
        "subject": identity.subject,
        "issuer": identity.issuer,
        "groups": sorted(identity.groups),
        "scopes": sorted(identity.scopes),
    }


class SigningIn(OAuthProviders):
    """People's sign-ins to every `auth: {type: oauth}` server (each half of one is one request, on any replica)."""

    def __init__(
        self,
        servers: Callable[[], Mapping[str, ServerConfig]],
        store: Tokens | None,
        base_url: str,
        flows: SignIns | None = None,
    ) -> None:
        super().__init__(servers, store, base_url, flows)
        self._waiting: dict[tuple[str, str], set[anyio.Event]] = {}
        """Calls waiting for a person's sign-in per (identity key, server) (`signed_in`): one event each."""

    async def link(self, server: str, identity: Identity) -> str | None:
        """A sign-in link for `identity` to show where they are (a model's answer): it stands for them, once."""
        if self.base_url is None:
            return None
        ticket = secrets.token_urlsafe(24)
        await self.flows.put(_digest("ticket", ticket), {"server": server, **record_of(identity)}, TICKET_S)
        return f"{self.connect_url(server)}?ticket={ticket}"

    async def redeem(self, server: str, ticket: str) -> Identity | None:
        """The identity a link's ticket stands for; None if it was used, has ended, or is for another server."""
        found = await self.flows.take(_digest("ticket", ticket))  # once, whichever replica is asked
        return None if found is None or found["server"] != server else identity_of(found)

    async def signed_in(self, server: str, identity: Identity, timeout_s: float) -> bool:
        """Wait up to `timeout_s` for `identity` to finish signing in to `server`; True if they did. (A sign-in
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

    async def begin(self, server: str, identity: Identity) -> tuple[str | None, str]:
        """Start `identity`'s sign-in to `server`: (the authorization URL to send their browser to, or None when
        their grant still works; the secret that browser must bring back to `finish`). Raises SignInRefused when the
        flow fails before it has a URL. A newer sign-in of the same person to the same server ends this one."""
        settings = self._settings(server)
        assert isinstance(settings.auth, OAuthConfig)
        fernet = sealer(settings.auth.token_key_env)
        step_up = await self.storage(server, identity).step_up()
        storage = self.storage(server, identity, signing_in=True, renewing=step_up is not None)
        browser = secrets.token_urlsafe(24)
        found: dict[str, str] = {}

        async def authorized(url: str, state: str, verifier: str, token_request: httpx2.Request) -> None:
            metadata = provider.context.oauth_metadata
            sealed = {
                "verifier": verifier,
                "token_request": oauth_sdk.token_request_record(token_request),
                "scope": provider.context.client_metadata.scope,
                "metadata": None if metadata is None else metadata.model_dump(mode="json", exclude_none=True),
            }
            record = {
                "server": server,
                "browser": hashlib.sha256(browser.encode()).hexdigest(),
                "sealed": fernet.encrypt(json.dumps(sealed).encode()).decode(),
                **record_of(identity),
            }
            await self.flows.put(_digest("flow", state), record, SIGN_IN_S)
            # The newest sign-in per person and server is the one that counts: an older one's callback is refused.
            await self.flows.put(_digest("latest", identity.owner, server), {"state": state}, SIGN_IN_S)
            found["url"] = url

        wanted = None if step_up is None else step_up["scope"]
        provider = self._provider(server, storage, _nobody, _never, authorized, wanted_scope=wanted)
        try:
            async with sdk.create_mcp_http_client(headers=dict(settings.headers)) as http:
                accept = {"accept": "application/json, text/event-stream"}
                await http.post(settings.url, json=_PING, headers=accept, auth=provider)
        except oauth_sdk.SignInHandedOff:  # (a BaseException: see there)
            return found["url"], browser
        except Exception as exc:  # noqa: BLE001 -- said to whoever began it
            logger.warning("sign-in to %s for %s failed: %s", server, identity.name, describe(exc))
            raise SignInRefused(
                f"Signing in to {server} failed before the authorization server: {describe(exc)}"
            ) from None
        return None, browser  # the server took the stored grant: nothing to sign in to

    async def finish(self, state: str, code: str, iss: str | None, browser: str | None) -> tuple[str, Identity]:
        """Hand the sign-in with `state` its code, from the `browser` that began it (on any replica): (the server,
        who signed in) once the tokens are kept."""
        key = _digest("flow", state)
        record = await self.flows.get(key)
        if record is None:
            raise SignInRefused("This sign-in link was used already or has expired; start again from the call's link.")
        server, identity = record["server"], identity_of(record)
        theirs = hashlib.sha256((browser or "").encode()).hexdigest()
        if browser is None or not secrets.compare_digest(theirs, record["browser"]):
            raise SignInRefused(
                f"This sign-in to {server} was started by someone else (or in another browser); "
                "sign in as yourself from your own link."
            )
        if await self.flows.take(key) is None:  # single-use: a concurrent callback (any replica) took it first
            raise SignInRefused("This sign-in link was used already or has expired; start again from the call's link.")
        latest = _digest("latest", identity.owner, server)
        if (await self.flows.get(latest) or {}).get("state") != state:
            raise SignInRefused("This sign-in link was used already or has expired; start again from the call's link.")
        await self.flows.delete(latest)
        try:
            await self._exchange(server, identity, record, code, iss)
        except Exception as exc:  # noqa: BLE001 -- said to the person in their browser
            logger.warning("sign-in to %s for %s failed: %s", server, identity.name, describe(exc))
            raise SignInRefused(f"Signing in to {server} failed: {describe(exc)}") from None
        await self.storage(server, identity).stepped_up()  # granted (the exchange kept what was)
        await self._remember_lister(server, identity)
        for done in self._waiting.pop((identity.key, server), set()):
            done.set()
        return server, identity

    async def _exchange(
        self, server: str, identity: Identity, record: dict[str, Any], code: str, iss: str | None
    ) -> None:
        settings = self._settings(server)
        assert isinstance(settings.auth, OAuthConfig)
        sealed = json.loads(sealer(settings.auth.token_key_env).decrypt(record["sealed"].encode()))
        provider = self._provider(server, self.storage(server, identity, signing_in=True), _nobody, _never)
        provider.context.client_metadata.scope = sealed["scope"]
        if sealed["metadata"] is not None:
            provider.context.oauth_metadata = OAuthMetadata.model_validate(sealed["metadata"])
        await oauth_sdk.exchange_code(provider, sealed["token_request"], code, iss)

    async def _remember_lister(self, server: str, identity: Identity) -> None:
        """Who signed in to `server` last (`OAuth.lister`), sealed in the token store."""
        settings = self._settings(server)
        assert isinstance(settings.auth, OAuthConfig) and self.store is not None  # (`storage` said so before the flow)
        sealed = sealer(settings.auth.token_key_env).encrypt(json.dumps(record_of(identity)).encode())
        await self.store.put(lister_key(server), sealed)


async def _nobody(url: str) -> None:
    raise AssertionError("a handing-off provider tells `authorized`, never a redirect handler")


async def _never() -> AuthorizationCodeResult:
    raise AssertionError("a handing-off provider waits for no callback")
