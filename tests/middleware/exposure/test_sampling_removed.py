"""What a client's model wrote for a tool, removed by an operator (`Expansions.forget_sampled`, the page's Remove):
no replica searches by it any more, and none asks a client's model about that tool again — not even a replica whose
first contact is a list, before it has read the store — until the tool's description changes."""

from collections.abc import Iterator
from pathlib import Path

import anyio
import mcp.types as types
import pytest
from mcp import Client

from gateway.app.gateway import Gateway
from gateway.config import load_config
from gateway.middleware.exposure.expansions import Expansions
from gateway.middleware.exposure.sampling import Sampler
from gateway.routing.catalog import Entry
from gateway.store.local.expansions import LocalExpansions
from gateway.store.local.sampled import LocalSampled
from tests.harness import kitchen, write_config
from tests.middleware.exposure.test_sampling import MEASURE, MEASURE_KEY, QUERY, Model, found
from tests.services import RedisServer, redis_server

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with redis_server(tmp_path_factory.mktemp("redis")) as server:
        yield server


def replica(folder: Path, redis: RedisServer) -> Gateway:
    folder.mkdir()
    config = write_config(
        folder,
        {"k": kitchen("k")},
        exposure={"sampled_expansions": True},
        store={"backend": "redis", "url": redis.url, "prefix": "removed:"},
        think={"state_dir": str(folder / "state")},
        limits={"outputs_dir": str(folder / "outputs")},
    )
    return Gateway(load_config(config))


async def test_removed_requests_are_searched_and_asked_for_by_no_replica(redis: RedisServer, tmp_path: Path) -> None:
    one, first_model = replica(tmp_path / "one", redis), Model()
    async with one.running(), Client(one.front.server, mode="legacy", sampling_callback=first_model) as client:
        with anyio.fail_after(30):
            await client.list_tools()
            await one.sampler.idle()
            assert (await found(client, QUERY))[:1] == ["k.measure"]  # what the model wrote finds it
            assert await one.exposure.index.expansions.forget_sampled(MEASURE_KEY) is True
            assert (await found(client, QUERY))[:1] != ["k.measure"]  # and no longer, once removed
            assert (await one.stores.sampled.all())[MEASURE_KEY] == []
    two, second_model = replica(tmp_path / "two", redis), Model()
    async with two.running(), Client(two.front.server, mode="legacy", sampling_callback=second_model) as client:
        with anyio.fail_after(30):
            await client.list_tools()  # its first contact: no search has read the store yet
            await two.sampler.idle()
            assert (await found(client, QUERY))[:1] != ["k.measure"]
    assert "- k.measure:" not in "\n".join(second_model.prompts)


def test_a_removed_tool_is_asked_about_again_once_its_description_changes() -> None:
    expansions = Expansions(LocalExpansions(), sampled_store=LocalSampled())
    expansions.sampled[MEASURE_KEY] = []  # removed
    sampler = Sampler(expansions)
    same = Entry("k.measure", "k", "measure", types.Tool(name="measure", description=MEASURE, input_schema={}))
    changed = Entry(
        "k.measure", "k", "measure", types.Tool(name="measure", description=MEASURE + " In bytes.", input_schema={})
    )
    assert sampler.wanted([same]) == []
    assert [entry for _key, entry in sampler.wanted([changed])] == [changed]
