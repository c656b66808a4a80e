"""Where the SDK's OAuth client keeps a person's tokens: sealed (Fernet: AES-128-CBC + HMAC-SHA256) in the gateway's
store, one record per (identity, server) and one client registration per server.

`mcp.client.auth.OAuthClientProvider` reads and writes through its `TokenStorage` protocol; `SealedTokens` is that
protocol over `gateway.store.tokens.Tokens`. Keys are digests of the identity's owner digest and the server name, so
neither a file name nor a Redis key tells whose token it is; values are ciphertext under a key from the environment,
so a copy of the store alone yields no token.
"""

import functools
import hashlib
import json
import math
import os
import time

from cryptography.fernet import Fernet, InvalidToken
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from gateway.errors import GatewayError
from gateway.session import Identity
from gateway.store.tokens import Tokens

REFRESH_EARLY_S = 30.0
"""A stored token this close to its end is refreshed before use."""
STEP_UP_S = 600
"""How long a server's ask for a wider scope (403 insufficient_scope) waits for the person to sign in for it."""


class TokenKeyMissing(GatewayError):
    def __init__(self, variable: str, problem: str) -> None:
        super().__init__(
            f"The gateway keeps people's tokens for OAuth servers encrypted, and the key in ${variable} {problem}. "
            f"Set {variable} to a Fernet key (python -c 'from cryptography.fernet import Fernet; "
            f"print(Fernet.generate_key().decode())'), the same on every replica, or change auth.token_key_env."
        )


def sealer(variable: str) -> Fernet:
    """The cipher of the key in `$variable` (raises TokenKeyMissing, saying how to make one). Read per use, so a
    changed variable takes effect; the cipher of one key value is made once (`_cipher`)."""
    value = os.environ.get(variable)
    if not value:
        raise TokenKeyMissing(variable, "is not set")
    try:
        return _cipher(value)
    except ValueError:
        raise TokenKeyMissing(variable, "is not a Fernet key (32 url-safe base64-encoded bytes)") from None


@functools.lru_cache(maxsize=8)
def _cipher(value: str) -> Fernet:
    # Every admitted call seals or opens a record: building the cipher (the key decoded and split) per call was a
    # measurable part of an OAuth call's cost. A function of the key's value alone (an invalid one raises: no entry).
    return Fernet(value.encode())


@functools.lru_cache(maxsize=1024)
def _opens(cipher: Fernet, sealed: bytes) -> bool:
    """Whether `sealed` opens under `cipher`: a function of the two alone, remembered, so a person's record that has
    not changed since it was checked is not decrypted again on each call (a sign-out deletes it, a sign-in replaces
    it: either is a new argument). At most 1,024 records of ~300 bytes are remembered."""
    try:
        cipher.decrypt(sealed)
    except InvalidToken:
        return False
    return True


def token_key(identity: Identity, server: str) -> str:
    """The store key of `identity`'s tokens for `server`: a digest, revealing neither."""
    return token_key_of(identity.owner, server)


@functools.lru_cache(maxsize=1024)
def token_key_of(owner: str, server: str) -> str:
    """`token_key` by the identity's owner digest (what the gateway's own tools are told of their caller). Every
    admitted call reads its caller's record by it: remembered, as a function of the two alone (`_cipher` likewise)."""
    return hashlib.sha256(f"{owner}\0{server}".encode()).hexdigest()


def client_key(identity: Identity, server: str) -> str:
    """The store key of the client registered for `identity` at `server`'s authorization server: a refresh must
    come from the client the grant was made to, wherever (HTTP front, `gateway login`) the person signed in."""
    return hashlib.sha256(f"client\0{identity.owner}\0{server}".encode()).hexdigest()


def step_up_key(owner: str, server: str) -> str:
    """The store key of the wider scope `server` asked the person with `owner` for (a step-up): a digest."""
    return hashlib.sha256(f"step-up\0{owner}\0{server}".encode()).hexdigest()


async def step_up_of(store: Tokens, fernet: Fernet, owner: str, server: str) -> dict[str, str | None] | None:
    """The step-up `server` asked the person with `owner` for in the last `STEP_UP_S` ({"scope": the scopes wanted, or
    None}), or None. Kept in the token store, not in one process's memory: the serving gateway records it and
    `gateway login` (another process) or another replica signs the person in for it. Its age is Fernet's timestamp,
    checked here; a record past it stays until the next step-up or sign-in replaces or removes it (one per person
    and server)."""
    sealed = await store.get(step_up_key(owner, server))
    if sealed is None:
        return None
    try:
        record: dict[str, str | None] = json.loads(fernet.decrypt(sealed, ttl=STEP_UP_S))
    except InvalidToken:  # older than STEP_UP_S, or sealed under a former key: no step-up asked
        return None
    return record


