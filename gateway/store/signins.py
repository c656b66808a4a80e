"""The page's sign-ins (`gateway.fronts.auth.signins`): what a browser's cookie stands for, kept by every backend
alike so a sign-in on one replica holds on all of them and a sign-out on any ends it everywhere. The sign-ins to
OAuth servers (`gateway.downstreams.oauth`: tickets, begun sign-ins, step-ups) are kept here too, under keys of
their own.

A record is plain JSON (the identity it was opened for and when it ends) under a key that is a digest of the
cookie's random id: the store never holds a value a browser could present.
"""

from typing import Any, Protocol

MAX_SIGNINS = 10_000
"""Sign-ins one local gateway keeps; past it the oldest goes first (Redis: its own memory policy, and expiries)."""


class SignIns(Protocol):
    where: str

    async def put(self, key: str, record: dict[str, Any], ttl_s: float) -> None:
        """Keep `record` under `key` for `ttl_s` seconds (raises StoreUnavailable)."""
        ...

    async def get(self, key: str) -> dict[str, Any] | None:
        """The record under `key`, None once it expired, was deleted, or never was (raises StoreUnavailable)."""
        ...

    async def take(self, key: str) -> dict[str, Any] | None:
        """The record under `key`, removed in the same step: of concurrent takers on any replica, one gets it (a
        single-use ticket or sign-in state). None as `get` (raises StoreUnavailable)."""
        ...

    async def delete(self, key: str) -> None:
        """Forget `key` at once: a sign-out (raises StoreUnavailable; nothing is said about a key never kept)."""
        ...
