"""JWT access tokens checked as an OAuth 2.1 resource server does: signature by the issuer's JWKS, `iss`,
`aud` = this gateway, `exp`/`nbf` (with a small leeway), and the required scopes (PyJWT does the JOSE part).

Only the configured asymmetric algorithms are accepted, so `alg: none` and HMAC tokens signed with a public
key as the secret are refused before any key is looked at.
"""

import math
from collections.abc import Iterable
from typing import Any

import jwt

from gateway.fronts.auth.jwks import KeySet, KeysUnavailable
from gateway.fronts.auth.refusal import Refused, invalid
from gateway.session import Identity

SAFE_ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"})
_CLAIM_ERRORS: list[tuple[type[jwt.PyJWTError], str]] = [
    (jwt.ExpiredSignatureError, "the token has expired; get a new one from the identity provider"),
    (jwt.ImmatureSignatureError, "the token is not valid yet (nbf/iat in the future); check the clocks"),
    (jwt.InvalidAudienceError, "the token is not for this gateway (aud must be {audience})"),
    (jwt.InvalidIssuerError, "the token is from another issuer (iss must be {issuer})"),
    (jwt.MissingRequiredClaimError, "the token lacks a required claim: {exc}"),
    (jwt.InvalidSignatureError, "the token's signature does not verify"),
]


class JwtVerifier:
    def __init__(
        self,
        keys: KeySet,
        *,
        issuer: str,
        audience: str,
        algorithms: Iterable[str] = ("RS256", "ES256"),
        required_scopes: Iterable[str] = (),
        name_claim: str = "sub",
        groups_claim: str = "groups",
        leeway_s: float = 30.0,
    ) -> None:
        self.keys = keys
        self.issuer = issuer
        self.audience = audience
        self.algorithms = list(algorithms)
        unsafe = set(self.algorithms) - SAFE_ALGORITHMS
        if unsafe:
            raise ValueError(f"algorithms {sorted(unsafe)} are not accepted; use some of {sorted(SAFE_ALGORITHMS)}")
        self.required_scopes = frozenset(required_scopes)
        self.name_claim = name_claim
        self.groups_claim = groups_claim
        self.leeway_s = leeway_s

    async def verify(self, token: str) -> Identity:
        """The token's identity.

        Raises:
            Refused: 401 invalid_token (with the reason), 403 insufficient_scope, or 503 when the keys cannot be had.
        """
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise invalid("the bearer token is neither a known static token nor a well-formed JWT") from None
        alg = header.get("alg")
        if alg not in self.algorithms:
            raise invalid(f"the token's algorithm {alg!r} is not accepted (accepted: {', '.join(self.algorithms)})")
        kid = header.get("kid")
        try:
            key = await self.keys.key(kid if isinstance(kid, str) else None)
        except KeysUnavailable as exc:
            # Not 401: the token may well be good, only its key cannot be had; 401 would make clients drop it.
            wait = max(1, math.ceil(exc.retry_in_s))
            why = f"cannot check tokens right now: {exc}. Retry in {wait} s"
            raise Refused(503, "temporarily_unavailable", why, retry_after_s=wait) from None
        if key is None:
            raise invalid(f"the token is signed with a key ({kid!r}) the issuer does not publish at {self.keys.url}")
        claims = self._decode(token, key, alg)
        scopes = _scopes(claims)
        missing = self.required_scopes - scopes
        if missing:
            wanted = " ".join(sorted(self.required_scopes))
            raise Refused(403, "insufficient_scope", f"the token lacks the scopes {sorted(missing)}", scope=wanted)
        subject = str(claims["sub"])
        name = claims.get(self.name_claim)
        return Identity(
            name if isinstance(name, str) and name else subject,
            "jwt",
            subject,
            issuer=self.issuer,
            groups=_strings(claims.get(self.groups_claim)),
            scopes=scopes,
            jwt=token,  # for `token_exchange` servers only (`downstreams.grants`)
        )

    def _decode(self, token: str, key: jwt.PyJWK, alg: str) -> dict[str, Any]:
        try:
            return jwt.decode(
                token,
                key,
                algorithms=[alg],
                audience=self.audience,
                issuer=self.issuer,
                leeway=self.leeway_s,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.PyJWTError as exc:
            for kind, text in _CLAIM_ERRORS:
                if isinstance(exc, kind):
                    raise invalid(text.format(audience=self.audience, issuer=self.issuer, exc=exc)) from None
            raise invalid(f"the token is malformed ({type(exc).__name__})") from None


def _scopes(claims: dict[str, Any]) -> frozenset[str]:
    """`scope` (RFC 9068: space-separated) or `scp` (a list, as some issuers send)."""
    raw = claims.get("scope", claims.get("scp"))
    if isinstance(raw, str):
        return frozenset(raw.split())
    return _strings(raw)


def _strings(value: Any) -> frozenset[str]:
    if isinstance(value, str):
        return frozenset({value})
    if isinstance(value, list):
        return frozenset(v for v in value if isinstance(v, str))
    return frozenset()
