"""What the gateway remembers per client across its sessions (`ClientShare`, both backends): of many sessions of one
client claiming its first result at once exactly one is first (on Redis: among replicas); the claim lasts the window;
promotions are the client's, expire when idle; another identity or another client name is another client; the local
memory is bounded; a Redis that is down degrades to "better the driver twice than never"."""

import logging
from pathlib import Path

import anyio
import pytest

from gateway import session as session_module
from gateway.config import ClientsConfig
from gateway.session import Identity, Session, SessionStore
from gateway.store.backends import open_stores
from gateway.store.base import ClientShare
from gateway.store.local.clients import LocalClients
from gateway.telemetry.repeats import Repeating
from tests.harness import free_port
from tests.services import RedisServer, store_config
from tests.store.conftest import Backend

pytestmark = pytest.mark.anyio

ALICE = Identity("alice", "static", "alice")
BOB = Identity("bob", "static", "bob")


def named(store: SessionStore, key: str, identity: Identity, client: str | None) -> Session:
    session = store.get(f"{identity.key}|{key}", identity)
    session.client = client  # as the front notes it
    return session


async def test_of_many_sessions_of_a_client_at_first_contact_exactly_one_is_first(backend: Backend) -> None:
    opened = [backend.open() for _ in range(3 if backend.name == "redis" else 1)]  # redis: three replicas
    shares = [stores.clients for stores in opened]
    sessions = [named(SessionStore(clients=shares[n % len(shares)]), f"conn-{n}", ALICE, "ts2") for n in range(12)]
    firsts: list[bool] = []

    async def first(session: Session) -> None:
        firsts.append(await session.first_response())

    async with anyio.create_task_group() as tg:  # twelve connections' first results at once
        for session in sessions:
            tg.start_soon(first, session)
    assert sorted(firsts) == [False] * 11 + [True]
    late = named(SessionStore(clients=shares[0]), "conn-late", ALICE, "ts2")
    assert not await late.first_response()  # a new connection of the same client, later in the window
    for stores in opened:
        await stores.aclose()


async def test_another_identity_or_another_client_name_is_another_client(backend: Backend) -> None:
    stores = backend.open()
    store = SessionStore(clients=stores.clients)
    assert await named(store, "c1", ALICE, "app").first_response()
    assert not await named(store, "c2", ALICE, "app").first_response()
    assert await named(store, "c3", BOB, "app").first_response()  # another identity
    assert await named(store, "c4", ALICE, "other-app").first_response()  # another client name
    unnamed = [named(store, f"c{n}", ALICE, None) for n in (5, 6)]  # not named (yet): its session is all we know
    assert [await s.first_response() for s in unnamed] == [True, True]

    await named(store, "c1", ALICE, "app").promote(["kitchen.blob"])
    assert await named(store, "c7", ALICE, "app").promoted() == ["kitchen.blob"]  # the client's, on a new session
    assert await named(store, "c8", BOB, "app").promoted() == []
    assert await named(store, "c9", ALICE, "other-app").promoted() == []
    assert await unnamed[0].promoted() is None  # the session's own view in memory
    if stores.redis is not None:  # key names carry digests, neither the identity nor the client's name
        names = [k.decode() for k in await stores.redis.keys(f"{backend.prefix}client:*")]
        assert names and not [n for n in names if "alice" in n or "app" in n]
        ttls = [await stores.redis.ttl(n) for n in names]
        assert all(0 < ttl <= 1800 for ttl in ttls), ttls  # the default window
    await stores.aclose()


async def test_the_first_contact_lasts_the_window_and_idle_promotions_expire() -> None:
    now = [0.0]
    clients = LocalClients(600.0, timer=lambda: now[0])
    assert await clients.claim_first("c") and not await clients.claim_first("c")
    await clients.promote("c", ["kitchen.blob"])
    now[0] = 500.0
    assert await clients.promoted("c") == ["kitchen.blob"]  # read: its idle expiry starts again
    assert not await clients.claim_first("c")  # within the window: not new
    now[0] = 601.0
    assert await clients.claim_first("c")  # the window since the first contact is over: the driver comes again
    assert await clients.promoted("c") == ["kitchen.blob"]  # read at 500: still kept
    now[0] = 1300.0
    assert await clients.promoted("c") == []  # idle for the window: forgotten


async def test_the_local_memory_of_clients_is_bounded() -> None:
    clients = LocalClients(600.0, maxsize=2)
    assert [await clients.claim_first(c) for c in ("a", "b", "c")] == [True, True, True]
    assert await clients.claim_first("a")  # the oldest went to make room: a client forgotten, never unbounded


async def test_a_window_of_0_keeps_first_contact_per_session(tmp_path: Path) -> None:
    config = store_config("local", "", "", tmp_path)
    assert open_stores(config.model_copy(update={"clients": ClientsConfig(window_s=0)})).clients is None
    store = SessionStore(clients=None)
    assert await named(store, "c1", ALICE, "app").first_response()
    assert await named(store, "c2", ALICE, "app").first_response()  # each connection its own, as before


async def test_with_redis_down_the_client_gets_the_driver_rather_than_never_and_it_is_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(session_module, "repeats", Repeating(session_module.logger))  # this test's count only
    stores = open_stores(store_config("redis", f"redis://127.0.0.1:{free_port()}/0", "d:", tmp_path))
    shared: ClientShare | None = stores.clients
    assert shared is not None
    store = SessionStore(clients=shared)
    with anyio.fail_after(15), caplog.at_level(logging.WARNING, logger="gateway.session"):
        assert await named(store, "c1", ALICE, "app").first_response()
        assert await named(store, "c2", ALICE, "app").first_response()  # Redis paused: at once, not after retries
        await named(store, "c1", ALICE, "app").promote(["kitchen.blob"])
        assert await named(store, "c1", ALICE, "app").promoted() is None  # this replica's view
    [line] = [r.getMessage() for r in caplog.records]
    assert "Nothing was changed" in line and line.endswith("the driver prompt may come again")
    await stores.aclose()


async def test_a_replica_that_saw_a_clients_claim_answers_without_asking_redis_again(
    redis: RedisServer, tmp_path: Path
) -> None:
    one, two = (open_stores(store_config("redis", redis.url, "k:", tmp_path)) for _ in range(2))
    assert one.clients is not None and two.clients is not None and one.redis is not None
    assert await one.clients.claim_first("c") and not await two.clients.claim_first("c")
    await one.redis.delete("k:client:c:boot")  # as if the window ended just now
    assert not await one.clients.claim_first("c")  # known for up to a minute: a new connection per call is free
    assert not await two.clients.claim_first("c")
    fresh = open_stores(store_config("redis", redis.url, "k:", tmp_path))  # a replica that saw nothing asks
    assert fresh.clients is not None and await fresh.clients.claim_first("c")
    for stores in (one, two, fresh):
        await stores.aclose()
