"""Sampled expansions in Redis, shared by replicas: one hash `{prefix}sampled`, field = the tool's key (server, tool,
description hash), value = its requests as a JSON list (`[]` once an operator removed them). A replica that asked a
client's model writes there; every replica reads the whole hash at most once per `expansions.REFRESH_S` (at most
SAMPLED_TOOLS fields)."""

import json
from typing import cast

from gateway.store.expansions import SAMPLED_TOOLS
from gateway.store.redis.client import Breaker, Redis


class RedisSampled:
    def __init__(self, client: Redis, prefix: str, where: str, *, breaker: Breaker, tools: int = SAMPLED_TOOLS) -> None:
        self._redis, self._hash, self.where = client, f"{prefix}sampled", where
        self._guarded = breaker.guarded  # asked in the background: a Redis that failed is not waited on again
        self._tools = tools

    async def put(self, key: str, requests: list[str]) -> bool:
        async with self._guarded():
            # Two replicas may both pass the size check at once: the bound is then exceeded by a key or two, never
            # by a growing amount (each replica asks one batch at a time).
            if not await self._redis.hexists(self._hash, key) and await self._redis.hlen(self._hash) >= self._tools:
                return False
            await self._redis.hset(self._hash, key, json.dumps(requests))
        return True

    async def remove(self, key: str) -> bool:
        async with self._guarded():
            # A put by another replica between the read and the write is overwritten: the operator asked for none.
            had = cast(bytes | None, await self._redis.hget(self._hash, key))
            if had is None:
                return False
            await self._redis.hset(self._hash, key, "[]")
        return bool(_requests(had))

    async def all(self) -> dict[str, list[str]]:
        async with self._guarded():
            raw = cast(dict[bytes, bytes], await self._redis.hgetall(self._hash))
        kept = {bytes(field).decode(): _requests(value) for field, value in raw.items()}
        return {key: requests for key, requests in kept.items() if requests is not None}


def _requests(value: bytes) -> list[str] | None:
    """A field's requests; None when it is not a JSON list (not ours: a hand edit is possible)."""
    try:
        requests = json.loads(value)
    except ValueError:
        return None
    return [str(r) for r in requests] if isinstance(requests, list) else None
