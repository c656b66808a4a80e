"""`auto` over budget fills the list with the identity's most used tools first (gateway.middleware.exposure.usage):
counted on each call, written to the store off the call's path, and on Redis shared by every replica."""

import logging
from collections.abc import Iterator, Mapping
from pathlib import Path

import anyio
import pytest
from mcp import Client

from gateway.app.gateway import Gateway
from gateway.config import load_config
from gateway.middleware.exposure.usage import UsageTally
from gateway.store.local.usage import LocalUsage
from gateway.store.redis import client as redis_client
from gateway.store.redis.usage import RedisUsage
from tests.harness import connected, free_port, kitchen, write_config
from tests.services import RedisServer, redis_server

pytestmark = pytest.mark.anyio

LAST = "k.tool_029"
"""The catalog's last tool: `auto` over budget never reaches it in catalog order."""


@pytest.fixture(scope="module")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with redis_server(tmp_path_factory.mktemp("redis")) as server:
        yield server


def replica(folder: Path, store: dict[str, str]) -> Gateway:
    """A gateway over a kitchen with 30 generated tools, listing at most 15 (`auto`), with its own folders."""
    folder.mkdir()
    config = write_config(
        folder,
        {"k": kitchen("k", "--tools", "30")},
        exposure={"mode": "auto", "max_tools": 15},
        store=store,
        think={"state_dir": str(folder / "state")},
        limits={"outputs_dir": str(folder / "outputs")},
    )
    return Gateway(load_config(config))


async def names(client: Client) -> list[str]:
    return [t.name for t in (await client.list_tools(cache_mode="bypass")).tools]


async def test_a_tool_one_identity_uses_on_one_replica_is_listed_to_it_by_another(
    redis: RedisServer, tmp_path: Path
) -> None:
    store = {"backend": "redis", "url": redis.url, "prefix": "fill:"}
    async with connected(replica(tmp_path / "a", store)) as (_a, on_a):
        async with connected(replica(tmp_path / "b", store)) as (_b, on_b):
            before = await names(on_b)
            assert LAST not in before and len(before) == 15  # filled in catalog order
            for _ in range(3):
                assert not (await on_a.call_tool(LAST, {"query": "x"})).is_error
            assert LAST in await names(on_a)  # its list writes its pending counts first
            after = await names(on_b)  # another replica, another session of the same identity
            assert LAST in after and len(after) == 15  # in place of the last tool that fitted before
            assert set(before) - set(after) == {before[-1]}


async def test_a_store_that_fails_costs_the_counts_and_one_warning_never_the_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    down = redis_client.connect(f"redis://127.0.0.1:{free_port()}/0")  # nothing listens there
    tally = UsageTally(RedisUsage(down, "x:", "redis at nowhere", breaker=redis_client.Breaker("redis at nowhere")))
    tally.note("alice", "k.a")
    with caplog.at_level(logging.WARNING, "gateway.middleware.exposure.usage"):
        assert await tally.top("alice", 5) == []
    assert any("counts are dropped" in r.getMessage() for r in caplog.records)
    assert any("catalog order" in r.getMessage() for r in caplog.records)
    await down.aclose()


class Counted(LocalUsage):
    """The local store, telling each write (so the test waits for the background writer without sleeping)."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0
        self.written = anyio.Event()

    async def add(self, owner: str, counts: Mapping[str, int]) -> None:
        await super().add(owner, counts)
        self.writes += 1
        self.written.set()


async def test_counts_reach_the_store_in_the_background_one_write_for_a_burst_of_calls() -> None:
    store = Counted()
    tally = UsageTally(store)
    async with tally.running():
        for _ in range(100):
            tally.note("alice", "k.a")
        tally.note("alice", "k.b")
        with anyio.fail_after(10):
            await store.written.wait()
        assert store.writes == 1 and await store.top("alice", 5) == ["k.a", "k.b"]
