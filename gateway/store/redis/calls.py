"""The call log in Redis, shared by replicas: each owner's recent calls in a list `{prefix}calls:{owned(owner,
"recent")}` (newest first, `per_owner` of them, each at most `ENTRY_BYTES`), the owners by last call in a sorted
set (the newest `owners` kept: an admin's view reads them), each replica's counts a field of one hash, and the
owners whose calls keep their arguments one set (`{prefix}calls:arguments`, no expiry: a choice stays made).

Bounded by size: at most `owners * per_owner * ENTRY_BYTES` bytes of calls (the defaults: 64 MB at worst, when
every call fills its share); lists idle for `ttl_s` expire.
"""

import json
import time
from collections.abc import Sequence
from typing import Any, cast

from gateway.store.base import owned
from gateway.store.calls import COUNTS_TTL_S, encoded
from gateway.store.redis.client import Redis, guarded

RECENT = "recent"


class RedisCallLog:
    def __init__(
        self, client: Redis, prefix: str, where: str, *, per_owner: int = 100, owners: int = 40, ttl_s: int = 86_400
    ) -> None:
        self._redis = client
        self._prefix = f"{prefix}calls:"
        self.where = where
        self.per_owner = per_owner
        self.owners = owners
        self.ttl_s = ttl_s

    def _list(self, owner: str) -> str:
        return f"{self._prefix}{owned(owner, RECENT)}"

    async def add(self, calls: Sequence[tuple[str, dict[str, Any]]]) -> None:
        if not calls:
            return
        by_owner: dict[str, list[bytes]] = {}
        for owner, call in calls:
            by_owner.setdefault(owner, []).append(encoded(call))
        now = time.time()
        index = f"{self._prefix}owners"
        async with guarded(self.where):
            async with self._redis.pipeline(transaction=False) as pipe:
                for owner, entries in by_owner.items():
                    key = self._list(owner)
                    pipe.lpush(key, *entries)
                    pipe.ltrim(key, 0, self.per_owner - 1)
                    pipe.expire(key, self.ttl_s)
                    pipe.zadd(index, {owner: now})
                pipe.zrange(index, 0, -(self.owners + 1))  # the owners past the newest `owners`
                answers = await pipe.execute()
            gone = [m.decode() for m in cast(list[bytes], answers[-1])]
            if gone:  # their calls go with them: the bound holds for every owner there ever was
                await self._redis.zrem(index, *gone)
                await self._redis.delete(*[self._list(owner) for owner in gone])

    async def recent(self, owners: frozenset[str] | None) -> list[dict[str, Any]]:
        async with guarded(self.where):
            if owners is None:
                found = cast(list[bytes], await self._redis.zrevrange(f"{self._prefix}owners", 0, self.owners - 1))
                owners = frozenset(m.decode() for m in found)
            async with self._redis.pipeline(transaction=False) as pipe:
                for owner in sorted(owners):
                    pipe.lrange(self._list(owner), 0, -1)
                lists = cast(list[list[bytes]], await pipe.execute())
        calls = [json.loads(raw) for entries in lists for raw in entries]
        return sorted(calls, key=lambda c: c.get("at", 0.0), reverse=True)

    async def put_counts(self, replica: str, counts: dict[str, Any]) -> None:
        data = json.dumps({**counts, "at": time.time()}, separators=(",", ":"))
        async with guarded(self.where):
            await self._redis.hset(f"{self._prefix}counts", replica, data)

    async def counts(self) -> dict[str, dict[str, Any]]:
        key = f"{self._prefix}counts"
        async with guarded(self.where):
            fields = cast(dict[bytes, bytes], await self._redis.hgetall(key))
            live, stale = {}, []
            for replica, raw in fields.items():
                counts = json.loads(raw)
                if time.time() - counts.get("at", 0.0) > COUNTS_TTL_S:
                    stale.append(replica)
                else:
                    live[replica.decode()] = counts
            if stale:
                await self._redis.hdel(key, *stale)
        return live

    async def keep_arguments(self, owner: str, on: bool) -> None:
        key = f"{self._prefix}arguments"
        async with guarded(self.where):
            if on:
                await self._redis.sadd(key, owner)
            else:
                await self._redis.srem(key, owner)

    async def arguments_kept(self) -> frozenset[str]:
        async with guarded(self.where):
            members = cast(set[bytes], await self._redis.smembers(f"{self._prefix}arguments"))
        return frozenset(m.decode() for m in members)
