"""What the gateway remembers per client (`gateway.store.base.ClientShare`) in Redis, seen alike by every replica:
`{prefix}client:<client key>:boot`, set if absent with the window as its expiry (exactly one session of the
client, on any replica, is first), and `{prefix}client:<client key>:promoted`, the JSON list of the tools the
client found, whose expiry every read and write restarts. Client keys are digests (`Session.client_key`): neither
the identity nor the client's name appears in a key name."""

import json
from typing import cast

from cachetools import TTLCache

from gateway.store.redis.client import Breaker, Redis

KNOWN_S = 60.0
"""A replica that saw a client's claim taken answers "not first" without asking Redis for this long: a client on a
new connection (or session) per call costs no round trip per call. At worst the driver comes this late after the
window ends."""


class RedisClients:
    def __init__(self, client: Redis, prefix: str, window_s: float, *, breaker: Breaker) -> None:
        self._redis = client
        self._prefix = f"{prefix}client:"
        self.window_s = window_s
        self._expiry = max(1, round(window_s))  # Redis expiries are whole seconds (0 would refuse the SET)
        self._guarded = breaker.guarded
        self._known: TTLCache[str, bool] = TTLCache(maxsize=10_000, ttl=min(KNOWN_S, window_s))
        """Clients whose claim this replica saw taken (by itself or another), recently."""

    async def claim_first(self, client: str) -> bool:
        if client in self._known:
            return False
        async with self._guarded():
            claimed = await self._redis.set(f"{self._prefix}{client}:boot", 1, nx=True, ex=self._expiry)
        self._known[client] = True
        return bool(claimed)

    async def promoted(self, client: str) -> list[str]:
        async with self._guarded():
            raw = cast(bytes | None, await self._redis.getex(f"{self._prefix}{client}:promoted", ex=self._expiry))
        names = json.loads(raw) if raw is not None else []
        return [str(n) for n in names] if isinstance(names, list) else []

    async def promote(self, client: str, names: list[str]) -> None:
        async with self._guarded():
            await self._redis.set(f"{self._prefix}{client}:promoted", json.dumps(names), ex=self._expiry)
