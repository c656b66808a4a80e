"""Spilled outputs on Redis (`RedisOutputs`): every part of an output (its text in chunks, its whole result, its
meta) stored at once with the output's TTL, so none outlives the others; and past the size cap the oldest outputs
are evicted, a read of one saying why. What both backends do alike is tests/store/test_outputs.py's."""

import secrets
from pathlib import Path

import pytest

from gateway.store.backends import open_stores
from gateway.store.outputs import OutputError
from gateway.store.redis import client as redis_store
from gateway.store.redis.outputs import CHUNK, RedisOutputs
from tests.services import RedisServer, store_config

pytestmark = pytest.mark.anyio

OWNER = "tester"


async def test_every_part_of_an_output_is_stored_with_its_ttl(redis: RedisServer, tmp_path: Path) -> None:
    prefix = f"k{secrets.token_hex(4)}:"
    stores = open_stores(store_config("redis", redis.url, prefix, tmp_path))
    assert isinstance(stores.outputs, RedisOutputs)
    text = secrets.token_hex(CHUNK)  # two chunks of text
    spilled = await stores.outputs.spill(OWNER, {"content": [{"type": "text", "text": text}]}, text)
    client = redis_store.connect(redis.url)
    keys = sorted(k.decode() if isinstance(k, bytes) else k for k in await client.keys(f"{prefix}out:*"))
    assert [k.rpartition(spilled.id)[2] for k in keys] == ["", ":j", ":t:0", ":t:1"]
    ttls = [await client.pttl(k) for k in keys]
    assert all(0 < ttl <= 7_200_000 for ttl in ttls), ttls  # limits.outputs_ttl_s
    assert (await stores.outputs.read(OWNER, spilled.id, 0, 10)).text == text[:10]
    await client.aclose()
    await stores.aclose()


async def test_the_oldest_outputs_are_evicted_past_the_size_cap(redis: RedisServer, tmp_path: Path) -> None:
    config = store_config("redis", redis.url, f"e{secrets.token_hex(4)}:", tmp_path, outputs_max_bytes=1024 * 1024)
    stores = open_stores(config)
    assert isinstance(stores.outputs, RedisOutputs)
    noise = secrets.token_hex(200_000)  # 400 KB that gzip cannot shrink much: ~200 KB stored each
    ids = [(await stores.outputs.spill(OWNER, {"n": n}, noise)).id for n in range(8)]
    kept = []
    for output_id in ids:
        try:
            await stores.outputs.read(OWNER, output_id, 0, 10)
            kept.append(output_id)
        except OutputError as exc:
            assert "the oldest go first past 1,048,576 bytes" in str(exc)
    assert kept == ids[-len(kept) :] and 2 <= len(kept) < len(ids)  # the newest stayed, the oldest went
    await stores.aclose()
