"""Requests learned from use in Redis, shared by replicas: a list `{prefix}learned:<tool>` per tool (most
recent first) and a sorted set `{prefix}learned` of the tools by when they were last taught.

`add` is one transaction (LREM the repeat, LPUSH, LTRIM to LEARNED_PER_TOOL, ZADD the time), then, when the set
outgrew LEARNED_TOOLS, the oldest tools and their lists are dropped. `all` is one ZRANGE and one pipelined LRANGE per
tool (at most LEARNED_TOOLS): it is read by each replica at most once per `expansions.REFRESH_S`.
"""

import time
from typing import cast

from gateway.store.expansions import LEARNED_PER_TOOL, LEARNED_TOOLS
from gateway.store.redis.client import Breaker, Redis


class RedisExpansions:
    def __init__(
        self,
        client: Redis,
        prefix: str,
        where: str,
        *,
        breaker: Breaker,
        per_tool: int = LEARNED_PER_TOOL,
        tools: int = LEARNED_TOOLS,
    ) -> None:
        self._redis, self._prefix, self.where = client, prefix, where
        self._guarded = breaker.guarded  # learning rides on calls: a Redis that failed is not waited on again
        self._per_tool, self._tools = per_tool, tools

    def _list(self, key: str) -> str:
        return f"{self._prefix}learned:{key}"

    @property
    def _index(self) -> str:
        return f"{self._prefix}learned"

    async def add(self, key: str, request: str) -> None:
        async with self._guarded():
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.lrem(self._list(key), 0, request)
                pipe.lpush(self._list(key), request)
                pipe.ltrim(self._list(key), 0, self._per_tool - 1)
                pipe.zadd(self._index, {key: time.time()})
                pipe.zcard(self._index)
                *_, size = await pipe.execute()
            if int(size) > self._tools:
                raw = await self._redis.zrange(self._index, 0, int(size) - self._tools - 1)
                old = [bytes(k).decode() for k in cast(list[bytes], raw)]
                async with self._redis.pipeline(transaction=True) as pipe:
                    pipe.zrem(self._index, *old)
                    pipe.delete(*(self._list(k) for k in old))
                    await pipe.execute()

    async def all(self) -> dict[str, list[str]]:
        async with self._guarded():
            raw = await self._redis.zrevrange(self._index, 0, -1)
            keys = [bytes(k).decode() for k in cast(list[bytes], raw)]
            if not keys:
                return {}
            async with self._redis.pipeline(transaction=False) as pipe:
                for key in keys:
                    pipe.lrange(self._list(key), 0, -1)
                lists = await pipe.execute()
        return {
            key: [bytes(r).decode() for r in cast(list[bytes], requests)]
            for key, requests in zip(keys, lists, strict=True)
            if requests
        }

    async def remove(self, key: str, request: str | None = None) -> bool:
        async with self._guarded():
            if request is None:
                async with self._redis.pipeline(transaction=True) as pipe:
                    pipe.delete(self._list(key))
                    pipe.zrem(self._index, key)
                    gone, _ = await pipe.execute()
                return bool(gone)
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.lrem(self._list(key), 0, request)
                pipe.llen(self._list(key))
                gone, left = await pipe.execute()
            if not left:
                await self._redis.zrem(self._index, key)
            return bool(gone)
