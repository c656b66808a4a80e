"""One load for all replicas: a value cached in Redis with its TTL, loaded by whichever replica takes the lock first.

`SharedCache` keeps single-flight inside a process; this tier extends it across replicas for the values that
are the same everywhere (version catalogs). The others wait for the value to appear instead of loading it
again. When Redis cannot be reached the load happens locally (logged once): a cache outage never fails a call.
"""

import json
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from redis import exceptions

from gateway.store.redis.client import Redis

logger = logging.getLogger(__name__)

_RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"
POLL_S = 0.05
"""How often a replica waiting on another's load looks for the value (Redis has no cheap per-key wait)."""


class RedisLoads:
    def __init__(self, client: Redis, prefix: str, *, lock_s: float = 30.0) -> None:
        self._redis = client
        self._prefix = prefix
        self.lock_s = lock_s
        """A load taking longer than this (or a replica dying mid-load) lets the next replica load instead."""
        self._release = client.register_script(_RELEASE)
        self._failing = False

    async def load(self, key: str, loader: Callable[[], Awaitable[Any]], ttl_s: float) -> Any:
        """The value under `key`: from Redis when a replica loaded it within `ttl_s`, else loaded (once) and stored.

        Values must be JSON (version catalogs are). Errors of `loader` propagate to every waiting caller of
        this process (SharedCache's single flight); other replicas then try the load themselves.
        """
        value_key, lock_key = f"{self._prefix}cache:{key}", f"{self._prefix}load:{key}"
        token = secrets.token_hex(8)
        try:
            with anyio.fail_after(self.lock_s + 5):
                while True:
                    raw = await self._redis.get(value_key)
                    if raw is not None:
                        return json.loads(raw)
                    if await self._redis.set(lock_key, token, nx=True, px=int(self.lock_s * 1000)):
                        # Another replica's load may have ended (stored, unlocked) between the look and the lock.
                        if (raw := await self._redis.get(value_key)) is None:
                            break
                        await self._release(keys=[lock_key], args=[token])
                        return json.loads(raw)
                    await anyio.sleep(POLL_S)
        except (exceptions.RedisError, TimeoutError) as exc:
            self._warn(exc)
            return await loader()
        try:
            value = await loader()
            try:
                await self._redis.set(value_key, json.dumps(value), px=max(1, int(ttl_s * 1000)))
                self._failing = False
            except exceptions.RedisError as exc:
                self._warn(exc)
            return value
        finally:
            with anyio.CancelScope(shield=True):
                try:
                    await self._release(keys=[lock_key], args=[token])
                except exceptions.RedisError:
                    pass  # the lock expires by itself

    def _warn(self, exc: BaseException) -> None:
        if not self._failing:
            logger.warning("shared cache: Redis unavailable (%s); loading in this replica", exc)
            self._failing = True
