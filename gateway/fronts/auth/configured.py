"""The `Authenticator` a config asks for: `auth.tokens`, the legacy `listen.bearer_tokens_env` list, `auth.jwt`."""

import os

from gateway.config import AuthConfig, ListenConfig
from gateway.fronts.auth.bearer import Authenticator
from gateway.fronts.auth.bearer_jwt import JwtVerifier
from gateway.fronts.auth.jwks import KeySet
from gateway.fronts.auth.static import StaticToken, StaticTokens, digest


def static_tokens(auth: AuthConfig, listen: ListenConfig) -> list[StaticToken]:
    tokens = [
        StaticToken(t.name, t.sha256 or digest(t.token or ""), frozenset(t.groups), frozenset(t.scopes))
        for t in auth.tokens
    ]
    # The older form: comma-separated tokens in an environment variable, named token-1, token-2, … by position.
    raw = os.environ.get(listen.bearer_tokens_env, "")
    tokens += [
        StaticToken(f"token-{i}", digest(t)) for i, t in enumerate(filter(None, map(str.strip, raw.split(","))), 1)
    ]
    return tokens


def authenticator(auth: AuthConfig, listen: ListenConfig) -> Authenticator:
    verifier = None
    if auth.jwt is not None:
        jwt = auth.jwt
        keys = KeySet(
            jwt.jwks_url,
            ttl_s=jwt.jwks_ttl_s,
            min_refresh_s=jwt.jwks_min_refresh_s,
            timeout_s=jwt.jwks_timeout_s,
            max_bytes=jwt.jwks_max_bytes,
        )
        verifier = JwtVerifier(
            keys,
            issuer=jwt.issuer,
            audience=jwt.audience or auth.resource_url or "",
            algorithms=jwt.algorithms,
            required_scopes=jwt.required_scopes,
            name_claim=jwt.name_claim,
            groups_claim=jwt.groups_claim,
            leeway_s=jwt.leeway_s,
        )
    return Authenticator(StaticTokens(static_tokens(auth, listen)), verifier)
