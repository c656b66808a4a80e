"""Run records in Redis: a hash `{prefix}run:{folder}:{name}` {v: version, d: data} and a set of names per folder.

The compare-and-set is one Lua script, so it is atomic across every replica that shares the Redis:
the same guarantee the local backend's folder `flock` gives processes on one machine.
"""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import cast

from gateway.store.base import VersionConflict
from gateway.store.redis.client import Redis, guarded

_CAS = """
local current = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
if current ~= tonumber(ARGV[1]) then return current end
redis.call('HSET', KEYS[1], 'v', tonumber(ARGV[1]) + 1, 'd', ARGV[2])
redis.call('SADD', KEYS[2], ARGV[3])
return -1
"""


class RedisRuns:
    def __init__(self, client: Redis, prefix: str, where: str) -> None:
        self._redis = client
        self._prefix = prefix
        self.where = where
        self._cas = client.register_script(_CAS)

    def _key(self, folder: str, name: str) -> str:
        return f"{self._prefix}run:{folder}:{name}"

    def _index(self, folder: str) -> str:
        return f"{self._prefix}runs:{folder}"

    async def get(self, folder: str, name: str) -> bytes | None:
        async with guarded(self.where):
            data = await self._redis.hget(self._key(folder, name), "d")
        return cast(bytes | None, data)

    async def put(self, folder: str, name: str, data: bytes, expected: int) -> None:
        async with guarded(self.where):
            current = int(
                await self._cas(keys=[self._key(folder, name), self._index(folder)], args=[expected, data, name])
            )
        if current != -1:
            raise VersionConflict(current)

    async def all(self, folder: str) -> list[bytes]:
        async with guarded(self.where):
            names = sorted(cast(set[bytes], await self._redis.smembers(self._index(folder))))
            if not names:
                return []
            async with self._redis.pipeline(transaction=False) as pipe:
                for name in names:
                    pipe.hget(self._key(folder, name.decode()), "d")
                found = await pipe.execute()
        return [data for data in found if data is not None]  # deleted meanwhile: gone

    async def delete(self, folder: str, name: str) -> None:
        async with guarded(self.where), self._redis.pipeline(transaction=True) as pipe:
            pipe.delete(self._key(folder, name))
            pipe.srem(self._index(folder), name)
            await pipe.execute()

    @asynccontextmanager
    async def locked(self, folder: str, name: str) -> AsyncIterator[None]:
        """Nothing to hold: replicas on other hosts share no lock anyway, so a save that conflicts is re-applied by
        the writer (`gateway.think.runs`), and nothing of the run is left on this host's disk."""
        yield
