"""A stored output that is not what a spill wrote (edited by hand, truncated, another program's key) is answered as
missing, logged once with its key and deleted, on both backends; on Redis it never stops the size cap: later spills
are stored and the oldest still evicted."""

import gzip
import logging
import re
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, cast

import pytest
import redis.asyncio as aioredis

from gateway.store.backends import Stores, open_stores
from gateway.store.base import owned
from gateway.store.outputs import OutputError
from gateway.store.redis.outputs import CHUNK, RedisOutputs
from tests import harness
from tests.harness import hints_of, text_of, write_config
from tests.servers.kitchen import Kitchen
from tests.services import RedisServer, store_config
from tests.store.conftest import Backend

pytestmark = pytest.mark.anyio

OWNER = "tester"
CAP = 1024 * 1024
NOISE = secrets.token_hex(200_000)  # 400 KB that gzip cannot shrink much: ~200 KB stored each
TEXT = "é" * 200_000  # 400,000 bytes: two chunks on Redis


@pytest.fixture
async def redis_stores(redis: RedisServer, tmp_path: Path) -> AsyncIterator[Stores]:
    stores = open_stores(store_config("redis", redis.url, f"c{secrets.token_hex(4)}:", tmp_path, outputs_max_bytes=CAP))
    yield stores
    await stores.aclose()


def outputs_of(stores: Stores) -> RedisOutputs:
    assert isinstance(stores.outputs, RedisOutputs)
    return stores.outputs


def complaints(caplog: pytest.LogCaptureFixture, key: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if key in r.getMessage()]


async def readable(stores: Stores, output_id: str) -> bool:
    try:
        await stores.outputs.read(OWNER, output_id, 0, 10)
    except OutputError as exc:
        assert "No stored output" in str(exc)
        return False
    return True


async def test_a_garbled_redis_entry_is_missing_logged_once_and_the_size_cap_still_holds(
    redis_stores: Stores, caplog: pytest.LogCaptureFixture
) -> None:
    outputs, client = outputs_of(redis_stores), redis_stores.redis
    garbled = (await outputs.spill(OWNER, {"n": 0}, NOISE)).id
    key = f"{outputs._prefix}out:{owned(OWNER, garbled)}"
    await client.hset(key, "chunks", "abc")  # the case
    with caplog.at_level(logging.WARNING, logger="gateway.store.redis.outputs"):
        ids = [(await outputs.spill(OWNER, {"n": n}, NOISE)).id for n in range(1, 9)]  # each spill evicts
        assert not await readable(redis_stores, garbled)
    kept = [i for i in ids if await readable(redis_stores, i)]
    assert kept == ids[-len(kept) :] and 2 <= len(kept) < len(ids)  # the cap held: the oldest went
    stored = [int(await client.hget(f"{outputs._prefix}out:{owned(OWNER, i)}", "stored")) for i in kept]
    assert sum(stored[:-1]) <= CAP  # within the cap, but for the newest (always kept)
    [line] = complaints(caplog, key)
    assert "corrupt" in line and "chunks=b'abc'" in line
    assert await client.keys(f"{key}*") == []  # its chunks and JSON deleted too


async def another_type(r: aioredis.Redis, key: str) -> None:
    await r.delete(key)
    await r.set(key, "x")


