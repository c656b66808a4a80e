"""A roaming session's shared fields in Redis: one hash `{prefix}session:<digest of the key>` per session.

Fields: `boot` (set once: the first tool result went out), `run:<workflow>` -> run id and `promoted` (the
JSON list of the tools found in the session, for its `tools/list`). Reading the runs
also returns each run's stored version (from the run records, `gateway.store.redis.runs`) in the same round
trip, so a replica can tell whether what it last saw of a run is current. Idle sessions expire.

These reads ride on ordinary tool calls, so a Redis that fails is not asked again for a while (`Breaker`).
"""

import hashlib
import json
from typing import cast

from gateway.store.base import SESSION_IDLE_S, owned
from gateway.store.redis.client import Breaker, Redis

# The run keys are computed in the script, so this assumes one Redis (not a cluster: keys in other slots).
_RUNS = """
local fields = redis.call('HGETALL', KEYS[1])
if ARGV[3] == '1' then redis.call('EXPIRE', KEYS[1], ARGV[2]) end
local out = {}
for i = 1, #fields, 2 do
  if string.sub(fields[i], 1, 4) == 'run:' then
    local workflow = string.sub(fields[i], 5)
    local version = redis.call('HGET', ARGV[1] .. workflow .. ':' .. fields[i + 1], 'v') or '0'
    table.insert(out, workflow)
    table.insert(out, fields[i + 1])
    table.insert(out, version)
  end
end
return out
"""


class RedisSessions:
    def __init__(
        self, client: Redis, prefix: str, where: str, *, idle_s: float = SESSION_IDLE_S, breaker: Breaker
    ) -> None:
        self._redis = client
        self._prefix = prefix
        self.where = where
        self.idle_s = int(idle_s)
        self._runs = client.register_script(_RUNS)
        self._guarded = breaker.guarded

    def _key(self, session: str) -> str:
        # A digest: session keys carry the identity's key, which has no business in Redis key names.
        return f"{self._prefix}session:{hashlib.sha256(session.encode()).hexdigest()[:32]}"

    async def claim_first(self, session: str) -> bool:
        key = self._key(session)
        async with self._guarded(), self._redis.pipeline(transaction=True) as pipe:
            pipe.hsetnx(key, "boot", 1)
            pipe.expire(key, self.idle_s)
            first, _ = await pipe.execute()
        return bool(first)

    async def runs(self, session: str, owner: str, *, refresh: bool = True) -> dict[str, tuple[str, int]]:
        # The owner's run keys are this prefix, then the workflow (`RedisRuns` keys `run:<folder>:<run id>`).
        args: list[str | int] = [f"{self._prefix}run:{owned(owner, '')}", self.idle_s, int(refresh)]
        async with self._guarded():
            flat = cast(list[bytes], await self._runs(keys=[self._key(session)], args=args))
        return {flat[i].decode(): (flat[i + 1].decode(), int(flat[i + 2])) for i in range(0, len(flat), 3)}

    async def track(self, session: str, workflow: str, run_id: str | None) -> None:
        key = self._key(session)
        async with self._guarded(), self._redis.pipeline(transaction=True) as pipe:
            if run_id is None:
                pipe.hdel(key, f"run:{workflow}")
            else:
                pipe.hset(key, f"run:{workflow}", run_id)
            pipe.expire(key, self.idle_s)
            await pipe.execute()

    async def promoted(self, session: str) -> list[str]:
        async with self._guarded():
            raw = cast(bytes | None, await self._redis.hget(self._key(session), "promoted"))
        names = json.loads(raw) if raw is not None else []
        return [str(n) for n in names] if isinstance(names, list) else []

    async def promote(self, session: str, names: list[str]) -> None:
        key = self._key(session)
        async with self._guarded(), self._redis.pipeline(transaction=True) as pipe:
            pipe.hset(key, "promoted", json.dumps(names))
            pipe.expire(key, self.idle_s)
            await pipe.execute()
