"""The cross-replica tier of the shared cache: concurrent loads on separate connections run the loader once, a
stored value serves the others until its TTL, and an unreachable Redis falls back to loading locally."""

import secrets
from pathlib import Path

import anyio
import pytest

from gateway.store.redis import client as redis_store
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


async def test_an_unreachable_redis_means_loading_locally(tmp_path: Path) -> None:
    client = redis_store.connect(f"redis://127.0.0.1:{free_port()}/0")

    async def loader() -> dict[str, list[str]]:
        return {"nodejs": ["22"]}

    with anyio.fail_after(15):
        assert await RedisLoads(client, "x:").load("versions:stacks", loader, 60) == {"nodejs": ["22"]}
    await client.aclose()
