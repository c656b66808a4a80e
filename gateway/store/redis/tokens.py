"""People's sealed OAuth tokens (`gateway.store.tokens.Tokens`) in Redis, one string `{prefix}token:<digest>` per
(identity, server), so every replica serves a person with the token they signed in with on any of them."""

from typing import cast

from gateway.store.redis.client import Redis, guarded


class RedisTokens:
    def __init__(self, client: Redis, prefix: str, where: str) -> None:
        self._redis = client
        self._prefix = f"{prefix}token:"
        self.where = where

    async def put(self, key: str, sealed: bytes) -> None:
        async with guarded(self.where):
            await self._redis.set(self._prefix + key, sealed)

    async def get(self, key: str) -> bytes | None:
        async with guarded(self.where):
            return cast(bytes | None, await self._redis.get(self._prefix + key))

    async def delete(self, key: str) -> None:
        async with guarded(self.where):
            await self._redis.delete(self._prefix + key)
