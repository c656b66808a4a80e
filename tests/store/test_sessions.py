"""What replicas share besides run records: a run's spilled captures (both backends) and a roaming session's
fields (Redis): the driver claimed once among concurrent replicas, the runs with their stored versions in one
read, exposure promotions, idle expiry, no identity in key names, and a Redis that is down degrading to this
replica's memory."""

import gzip
import logging
from pathlib import Path

import anyio
import pytest

from gateway import session as session_module
from gateway.session import Identity, SessionStore
from gateway.store.backends import open_stores
from gateway.store.base import SESSION_IDLE_S, StoreUnavailable, owned
from gateway.store.redis.sessions import RedisSessions
from gateway.telemetry.repeats import Repeating
from tests.harness import free_port
from tests.services import RedisServer, store_config
from tests.store.conftest import Backend

pytestmark = pytest.mark.anyio


async def test_a_runs_spills_are_kept_read_and_dropped_with_the_run(backend: Backend) -> None:
    stores = backend.open()
    spills, blob = stores.spills, gzip.compress(b'{"big": true}')
    assert await spills.get("w", "r", "s-1.json.gz") is None
    await spills.put("w", "r", "s-1.json.gz", blob)
    await spills.put("w", "other", "s-1.json.gz", b"x")
    assert await spills.get("w", "r", "s-1.json.gz") == blob
    where = spills.location("w", "r", "s-1.json.gz")
    if backend.name == "local":
        assert where == str(backend.folder / "state" / "w" / "r.files" / "s-1.json.gz")
    else:
        assert where.endswith(f"hash {backend.prefix}spill:w:r, field s-1.json.gz") and "redis at" in where
    await spills.drop("w", "r")
    assert await spills.get("w", "r", "s-1.json.gz") is None
    assert await spills.get("w", "other", "s-1.json.gz") == b"x"  # another run's spills stay
    await stores.aclose()


async def test_a_roaming_session_is_bootstrapped_once_and_tracks_runs_across_replicas(
    redis: RedisServer, tmp_path: Path
) -> None:
    opened = [open_stores(store_config("redis", redis.url, "s:", tmp_path)) for _ in range(3)]
    replicas = [SessionStore(shared=stores.sessions) for stores in opened]
    alice = Identity("alice", "static", "alice")
    key = f"{alice.key}|conn-10.0.0.7:51000"
    sessions = [replica.get(key, alice, roaming=True) for replica in replicas]
    firsts: list[bool] = []

    async def first(n: int) -> None:
        firsts.append(await sessions[n].first_response())

    async with anyio.create_task_group() as tg:  # three replicas answer the session's first calls at once
        for n in range(3):
            tg.start_soon(first, n)
    assert sorted(firsts) == [False, False, True]
    assert not await sessions[0].first_response()  # known locally from now on

    records, folder = opened[0].runs, owned(alice.owner, "flow")  # alice's runs of `flow`
    await records.put(folder, "r1", b"{}", 0)
    await sessions[0].track("flow", "r1")
    assert await sessions[1].runs() == {"flow": ("r1", 1)}  # with the version stored now, in one read
    await records.put(folder, "r1", b"{}", 1)
    assert await sessions[2].runs() == {"flow": ("r1", 2)}
    await sessions[2].track("flow", None)
    assert await sessions[0].runs() == {}
    assert await sessions[0].promoted() == []
    await sessions[1].promote(["kitchen.blob", "kitchen.echo"])  # exposure promotions, LRU order kept
    assert await sessions[2].promoted() == ["kitchen.blob", "kitchen.echo"]

    client = opened[0].redis
    names = [k.decode() for k in await client.keys("s:session:*")]
    assert len(names) == 1 and "alice" not in names[0]  # a digest, not the identity
    assert 0 < await client.ttl(names[0]) <= SESSION_IDLE_S
    shared = opened[0].sessions
    assert shared is not None
    await client.expire(names[0], 100)
    await shared.runs(key, alice.owner, refresh=False)  # the per-call read writes nothing…
    assert await client.ttl(names[0]) <= 100
    await shared.runs(key, alice.owner)  # …the occasional refresh restarts the idle expiry
    assert await client.ttl(names[0]) > 100
    local = SessionStore().get(key, alice, roaming=True)  # the local backend: memory only
    assert local.shared is None and await local.first_response() and not await local.first_response()
    assert await local.promoted() is None  # the exposure view in memory is the whole truth
    for stores in opened:
        await stores.aclose()


async def test_with_redis_down_a_roaming_session_falls_back_to_this_replicas_memory_and_says_so_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(session_module, "repeats", Repeating(session_module.logger))  # this test's count only
    stores = open_stores(store_config("redis", f"redis://127.0.0.1:{free_port()}/0", "d:", tmp_path))
    assert isinstance(stores.sessions, RedisSessions)
    session = SessionStore(shared=stores.sessions).get("k|conn-1", roaming=True)
    with anyio.fail_after(15), caplog.at_level(logging.WARNING, logger="gateway.session"):
        assert await session.first_response()  # better the driver twice than never
        await session.track("flow", "r1")
        assert await session.runs() == {"flow": ("r1", None)}
        await session.promote(["kitchen.blob"])
        assert await session.promoted() is None  # listing falls back to this replica's view
        with pytest.raises(StoreUnavailable, match="failed less than 5 s ago"):  # not asked again meanwhile
            await stores.sessions.runs("k|conn-1", "k")
        for _ in range(100):  # a 2026-era call each: every one used to log a WARNING
            await session.runs()
    [line] = [r.getMessage() for r in caplog.records]  # the first failure, once; the rest counted for the next line
    assert "Nothing was changed" in line and line.endswith("the driver prompt may come again")
    await stores.aclose()
