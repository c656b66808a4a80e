"""The page's sign-ins on both backends: a record under a key until it expires or is deleted; the local one
bounded in count, the Redis one shared by every replica's client."""

from pathlib import Path

import pytest

from gateway.store.local.signins import LocalSignIns
from tests.services import RedisServer
from tests.store.conftest import Backend

pytestmark = pytest.mark.anyio
RECORD = {"name": "alice", "kind": "static", "subject": "alice", "groups": ["ops"], "ends": 1e12}


async def test_a_sign_in_is_read_back_until_it_is_deleted(backend: Backend) -> None:
    stores, other = backend.open(), backend.open()  # on Redis: two replicas' clients
    try:
        await stores.signins.put("k1", RECORD, 60)
        assert await stores.signins.get("k1") == RECORD
        assert await stores.signins.get("k2") is None
        if backend.name == "redis":
            assert await other.signins.get("k1") == RECORD  # a sign-in on one replica holds on the other
            await other.signins.delete("k1")  # and a sign-out there ends it here
        else:
            await stores.signins.delete("k1")
        assert await stores.signins.get("k1") is None
        await stores.signins.delete("never-kept")  # nothing to say
    finally:
        await stores.aclose()
        await other.aclose()


async def test_redis_expires_a_sign_in_with_it(redis: RedisServer, tmp_path: Path) -> None:
    backend = Backend("redis", redis.url, "expiry:", tmp_path)
    stores = backend.open()
    try:
        await stores.signins.put("k1", RECORD, 0.2)  # rounded up to Redis' whole second
        assert 0 < await stores.redis.ttl("expiry:signin:k1") <= 1
    finally:
        await stores.aclose()


async def test_the_local_backend_forgets_an_expired_sign_in_and_keeps_at_most_maxsize() -> None:
    now = [0.0]
    signins = LocalSignIns(maxsize=3, clock=lambda: now[0])
    await signins.put("short", RECORD, 10)
    now[0] = 10.0
    assert await signins.get("short") is None
    for key in ("a", "b", "c", "d"):
        await signins.put(key, RECORD, 100)
    assert await signins.get("a") is None and await signins.get("d") == RECORD  # the oldest went first


async def test_a_taken_record_is_gone_for_every_replica(backend: Backend) -> None:
    stores, other = backend.open(), backend.open()  # on Redis: two replicas' clients
    try:
        await stores.signins.put("once", RECORD, 60)
        assert await stores.signins.take("once") == RECORD
        assert await stores.signins.take("once") is None
        assert await (other if backend.name == "redis" else stores).signins.get("once") is None
        assert await stores.signins.take("never-kept") is None
    finally:
        await stores.aclose()
        await other.aclose()
