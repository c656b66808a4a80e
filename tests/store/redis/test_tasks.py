"""Task records in Redis (`store/redis/tasks.py`): Redis's own clock expires a record with its task's ttl and a
running task's liveness mark with its heartbeat, a settled record keeps the ttl it was given, and a settled task
leaves its owner's running set (so it no longer counts against the running cap)."""

from pathlib import Path

import pytest

from gateway.store.base import owned
from tests.services import RedisServer
from tests.store.conftest import Backend
from tests.store.test_tasks import ROOMY, task

pytestmark = pytest.mark.anyio


async def test_redis_expires_the_record_with_its_ttl_and_the_mark_with_its_heartbeat(
    redis: RedisServer, tmp_path: Path
) -> None:
    stores = Backend("redis", redis.url, "rt:", tmp_path).open()
    record, mark = f"rt:task:{owned('alice', 't1')}", f"rt:task-alive:{owned('alice', 't1')}"
    running = f"rt:tasks-running:{owned('alice', '')}"
    try:
        await stores.tasks.create("alice", "t1", task("t1"), 60, alive_s=30, caps=ROOMY)
        assert 55_000 < await stores.redis.pttl(record) <= 60_000
        assert 25_000 < await stores.redis.pttl(mark) <= 30_000
        assert await stores.redis.scard(running) == 1

        settled = await stores.tasks.settle("alice", "t1", task("t1", "completed"))
        assert settled is not None and settled["status"] == "completed"
        assert 55_000 < await stores.redis.pttl(record) <= 60_000  # the record keeps its ttl (KEEPTTL)
        assert await stores.redis.scard(running) == 0
    finally:
        await stores.aclose()
