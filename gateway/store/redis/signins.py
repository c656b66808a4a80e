"""The page's sign-ins (`gateway.store.signins.SignIns`) in Redis, seen alike by every replica: one string
`{prefix}signin:<digest of the cookie's id>` holding the record's JSON, expiring with the sign-in (Redis expiries
are whole seconds, rounded up)."""

import json
import math
from typing import Any, cast

from gateway.store.redis.client import Redis, guarded


class RedisSignIns:
    def __init__(self, client: Redis, prefix: str, where: str) -> None:
        self._redis = client
        self._prefix = f"{prefix}signin:"
        self.where = where

    async def put(self, key: str, record: dict[str, Any], ttl_s: float) -> None:
        async with guarded(self.where):
            await self._redis.set(self._prefix + key, json.dumps(record), ex=max(1, math.ceil(ttl_s)))

    async def get(self, key: str) -> dict[str, Any] | None:
        async with guarded(self.where):
            raw = cast(bytes | None, await self._redis.get(self._prefix + key))
        return _record(raw)

    async def take(self, key: str) -> dict[str, Any] | None:
        async with guarded(self.where):
            raw = cast(bytes | None, await self._redis.getdel(self._prefix + key))  # one step (Redis 6.2+)
        return _record(raw)

    async def delete(self, key: str) -> None:
        async with guarded(self.where):
            await self._redis.delete(self._prefix + key)


def _record(raw: bytes | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    record = json.loads(raw)
    return record if isinstance(record, dict) else None