async def truncated_chunk(r: aioredis.Redis, key: str) -> None:
    blob = cast(bytes, await r.get(f"{key}:t:1"))
    await r.set(f"{key}:t:1", blob[: len(blob) // 2])


GARBLES: dict[str, Callable[[aioredis.Redis, str], Awaitable[Any]]] = {
    "a key of another type": another_type,
    "a negative size": lambda r, key: r.hset(key, "text_bytes", -5),
    "a chunk count its size cannot have": lambda r, key: r.hset(key, "chunks", 10**15),
    "a chunk that is not gzip": lambda r, key: r.set(f"{key}:t:0", b"abc"),
    "a truncated chunk": truncated_chunk,
    "a chunk of the wrong size": lambda r, key: r.set(f"{key}:t:1", gzip.compress(b"x" * 10)),
    "a chunk that inflates to 50 MB": lambda r, key: r.set(f"{key}:t:1", gzip.compress(b"\0" * 50_000_000)),
    "a chunk that is not UTF-8": lambda r, key: r.set(f"{key}:t:1", gzip.compress(b"\xff" * (400_000 - CHUNK))),
}


@pytest.mark.parametrize("garble", list(GARBLES))
async def test_any_garbled_part_of_a_redis_output_reads_as_missing_and_is_logged_once(
    redis_stores: Stores, caplog: pytest.LogCaptureFixture, garble: str
) -> None:
    outputs, client = outputs_of(redis_stores), redis_stores.redis
    spilled = await outputs.spill(OWNER, {"n": 0}, TEXT)
    key = f"{outputs._prefix}out:{owned(OWNER, spilled.id)}"
    await GARBLES[garble](client, key)
    with caplog.at_level(logging.WARNING, logger="gateway.store.redis.outputs"):
        for _ in range(2):
            with pytest.raises(OutputError, match="No stored output"):
                await outputs.read(OWNER, spilled.id, CHUNK - 10, 20)  # both chunks
        assert await outputs.spill(OWNER, {"n": 1}, TEXT)  # later spills are stored and evict as ever
    assert len(complaints(caplog, key)) == 1
    assert await client.keys(f"{key}*") == []


async def test_index_entries_that_are_not_output_ids_are_dropped_and_the_cap_still_holds(
    redis_stores: Stores, caplog: pytest.LogCaptureFixture
) -> None:
    outputs, client = outputs_of(redis_stores), redis_stores.redis
    strays = {b"\xff not an id": 0, "../../etc": 1, f"{OWNER}~{'0' * 24}~x": 2, "0" * 24: 3}  # last: no owner
    await client.zadd(f"{outputs._prefix}outs", strays)
    with caplog.at_level(logging.WARNING, logger="gateway.store.redis.outputs"):
        ids = [(await outputs.spill(OWNER, {"n": n}, NOISE)).id for n in range(8)]
    assert not await readable(redis_stores, ids[0]) and await readable(redis_stores, ids[-1])
    assert len(complaints(caplog, "are not outputs")) == 1
    assert set(await client.zrange(f"{outputs._prefix}outs", 0, -1)) <= {owned(OWNER, i).encode() for i in ids}


async def test_a_corrupt_whole_result_reads_as_missing_on_both_backends(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    stores = backend.open()
    spilled = await stores.outputs.spill(OWNER, {"content": []}, TEXT)
    if backend.name == "local":
        path = backend.folder / "outputs" / f"{owned(OWNER, spilled.id)}.json.gz"
        path.write_bytes(gzip.compress(b'{"content": ['))  # valid gzip, JSON cut short
        whole = str(path)
    else:
        whole = f"{backend.prefix}out:{owned(OWNER, spilled.id)}"
        await stores.redis.set(f"{whole}:j", b"not gzip")
    with caplog.at_level(logging.WARNING):
        for _ in range(2):
            with pytest.raises(OutputError, match="No stored output"):
                await stores.outputs.read_whole(OWNER, spilled.id)
    assert len(complaints(caplog, whole)) == 1
    await stores.aclose()


@pytest.mark.parametrize("damage", ["truncated", "not gzip", "empty"])
async def test_a_damaged_local_output_file_reads_as_missing_is_logged_once_and_removed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: str
) -> None:
    stores = open_stores(store_config("local", "", "", tmp_path))
    spilled = await stores.outputs.spill(OWNER, {"content": []}, TEXT)
    text = tmp_path / "outputs" / f"{owned(OWNER, spilled.id)}.txt.gz"
    data = text.read_bytes()
    text.write_bytes({"truncated": data[: len(data) // 2], "not gzip": b"plain text", "empty": b""}[damage])
    with caplog.at_level(logging.WARNING, logger="gateway.store.local.outputs"):
        for _ in range(2):
            with pytest.raises(OutputError, match="No stored output"):
                await stores.outputs.read(OWNER, spilled.id, 0, 10)
    assert len(complaints(caplog, str(text))) == 1
    assert list((tmp_path / "outputs").iterdir()) == []


async def test_through_the_gateway_a_garbled_entry_neither_lets_a_big_result_through_nor_fails_its_read(
    redis: RedisServer, tmp_path: Path
) -> None:
    prefix = f"g{secrets.token_hex(4)}:"
    store = {"backend": "redis", "url": redis.url, "prefix": prefix, "outputs_max_bytes": CAP}
    config = write_config(tmp_path, {}, store=store, think={"state_dir": str(tmp_path / "state")})
    async with harness.connected(config, in_process={"k": lambda: Kitchen("k", None, 0, []).server}) as (_, client):
        first = await client.call_tool("k.blob", {"n": 30_000})
        found = re.search(r"stored as ([0-9a-f]{24})", " ".join(hints_of(first)))
        assert found is not None
        output_id = found[1]
        redis_client = aioredis.Redis.from_url(redis.url)
        [key] = await redis_client.keys(f"{prefix}out:*~{output_id}")  # the caller's (an owner digest first)
        await redis_client.hset(key, "chunks", "abc")
        await redis_client.aclose()
        for _ in range(3):  # the issue: a 400 KB result came back whole once eviction had failed
            big = await client.call_tool("k.blob", {"n": 400_000})
            assert len(text_of(big).encode()) < 20_000 and "stored as" in " ".join(hints_of(big))
        page = await client.call_tool("gateway.read_output", {"id": output_id})
        assert page.is_error and "No stored output" in text_of(page)
