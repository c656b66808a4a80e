"""Durable tasks in Redis: `{prefix}task:<owned(owner, task_id)>` holds the JSON record and expires with the task;
the owner's set `{prefix}tasks:<owner>` indexes them for `tasks/list` (members whose record expired are pruned
when listed).

`settle` is one script: the record is replaced only while its status is not terminal, so the first of a
completion (on the replica running the call) and a cancellation (on any replica) wins.

A running task's liveness mark is its own key, `{prefix}task-alive:<owned(owner, task_id)>`, set with an expiry its
runner's `beat` renews: Redis's clock alone decides when it lapsed, whatever the replicas' clocks say. The record
says it has one (`heartbeat`: records stored by gateways before marks existed are never reaped). `reap` is one
script too: a record is failed only if it is still not terminal and its mark is gone, so replicas agree.
"""

import json
from collections.abc import Sequence
from typing import Any, cast

from gateway.store.base import owned
from gateway.store.redis.client import Redis, guarded

_SETTLE = """
local current = redis.call('GET', KEYS[1])
if not current then return false end
local status = cjson.decode(current)['status']
if status == 'completed' or status == 'failed' or status == 'cancelled' then return current end
redis.call('SET', KEYS[1], ARGV[1], 'KEEPTTL')
return ARGV[1]
"""

_REAP = """
local current = redis.call('GET', KEYS[1])
if not current then return false end
local record = cjson.decode(current)
local status = record['status']
if status == 'completed' or status == 'failed' or status == 'cancelled' then return current end
if record['heartbeat'] ~= true or redis.call('EXISTS', KEYS[2]) == 1 then return current end
redis.call('SET', KEYS[1], ARGV[1], 'KEEPTTL')
return ARGV[1]
"""


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


def _decoded(data: Any) -> dict[str, Any] | None:
    if data is None:
        return None
    record = json.loads(data)
    return record if isinstance(record, dict) else None


class RedisTasks:
    def __init__(self, client: Redis, prefix: str, where: str) -> None:
        self._redis = client
        self._prefix = prefix
        self.where = where
        self._settle = client.register_script(_SETTLE)
        self._reap = client.register_script(_REAP)

    def _key(self, owner: str, task_id: str) -> str:
        return f"{self._prefix}task:{owned(owner, task_id)}"

    def _alive(self, owner: str, task_id: str) -> str:
        return f"{self._prefix}task-alive:{owned(owner, task_id)}"

    def _index(self, owner: str) -> str:
        return f"{self._prefix}tasks:{owned(owner, '')}"

    async def create(self, owner: str, task_id: str, record: dict[str, Any], ttl_s: float, *, alive_s: float) -> None:
        async with guarded(self.where), self._redis.pipeline(transaction=True) as pipe:
            pipe.set(self._key(owner, task_id), json.dumps({**record, "heartbeat": True}), px=_ms(ttl_s))
            pipe.set(self._alive(owner, task_id), b"1", px=_ms(alive_s))
            pipe.sadd(self._index(owner), task_id)
            await pipe.execute()

    async def get(self, owner: str, task_id: str) -> dict[str, Any] | None:
        async with guarded(self.where):
            return _decoded(await self._redis.get(self._key(owner, task_id)))

    async def settle(self, owner: str, task_id: str, record: dict[str, Any]) -> dict[str, Any] | None:
        async with guarded(self.where):
            stored = await self._settle(keys=[self._key(owner, task_id)], args=[json.dumps(record)])
        return _decoded(stored)

    async def beat(self, tasks: Sequence[tuple[str, str]], alive_s: float) -> None:
        async with guarded(self.where), self._redis.pipeline(transaction=False) as pipe:
            for owner, task_id in tasks:
                pipe.set(self._alive(owner, task_id), b"1", px=_ms(alive_s))
            await pipe.execute()

    async def reap(self, owner: str, task_id: str, failed: dict[str, Any]) -> dict[str, Any] | None:
        keys = [self._key(owner, task_id), self._alive(owner, task_id)]
        async with guarded(self.where):
            stored = await self._reap(keys=keys, args=[json.dumps(failed)])
        return _decoded(stored)

    async def list(self, owner: str) -> list[dict[str, Any]]:
        async with guarded(self.where):
            ids = sorted(cast(set[bytes], await self._redis.smembers(self._index(owner))))
            values = await self._redis.mget([self._key(owner, i.decode()) for i in ids]) if ids else []
            gone = [i for i, v in zip(ids, values, strict=True) if v is None]
            if gone:
                await self._redis.srem(self._index(owner), *gone)
        return [r for r in map(_decoded, values) if r is not None]
