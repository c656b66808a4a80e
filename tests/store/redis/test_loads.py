"""The cross-replica tier of the shared cache: concurrent loads on separate connections run the loader once, a
stored value serves the others until its TTL, and an unreachable Redis falls back to loading locally."""

import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from gateway.store.redis import client as redis_store
from gateway.store.redis.client import Redis
from gateway.store.redis.loads import RedisLoads
from tests.harness import free_port
from tests.services import RedisServer

pytestmark = pytest.mark.anyio


async def test_replicas_loading_one_key_at_once_run_the_loader_once(redis: RedisServer) -> None:
    prefix = f"l{secrets.token_hex(4)}:"
    clients = [redis_store.connect(redis.url) for _ in range(3)]
    replicas = [RedisLoads(c, prefix) for c in clients]
    loads, release = 0, anyio.Event()

    async def loader() -> dict[str, list[str]]:
        nonlocal loads
        loads += 1
        await release.wait()  # the others arrive while this load is under way
        return {"bun": ["1.2"]}

    values: list[object] = []

    async def load(replica: RedisLoads) -> None:
        values.append(await replica.load("versions:stacks", loader, 60))

    with anyio.fail_after(15):
        async with anyio.create_task_group() as tg:
            for replica in replicas:
                tg.start_soon(load, replica)
            await anyio.wait_all_tasks_blocked()
            release.set()
    assert loads == 1 and values == [{"bun": ["1.2"]}] * 3
    assert await replicas[0].load("versions:stacks", loader, 60) == {"bun": ["1.2"]} and loads == 1
    for c in clients:
        await c.aclose()


class LooksFirst:
    """A replica's Redis client whose first look for the value answers only after `meanwhile` ran: another replica's
    whole load ends between this one's look and its lock."""

    def __init__(self, inner: Redis, meanwhile: Callable[[], Awaitable[object]]) -> None:
        self._inner, self._meanwhile, self._looked = inner, meanwhile, False

    async def get(self, key: str) -> object:
        value = await self._inner.get(key)
        if not self._looked:
            self._looked = True
            await self._meanwhile()
        return value

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


async def test_a_load_that_ends_between_a_replicas_look_and_its_lock_is_read_not_run_again(redis: RedisServer) -> None:
    prefix = f"l{secrets.token_hex(4)}:"
    first, second = redis_store.connect(redis.url), redis_store.connect(redis.url)
    loads = 0

    async def loader() -> dict[str, list[str]]:
        nonlocal loads
        loads += 1
        return {"bun": [f"1.{loads}"]}

    async def other_replica() -> object:
        return await RedisLoads(first, prefix).load("versions:stacks", loader, 60)

    late = RedisLoads(cast(Redis, LooksFirst(second, other_replica)), prefix)
    with anyio.fail_after(15):
        assert await late.load("versions:stacks", loader, 60) == {"bun": ["1.1"]}
    assert loads == 1
    for c in (first, second):
        await c.aclose()


async def test_an_unreachable_redis_means_loading_locally(tmp_path: Path) -> None:
    client = redis_store.connect(f"redis://127.0.0.1:{free_port()}/0")

    async def loader() -> dict[str, list[str]]:
        return {"nodejs": ["22"]}

    with anyio.fail_after(15):
        assert await RedisLoads(client, "x:").load("versions:stacks", loader, 60) == {"nodejs": ["22"]}
    await client.aclose()
