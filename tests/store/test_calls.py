"""The call log on both backends: calls kept per owner (an admin reads everyone's), newest first, bounded by
count and size; a call over the entry size cut to fit, never dropped; a replica's counts forgotten when stale."""

import json
import time

import pytest

from gateway.store.calls import ENTRY_BYTES, encoded
from gateway.store.local.calls import LocalCallLog
from tests.store.conftest import Backend

pytestmark = pytest.mark.anyio


def made(n: int, text: str = "hi") -> dict[str, object]:
    return {"ref": f"r-{n}", "at": time.time() + n, "tool": "k.echo", "before": text, "after": text}


async def test_each_owner_reads_their_own_calls_and_an_admin_everyones(backend: Backend) -> None:
    stores = backend.open()
    try:
        await stores.calls.add([("alice", made(1)), ("bob", made(2)), ("alice", made(3))])
        assert [c["ref"] for c in await stores.calls.recent(frozenset({"alice"}))] == ["r-3", "r-1"]
        assert [c["ref"] for c in await stores.calls.recent(frozenset({"bob"}))] == ["r-2"]
        assert [c["ref"] for c in await stores.calls.recent(None)] == ["r-3", "r-2", "r-1"]
        assert await stores.calls.recent(frozenset({"carol"})) == []
    finally:
        await stores.aclose()


async def test_a_replicas_counts_are_read_by_all_until_they_are_stale(backend: Backend) -> None:
    stores = backend.open()
    try:
        await stores.calls.put_counts("r1", {"server": [[["tools/call", "k.echo", None], [1], 0.1, 1]]})
        counts = await stores.calls.counts()
        assert counts["r1"]["server"][0][3] == 1 and time.time() - counts["r1"]["at"] < 60
    finally:
        await stores.aclose()


async def test_whose_arguments_are_kept_is_off_until_chosen_and_read_by_every_replica(backend: Backend) -> None:
    one, other = backend.open(), backend.open()  # two replicas (on local: two stores, each its own gateway)
    try:
        assert await one.calls.arguments_kept() == frozenset()
        await one.calls.keep_arguments("alice", True)
        await one.calls.keep_arguments("bob", True)
        await one.calls.keep_arguments("bob", False)
        await one.calls.keep_arguments("carol", False)  # never chose: nothing to undo
        assert await one.calls.arguments_kept() == frozenset({"alice"})
        shared = frozenset({"alice"}) if backend.name == "redis" else frozenset()
        assert await other.calls.arguments_kept() == shared
    finally:
        await one.aclose()
        await other.aclose()


@pytest.mark.parametrize("backend", ["redis"], indirect=True)  # the local bound: the next test
async def test_redis_keeps_per_owner_only_the_newest_and_forgets_the_oldest_owners(backend: Backend) -> None:
    stores = backend.open()
    log = stores.calls
    log.per_owner, log.owners = 3, 2  # type: ignore[attr-defined]
    try:
        await log.add([("alice", made(n)) for n in range(5)])
        assert [c["ref"] for c in await log.recent(frozenset({"alice"}))] == ["r-4", "r-3", "r-2"]
        await log.add([("bob", made(10))])
        await log.add([("carol", made(11))])  # a third owner: alice's calls, the oldest owner's, go
        assert await log.recent(frozenset({"alice"})) == []
        assert [c["ref"] for c in await log.recent(None)] == ["r-11", "r-10"]
    finally:
        await stores.aclose()


async def test_the_local_log_is_bounded_by_count_and_by_bytes() -> None:
    log = LocalCallLog(max_calls=3, max_bytes=10_000)
    await log.add([("a", made(n)) for n in range(5)])
    assert [c["ref"] for c in await log.recent(None)] == ["r-4", "r-3", "r-2"]
    await log.add([("a", made(9, "x" * 6_000)), ("a", made(10, "y" * 6_000))])
    assert [c["ref"] for c in await log.recent(None)] == ["r-10"] and log.held < 13_000  # one big call always kept


def test_a_call_over_the_entry_size_is_cut_to_fit_with_its_texts_said_to_be_cut() -> None:
    call = {**made(1, "é" * 40_000), "gateway_text": [{"kind": "hint", "text": "h" * 5_000}] * 30}
    data = encoded(call)
    assert len(data) <= ENTRY_BYTES
    kept = json.loads(data)
    assert kept["cut"] is True and kept["before"].startswith("éé") and "more characters not kept" in kept["after"]
    assert len(kept["gateway_text"]) == 10 and len(kept["gateway_text"][0]["text"]) < 400
    small = made(2)
    assert json.loads(encoded(small)) == small  # under the bound: unchanged


def test_what_the_model_received_block_by_block_is_cut_to_fit_each_block_kept_and_marked() -> None:
    """The page's entry holds what the model received as blocks (`[{text, added}]`): a big one is cut like a text,
    each block keeping its mark, and the entry still fits (it crashed the Redis call log, block lists having no
    `encode`)."""
    after = [{"text": "r" * 30_000, "added": None}, {"text": "Next: read the rest.", "added": "steering"}]
    data = encoded({**made(3, "b" * 30_000), "after": after})
    assert len(data) <= ENTRY_BYTES
    kept = json.loads(data)["after"]
    assert [b["added"] for b in kept] == [None, "steering"] and "more characters not kept" in kept[0]["text"]
    assert kept[1]["text"] == "Next: read the rest."
