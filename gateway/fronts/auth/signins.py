"""The page's own session: a browser that signs in at /ui/login gets a random id in its cookie, bound in the store
to the identity its token proved, ending after `auth.page_session_s` (at a JWT's own `exp` if sooner) or at Sign
out; never the token itself (the cookie used to be the token, so a copied cookie outlived Sign out).

Kept through the store (`gateway.store.signins`), so a sign-in on one replica holds on every replica and a sign-out
on any ends it on all. The store holds a digest of the id, not the id. On each use the identity is checked against
the running config: a static token's name must still be configured (its groups are read from there now), a JWT
identity needs the same issuer configured.
"""

import hashlib
import re
import secrets
import time
from collections.abc import Callable
from typing import Any

import jwt

from gateway.fronts.auth.bearer import Authenticator
from gateway.session import Identity
from gateway.store.signins import SignIns

_ID = re.compile(r"[A-Za-z0-9_-]{43}")
"""What `secrets.token_urlsafe(32)` makes: anything else in the cookie is no sign-in, and no store key."""


class PageSignIns:
    def __init__(
        self, store: SignIns, authenticator: Authenticator, *, ttl_s: float, clock: Callable[[], float] = time.time
    ) -> None:
        self.store = store
        self.authenticator = authenticator
        self.ttl_s = ttl_s
        self._clock = clock
        """Wall-clock: a sign-in's end is read by every replica."""

    async def open(self, identity: Identity, token: str) -> tuple[str, int]:
        """A sign-in for `identity`, proved by `token` just now: (the cookie's value, its lifetime in seconds).
        Raises StoreUnavailable."""
        now = self._clock()
        ends = min(now + self.ttl_s, _token_expiry(token) or now + self.ttl_s)
        cookie = secrets.token_urlsafe(32)
        record = {
            "name": identity.name,
            "kind": identity.kind,
            "subject": identity.subject,
            "issuer": identity.issuer,
            "groups": sorted(identity.groups),
            "scopes": sorted(identity.scopes),
            "ends": ends,
        }
        lasts = max(1.0, ends - now)  # a JWT within its leeway past `exp`: a moment
        await self.store.put(_key(cookie), record, lasts)
        return cookie, int(lasts)

    async def identity(self, cookie: str) -> Identity | None:
        """Whom the cookie stands for now; None when it is no sign-in, ended, was signed out, or its identity is no
        longer configured. Raises StoreUnavailable."""
        if not _ID.fullmatch(cookie):
            return None
        record = await self.store.get(_key(cookie))
        if record is None or not isinstance(record.get("ends"), (int, float)) or record["ends"] <= self._clock():
            return None
        return self._current(record)

    async def close(self, cookie: str) -> None:
        """Sign out: the cookie stands for nobody from now on, on every replica. Raises StoreUnavailable."""
        if _ID.fullmatch(cookie):
            await self.store.delete(_key(cookie))

    def _current(self, record: dict[str, Any]) -> Identity | None:
        subject = str(record.get("subject", ""))
        if record.get("kind") == "static":
            return self.authenticator.static.named(subject)
        verifier = self.authenticator.verifier
        if record.get("kind") == "jwt" and verifier is not None and record.get("issuer") == verifier.issuer:
            return Identity(
                str(record.get("name", subject)),
                "jwt",
                subject,
                issuer=verifier.issuer,
                groups=frozenset(map(str, record.get("groups", []))),
                scopes=frozenset(map(str, record.get("scopes", []))),
            )
        return None


def _key(cookie: str) -> str:
    return hashlib.sha256(cookie.encode()).hexdigest()


def _token_expiry(token: str) -> float | None:
    """A JWT's `exp` (it was verified a moment ago by `Authenticator.identify`); None for a static token."""
    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        return None
    exp = claims.get("exp")
    return float(exp) if isinstance(exp, (int, float)) else None
