"""A Think run's spilled captures in Redis: one hash `{prefix}spill:{folder}:{run_id}` (`folder`: the
run's, `owned(owner, workflow)`), a field per capture.

Every replica reads what any replica spilled; the hash goes with the run (`drop` when the run is cleared).
"""

from typing import cast

from gateway.store.redis.client import Redis, guarded


class RedisSpills:
    def __init__(self, client: Redis, prefix: str, where: str) -> None:
        self._redis = client
        self._prefix = prefix
        self.where = where

    def _key(self, folder: str, run_id: str) -> str:
        return f"{self._prefix}spill:{folder}:{run_id}"

    def location(self, folder: str, run_id: str, name: str) -> str:
        return f"{self.where}: hash {self._key(folder, run_id)}, field {name}"

    async def put(self, folder: str, run_id: str, name: str, data: bytes) -> None:
        async with guarded(self.where):
            await self._redis.hset(self._key(folder, run_id), name, data)

    async def get(self, folder: str, run_id: str, name: str) -> bytes | None:
        async with guarded(self.where):
            data = await self._redis.hget(self._key(folder, run_id), name)
        return cast(bytes | None, data)

    async def drop(self, folder: str, run_id: str) -> None:
        async with guarded(self.where):
            await self._redis.delete(self._key(folder, run_id))
