"""Requests a client's model wrote for tools (`gateway.store.expansions.SampledExpansions`), on both backends: kept by
key, replaced when written again, removable (the key kept, with none), bounded (a full store keeps no new tool and
says so), shared by two replicas; and two gateways on one Redis: what a client's model wrote through one is searched
by the other."""

from pathlib import Path

import mcp.types as types
import pytest

from gateway.middleware.exposure.expansions import Expansions
from gateway.middleware.exposure.search import SearchIndex
from gateway.store.backends import open_stores
from gateway.store.expansions import SampledExpansions
from gateway.store.local.sampled import LocalSampled
from gateway.store.redis.client import Breaker
from gateway.store.redis.sampled import RedisSampled
from tests.middleware.exposure.test_sampling import MEASURE, MEASURE_KEY, QUERY, written_for
from tests.services import RedisServer, store_config
from tests.store.conftest import Backend

pytestmark = pytest.mark.anyio


async def test_sampled_requests_are_kept_by_key_and_replaced_when_written_again(backend: Backend) -> None:
    stores = backend.open()
    sampled = stores.sampled
    assert await sampled.put("k/measure#00", ["count the letters", "how long is it"]) is True
    assert await sampled.put("k/echo#11", ["say it back"]) is True
    assert await sampled.put("k/measure#00", ["how many characters"]) is True
    assert await sampled.all() == {"k/measure#00": ["how many characters"], "k/echo#11": ["say it back"]}
    await stores.aclose()


async def test_a_full_store_keeps_no_new_tool_but_still_replaces_a_kept_one(backend: Backend) -> None:
    stores = backend.open()
    sampled: SampledExpansions = (
        LocalSampled(tools=2)
        if backend.name == "local"
        else RedisSampled(stores.redis, backend.prefix, "", breaker=Breaker(""), tools=2)
    )
    assert await sampled.put("k/a#0", ["one"]) and await sampled.put("k/b#0", ["two"])
    assert await sampled.put("k/c#0", ["three"]) is False
    assert await sampled.put("k/a#0", ["one again"]) is True
    assert await sampled.all() == {"k/a#0": ["one again"], "k/b#0": ["two"]}
    await stores.aclose()


async def test_removing_a_tools_requests_keeps_its_key_with_none_for_every_replica(backend: Backend) -> None:
    stores = backend.open()
    sampled = stores.sampled
    assert await sampled.put("k/measure#00", ["count the letters"]) and await sampled.put("k/echo#11", ["say it back"])
    assert await sampled.remove("k/measure#00") is True
    assert await sampled.remove("k/measure#00") is False  # nothing left to remove
    assert await sampled.remove("k/unknown#22") is False  # and nothing made up for a key never kept
    assert await sampled.all() == {"k/measure#00": [], "k/echo#11": ["say it back"]}  # the key says: not again
    if backend.name == "redis":  # another replica reads the same
        other = backend.open()
        assert await other.sampled.all() == {"k/measure#00": [], "k/echo#11": ["say it back"]}
        await other.aclose()
    await stores.aclose()


async def test_what_a_model_wrote_through_one_replica_is_searched_by_another(
    redis: RedisServer, tmp_path: Path
) -> None:
    one, two = (open_stores(store_config("redis", redis.url, "sampled:", tmp_path)) for _ in range(2))
    writer = Expansions(one.expansions, sampled_store=one.sampled)
    assert await writer.add_sampled(MEASURE_KEY, written_for(MEASURE))
    index = SearchIndex(semantic=False)
    index.expansions = Expansions(two.expansions, sampled_store=two.sampled)
    measure = types.Tool(name="k.measure", description=MEASURE, input_schema={"type": "object"})
    echo = types.Tool(name="k.echo", description="Return the text unchanged.", input_schema={"type": "object"})
    index.build([("k.measure", "k", measure), ("k.echo", "k", echo)], ["measure", "echo"])
    assert [h.name for h in index.search(QUERY, limit=5).hits][:1] != ["k.measure"]
    await index.expansions.refresh()  # what replica two reads from the store (at most every few seconds)
    assert [h.name for h in index.search(QUERY, limit=5).hits][:1] == ["k.measure"]
    await one.aclose()
    await two.aclose()
