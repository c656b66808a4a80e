"""Tool call counts per identity in Redis, shared by replicas: one sorted set `{prefix}usage:<owner>` (tool -> calls).

`add` is one pipeline (ZINCRBY per tool, trim to USAGE_KEPT, expiry renewed), sent in a transaction so a
concurrent `top` never sees the set before its trim. Owners are digests (`Identity.owner`): no identity in
key names. Ties are broken by name as the local backend does: Redis orders equal scores by member, reversed by
ZREVRANGE, so a cut at `limit` could fall inside a tie; `top` reads the whole set (at most USAGE_KEPT) and cuts.
"""

from collections.abc import Mapping
from typing import cast

from gateway.store.base import USAGE_IDLE_S, USAGE_KEPT, most_used
from gateway.store.redis.client import Breaker, Redis


class RedisUsage:
    def __init__(self, client: Redis, prefix: str, where: str, *, breaker: Breaker, kept: int = USAGE_KEPT) -> None:
        self._redis, self._prefix, self.where, self._kept = client, prefix, where, kept
        self._guarded = breaker.guarded  # counts ride on tools/list: a Redis that failed is not waited on again

    def _key(self, owner: str) -> str:
        return f"{self._prefix}usage:{owner}"

    async def add(self, owner: str, counts: Mapping[str, int]) -> None:
        key = self._key(owner)
        async with self._guarded():
            async with self._redis.pipeline(transaction=True) as pipe:
                for name, n in counts.items():
                    pipe.zincrby(key, n, name)
                pipe.zremrangebyrank(key, 0, -self._kept - 1)  # keep the `kept` highest counts
                pipe.expire(key, int(USAGE_IDLE_S))
                await pipe.execute()

    async def top(self, owner: str, limit: int) -> list[str]:
        if limit <= 0:
            return []
        async with self._guarded():
            raw = await self._redis.zrevrange(self._key(owner), 0, -1, withscores=True)
        pairs = [(bytes(name).decode(), float(score)) for name, score in cast(list[tuple[bytes, float]], raw)]
        return [name for name, _score in most_used(pairs)[:limit]]
