"""Run records on both backends: compare-and-set against stale writers, many concurrent writers losing no update,
listing and deletion; and a Redis that is down, restarting or gone gives StoreUnavailable naming it, never a hang."""

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from gateway.store.backends import open_stores
from gateway.store.base import RunRecords, StoreUnavailable, VersionConflict
from gateway.store.redis import client as redis_store
from gateway.think.errors import ThinkError
from gateway.think.state import RunState, StateStore
from tests.harness import free_port
from tests.services import redis_server, store_config
from tests.store.conftest import Backend

OWNER = "tester"

pytestmark = pytest.mark.anyio


@pytest.fixture
async def records(backend: Backend) -> AsyncIterator[RunRecords]:
    stores = backend.open()
    yield stores.runs
    await stores.aclose()


async def test_a_put_is_a_compare_and_set_on_the_version(records: RunRecords) -> None:
    assert await records.get("w", "r") is None
    await records.put("w", "r", b'{"version": 1}', 0)
    with pytest.raises(VersionConflict) as caught:
        await records.put("w", "r", b'{"version": 1, "by": "stale"}', 0)
    assert caught.value.current == 1
    await records.put("w", "r", b'{"version": 2}', 1)
    assert await records.get("w", "r") == b'{"version": 2}'
    with pytest.raises(VersionConflict):
        await records.put("w", "r", b'{"version": 4}', 3)  # ahead of the record: refused as well


async def test_records_are_listed_per_folder_and_deleted(records: RunRecords) -> None:
    await records.put("w", "a", b'{"version": 1, "n": "a"}', 0)
    await records.put("w", "b", b'{"version": 1, "n": "b"}', 0)
    await records.put("other", "c", b'{"version": 1, "n": "c"}', 0)
    assert sorted(await records.all("w")) == [b'{"version": 1, "n": "a"}', b'{"version": 1, "n": "b"}']
    await records.delete("w", "a")
    assert await records.get("w", "a") is None
    assert await records.all("w") == [b'{"version": 1, "n": "b"}']
    assert await records.all("nothing") == []
    await records.put("w", "a", b'{"version": 1}', 0)  # deleted: starts again at version 0


async def test_concurrent_writers_with_their_own_connections_lose_no_update(backend: Backend) -> None:
    """Four writers, each with its own backend object (own Redis connection, own file handles), increment one
    run through StateStore with retries on STATE_CONFLICT: every increment lands exactly once."""
    writers = [backend.open() for _ in range(4)]
    stores = [StateStore(w.runs, w.spills) for w in writers]
    await stores[0].save(
        RunState(owner=OWNER, workflow="counter", run_id="shared", params={"count": 0}), expected_version=0
    )
    conflicts = 0

    async def increment(store: StateStore, times: int) -> None:
        nonlocal conflicts
        for _ in range(times):
            while True:
                state = await store.load(OWNER, "counter", "shared")
                state.params["count"] += 1
                try:
                    await store.save(state, expected_version=state.version)
                    break
                except ThinkError as exc:
                    assert exc.error_code == "STATE_CONFLICT"
                    conflicts += 1

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            for store in stores:
                tg.start_soon(increment, store, 25)
    final = await stores[0].load(OWNER, "counter", "shared")
    assert (final.params["count"], final.version) == (100, 101)
    assert conflicts > 0  # they did overlap
    for w in writers:
        await w.aclose()


async def test_an_unreachable_redis_is_a_clear_store_unavailable_error(tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    stores = open_stores(store_config("redis", url, "x:", tmp_path))
    store = StateStore(stores.runs, stores.spills)
    with anyio.fail_after(15):
        with pytest.raises(StoreUnavailable) as caught:
            await store.load(OWNER, "w", "r")
    message = str(caught.value)
    assert url.removesuffix("/0") in message and "cannot reach it" in message and "Retry" in message
    with anyio.fail_after(15), pytest.raises(StoreUnavailable):
        await store.save(RunState(owner=OWNER, workflow="w", run_id="r"), expected_version=0)
    await stores.aclose()


async def test_a_redis_restart_keeps_saved_runs_and_the_store_reconnects(tmp_path: Path) -> None:
    with redis_server(tmp_path / "redis") as server:
        stores = open_stores(store_config("redis", server.url, "p:", tmp_path))
        store = StateStore(stores.runs, stores.spills)
        await store.save(RunState(owner=OWNER, workflow="w", run_id="r", params={"n": 1}), expected_version=0)
        server.stop()
        with anyio.fail_after(15), pytest.raises(StoreUnavailable, match="cannot reach it"):
            await store.load(OWNER, "w", "r")
        server.start()
        state = await store.load(OWNER, "w", "r")  # from the append-only file, over a new connection
        assert (state.version, state.params) == (1, {"n": 1})
        await store.save(state, expected_version=1)
        await stores.aclose()


def test_where_names_the_server_without_its_password() -> None:
    text = redis_store.where("redis://user:secret@cache.internal:6380/2", "gw:")
    assert text == "redis at redis://cache.internal:6380/2 (prefix 'gw:')" and "secret" not in text