def lister_key(server: str) -> str:
    """The store key of who signed in to `server` last (whose connection may list its tools): a digest."""
    return hashlib.sha256(f"lister\0{server}".encode()).hexdigest()


class SealedTokens:
    """`mcp.client.auth.TokenStorage` for one (identity, server): what the SDK's provider loads and saves."""

    def __init__(
        self,
        store: Tokens,
        fernet: Fernet,
        identity: Identity,
        server: str,
        configured: OAuthClientInformationFull | None = None,
        redirect_uri: str | None = None,
        *,
        renewing: bool = False,
    ) -> None:
        self._store, self._fernet, self._configured = store, fernet, configured
        """`configured`: the client the config names (`auth.client_id`); registration is then never needed."""
        self._tokens, self._identity, self._server = token_key(identity, server), identity, server
        self._redirect_uri = redirect_uri
        """A sign-in's callback: a client registered for another one (a former `gateway login`'s port) is not used."""
        self._renewing = renewing
        """A sign-in for a wider scope: the narrower grant is not read (the flow must ask the person), but stays
        until the wider one replaces it."""

    async def get_tokens(self) -> OAuthToken | None:
        """The tokens, `expires_in` counted from now (early by `REFRESH_EARLY_S`, so they are refreshed before a
        call could carry them past their end)."""
        raw = None if self._renewing else await self._open(self._tokens)
        if raw is None:
            return None
        record = json.loads(raw)
        tokens = OAuthToken.model_validate(record["tokens"])
        if record.get("expires_at") is not None:
            tokens.expires_in = math.floor(record["expires_at"] - REFRESH_EARLY_S - time.time())
        return tokens

    async def held(self) -> bool:
        """Whether a grant is kept that opens under the current key (what a call is admitted by: a sign-out or a
        forgotten grant, in any process, ends it); cheaper than `get_tokens`, which also parses it."""
        if self._renewing:
            return False
        sealed = await self._store.get(self._tokens)
        return sealed is not None and _opens(self._fernet, sealed)

    async def set_tokens(self, tokens: OAuthToken) -> None:
        ends = None if tokens.expires_in is None else time.time() + int(tokens.expires_in)
        record = {"tokens": tokens.model_dump(mode="json"), "expires_at": ends}
        await self._store.put(self._tokens, self._fernet.encrypt(json.dumps(record).encode()))

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self._configured is not None:  # one instance serves every connection to the server: each gets a copy
            return self._configured.model_copy()
        raw = await self._open(client_key(self._identity, self._server))
        if raw is None:
            return None
        client = OAuthClientInformationFull.model_validate_json(raw)
        if self._redirect_uri is not None and self._redirect_uri not in {str(u) for u in client.redirect_uris or []}:
            return None  # registered for another callback: this sign-in registers anew (and replaces it)
        return client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        sealed = self._fernet.encrypt(client_info.model_dump_json().encode())
        await self._store.put(client_key(self._identity, self._server), sealed)

    async def forget(self) -> None:
        """Sign out: the tokens go; the gateway's registration stays for the next sign-in."""
        await self._store.delete(self._tokens)

    async def step_up(self) -> dict[str, str | None] | None:
        """The wider scope the server asked this person for lately (`step_up_of`), or None."""
        return await step_up_of(self._store, self._fernet, self._identity.owner, self._server)

    async def ask_step_up(self, scope: str | None) -> None:
        """Keep that the server asked for `scope` (the union of what was asked, granted and challenged)."""
        sealed = self._fernet.encrypt(json.dumps({"scope": scope}).encode())
        await self._store.put(step_up_key(self._identity.owner, self._server), sealed)

    async def stepped_up(self) -> None:
        """The person signed in for the wider scope: no step-up is pending."""
        await self._store.delete(step_up_key(self._identity.owner, self._server))

    async def _open(self, key: str) -> bytes | None:
        sealed = await self._store.get(key)
        if sealed is None:
            return None
        try:
            return self._fernet.decrypt(sealed)
        except InvalidToken:  # sealed under another key (it was rotated): as good as absent; signing in replaces it
            return None
