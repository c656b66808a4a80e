"""Durable tasks in Redis: `{prefix}task:<owned(owner, task_id)>` holds the JSON record and expires with the task;
the owner's set `{prefix}tasks:<owner>` indexes them for `tasks/list` (members whose record expired are pruned
when listed), and `{prefix}tasks-running:<owner>` holds those not yet terminal.

`create` is one script: it counts the owner's kept tasks (index members whose record exists) and running ones
(running members whose liveness mark exists), pruning the rest, and stores the new task only below both caps.
Redis runs one script at a time, so replicas creating at once never exceed a cap: the count is exact. Its cost is
one key lookup per kept task (at most `caps.kept`).

`settle` is one script: the record is replaced only while its status is not terminal, so the first of a
completion (on the replica running the call) and a cancellation (on any replica) wins; the task stops counting as
running then (a cancellation through another replica: while its call runs on there to its end).

A running task's liveness mark is its own key, `{prefix}task-alive:<owned(owner, task_id)>`, set with an expiry its
runner's `beat` renews: Redis's clock alone decides when it lapsed, whatever the replicas' clocks say. The record
says it has one (`heartbeat`: records stored by gateways before marks existed are never reaped). `reap` is one
script too: a record is failed only if it is still not terminal and its mark is gone, so replicas agree.
"""

import json
from collections.abc import Sequence
from typing import Any, cast

from gateway.errors import TaskCapReached
from gateway.store.base import owned
from gateway.store.redis.client import Redis, guarded
from gateway.store.tasks import TaskCaps, minted

_CREATE = """
local function live(set, prefix)
  local count, soonest = 0, -1
  for _, id in ipairs(redis.call('SMEMBERS', set)) do
    local left = redis.call('PTTL', prefix .. id)
    if left == -2 then
      redis.call('SREM', set, id)
    else
      count = count + 1
      if left >= 0 and (soonest < 0 or left < soonest) then soonest = left end
    end
  end
  return count, soonest
end
local kept, soonest = live(KEYS[3], ARGV[7])
if kept >= tonumber(ARGV[6]) then return {'kept', kept, soonest} end
local running = live(KEYS[4], ARGV[8])
if running >= tonumber(ARGV[5]) then return {'running', running, -1} end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('SET', KEYS[2], '1', 'PX', ARGV[3])
redis.call('SADD', KEYS[3], ARGV[4])
redis.call('SADD', KEYS[4], ARGV[4])
return {'ok', 0, -1}
"""

_SETTLE = """
local current = redis.call('GET', KEYS[1])
if not current then return false end
local status = cjson.decode(current)['status']
if status == 'completed' or status == 'failed' or status == 'cancelled' then return current end
redis.call('SET', KEYS[1], ARGV[1], 'KEEPTTL')
redis.call('SREM', KEYS[2], ARGV[2])
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
redis.call('SREM', KEYS[3], ARGV[2])
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
        self._create = client.register_script(_CREATE)
        self._settle = client.register_script(_SETTLE)
        self._reap = client.register_script(_REAP)

    def _key(self, owner: str, task_id: str, kind: str = "task") -> str:
        """The key of a task's record (`kind` "task-alive": its liveness mark; `task_id` "": their prefix)."""
        assert minted(task_id) or not task_id  # a client's id is checked before it comes here: it never reaches a key
        return f"{self._prefix}{kind}:{owned(owner, task_id)}"

    def _alive(self, owner: str, task_id: str) -> str:
        return self._key(owner, task_id, "task-alive")

    def _index(self, owner: str) -> str:
        return f"{self._prefix}tasks:{owned(owner, '')}"

    def _running(self, owner: str) -> str:
        return f"{self._prefix}tasks-running:{owned(owner, '')}"

    async def create(
        self, owner: str, task_id: str, record: dict[str, Any], ttl_s: float, *, alive_s: float, caps: TaskCaps
    ) -> None:
        keys = [self._key(owner, task_id), self._alive(owner, task_id), self._index(owner), self._running(owner)]
        stored = json.dumps({**record, "heartbeat": True})
        args: list[str | int] = [stored, _ms(ttl_s), _ms(alive_s), task_id, caps.running, caps.kept]
        args += [self._key(owner, ""), self._alive(owner, "")]  # the prefixes of the owner's records and marks
        async with guarded(self.where):
            kind, count, soonest_ms = await self._create(keys=keys, args=args)
        if kind != b"ok":
            cap = caps.kept if kind == b"kept" else caps.running
            raise TaskCapReached(kind.decode(), cap, count, soonest_ms / 1000 if soonest_ms >= 0 else None)

    async def get(self, owner: str, task_id: str) -> dict[str, Any] | None:
        if not minted(task_id):
            return None
        async with guarded(self.where):
            return _decoded(await self._redis.get(self._key(owner, task_id)))

    async def settle(self, owner: str, task_id: str, record: dict[str, Any]) -> dict[str, Any] | None:
        if not minted(task_id):
            return None
        keys, args = [self._key(owner, task_id), self._running(owner)], [json.dumps(record), task_id]
        async with guarded(self.where):
            stored = await self._settle(keys=keys, args=args)
        return _decoded(stored)

    async def beat(self, tasks: Sequence[tuple[str, str]], alive_s: float) -> None:
        async with guarded(self.where), self._redis.pipeline(transaction=False) as pipe:
            for owner, task_id in tasks:
                pipe.set(self._alive(owner, task_id), b"1", px=_ms(alive_s))
            await pipe.execute()

    async def reap(self, owner: str, task_id: str, failed: dict[str, Any]) -> dict[str, Any] | None:
        if not minted(task_id):
            return None
        keys = [self._key(owner, task_id), self._alive(owner, task_id), self._running(owner)]
        async with guarded(self.where):
            stored = await self._reap(keys=keys, args=[json.dumps(failed), task_id])
        return _decoded(stored)

    async def list(self, owner: str) -> list[dict[str, Any]]:
        async with guarded(self.where):
            ids = sorted(cast(set[bytes], await self._redis.smembers(self._index(owner))))
            values = await self._redis.mget([self._key(owner, i.decode()) for i in ids]) if ids else []
            gone = [i for i, v in zip(ids, values, strict=True) if v is None]
            if gone:
                await self._redis.srem(self._index(owner), *gone)
        return [r for r in map(_decoded, values) if r is not None]
