"""Static bearer tokens, each mapped to a named identity (for simple set-ups without an identity provider)."""

import hashlib
import hmac
from collections.abc import Iterable
from dataclasses import dataclass

from gateway.session import Identity


@dataclass(frozen=True, slots=True)
class StaticToken:
    name: str
    sha256: str
    """Hex SHA-256 of the token: the gateway holds digests, never the tokens themselves."""
    groups: frozenset[str] = frozenset()
    scopes: frozenset[str] = frozenset()


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class StaticTokens:
    def __init__(self, tokens: Iterable[StaticToken]) -> None:
        self._tokens = [(bytes.fromhex(t.sha256), t) for t in tokens]

    def __bool__(self) -> bool:
        return bool(self._tokens)

    def identify(self, token: str) -> Identity | None:
        """The identity whose token this is, or None; compares against every digest so timing reveals nothing."""
        presented = hashlib.sha256(token.encode()).digest()
        found: StaticToken | None = None
        for known, entry in self._tokens:
            if hmac.compare_digest(presented, known):
                found = entry
        if found is None:
            return None
        return Identity(found.name, "static", found.name, groups=found.groups, scopes=found.scopes)

    def named(self, name: str) -> Identity | None:
        """The identity of the configured token named `name` (its groups as configured now), or None."""
        for _, entry in self._tokens:
            if entry.name == name:
                return Identity(entry.name, "static", entry.name, groups=entry.groups, scopes=entry.scopes)
        return None
