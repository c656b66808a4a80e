"""Tool call counts per identity (`gateway.store.base.Usage`), on both backends: most called first, kept per owner,
bounded, and on Redis keyed by the owner's digest with an expiry."""

from pathlib import Path

import pytest

from gateway.store.backends import open_stores
from gateway.store.base import USAGE_IDLE_S, Usage
from gateway.store.local.usage import LocalUsage
from gateway.store.redis.client import Breaker
from gateway.store.redis.usage import RedisUsage
from tests.services import RedisServer, store_config
from tests.store.conftest import Backend

pytestmark = pytest.mark.anyio


async def test_counts_add_up_per_owner_and_the_most_called_come_first(backend: Backend) -> None:
    stores = backend.open()
    usage = stores.usage
    await usage.add("alice", {"k.a": 1, "k.b": 3})
    await usage.add("alice", {"k.a": 4, "k.c": 3})
    await usage.add("bob", {"k.z": 9})
    assert await usage.top("alice", 10) == ["k.a", "k.b", "k.c"]  # 5, then 3 and 3 by name
    assert await usage.top("alice", 2) == ["k.a", "k.b"]
    assert await usage.top("bob", 10) == ["k.z"]  # another identity's counts are its own
    assert await usage.top("carol", 10) == []
    await stores.aclose()


async def test_an_owner_keeps_only_its_most_called_tools(backend: Backend) -> None:
    stores = backend.open()
    usage: Usage = (
        LocalUsage(kept=3)
        if backend.name == "local"
        else RedisUsage(stores.redis, "k:", "", breaker=Breaker(""), kept=3)
    )
    await usage.add("alice", {f"k.t{i}": i + 1 for i in range(6)})  # t5 called 6 times ... t0 once
    await usage.add("alice", {"k.t0": 1})  # a newcomer with too few calls does not stay either
    assert await usage.top("alice", 10) == ["k.t5", "k.t4", "k.t3"]
    await stores.aclose()


async def test_the_local_backend_forgets_the_least_recently_counted_owner_first() -> None:
    usage = LocalUsage(owners=2)
    for owner in ("alice", "bob", "alice", "carol"):
        await usage.add(owner, {"k.a": 1})
    assert [await usage.top(o, 1) for o in ("alice", "bob", "carol")] == [["k.a"], [], ["k.a"]]


async def test_redis_keys_name_the_owner_digest_only_and_expire(redis: RedisServer, tmp_path: Path) -> None:
    stores = open_stores(store_config("redis", redis.url, "layout:", tmp_path))
    owner = "0f" * 16  # Identity.owner: a digest
    await stores.usage.add(owner, {"k.a": 2})
    keys = [k.decode() for k in await stores.redis.keys("layout:*")]
    assert keys == [f"layout:usage:{owner}"]
    assert 0 < await stores.redis.ttl(keys[0]) <= USAGE_IDLE_S
    await stores.aclose()
