"""SharedCache: TTL with an injected clock, single-flight loads, stale-on-error, invalidation."""

import logging

import anyio
import pytest

from gateway.store.cache import SharedCache

pytestmark = pytest.mark.anyio


class Clock:
    """A timer the test moves by hand, so expiry needs no sleeping."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Loader:
    """Returns the next value on each call and counts calls; can be told to fail."""

    def __init__(self) -> None:
        self.calls = 0
        self.fail: Exception | None = None

    async def __call__(self) -> str:
        self.calls += 1
        if self.fail is not None:
            raise self.fail
        return f"v{self.calls}"


async def test_value_is_served_from_cache_until_the_ttl_runs_out() -> None:
    clock, load = Clock(), Loader()
    cache = SharedCache(timer=clock)
    assert await cache.get("k", load, ttl_s=10) == "v1"
    clock.now += 9.9
    assert await cache.get("k", load, ttl_s=10) == "v1"
    assert cache.is_fresh("k")
    clock.now += 0.1
    assert not cache.is_fresh("k")
    assert cache.peek("k") == "v1"  # expired values are kept to back failures
    assert await cache.get("k", load, ttl_s=10) == "v2"
    assert load.calls == 2


async def test_keys_are_independent() -> None:
    load = Loader()
    cache = SharedCache(timer=Clock())
    assert await cache.get("a", load, ttl_s=10) == "v1"
    assert await cache.get("b", load, ttl_s=10) == "v2"
    assert await cache.get("a", load, ttl_s=10) == "v1"


async def test_concurrent_gets_share_a_single_load() -> None:
    cache = SharedCache(timer=Clock())
    callers = 100
    arrived = 0
    everyone_in = anyio.Event()
    loads = 0
    results: list[str] = []

    async def slow_load() -> str:
        nonlocal loads
        loads += 1
        await everyone_in.wait()  # hold the load open until every caller has asked
        await anyio.wait_all_tasks_blocked()  # ... and is parked waiting for this load
        return "shared"

    async def caller() -> None:
        nonlocal arrived
        arrived += 1
        if arrived == callers:
            everyone_in.set()
        results.append(await cache.get("k", slow_load, ttl_s=10))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            for _ in range(callers):
                tg.start_soon(caller)
    assert loads == 1
    assert results == ["shared"] * callers


async def test_concurrent_gets_share_a_failing_load_instead_of_each_retrying() -> None:
    cache = SharedCache(timer=Clock())
    release = anyio.Event()
    loads = 0
    errors: list[Exception] = []

    async def failing_load() -> str:
        nonlocal loads
        loads += 1
        await release.wait()
        raise ConnectionError("downstream is down")

    async def caller() -> None:
        try:
            await cache.get("k", failing_load, ttl_s=10)
        except ConnectionError as exc:
            errors.append(exc)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            for _ in range(20):
                tg.start_soon(caller)
            await anyio.wait_all_tasks_blocked()
            release.set()
    assert loads == 1
    assert len(errors) == 20


async def test_failing_reload_serves_the_stale_value_and_logs_once(caplog: pytest.LogCaptureFixture) -> None:
    clock, load = Clock(), Loader()
    cache = SharedCache(timer=clock)
    assert await cache.get("k", load, ttl_s=10) == "v1"
    clock.now += 11
    load.fail = ConnectionError("downstream is down")
    with caplog.at_level(logging.WARNING, logger="gateway.store.cache"):
        assert await cache.get("k", load, ttl_s=10) == "v1"
        assert await cache.get("k", load, ttl_s=10) == "v1"
        assert await cache.get("k", load, ttl_s=10) == "v1"
    assert load.calls == 4  # still stale, so every get tries again
    warnings = [r for r in caplog.records if r.name == "gateway.store.cache"]
    assert len(warnings) == 1
    assert "downstream is down" in warnings[0].getMessage() and "stale" in warnings[0].getMessage()


async def test_a_new_failure_after_a_recovery_is_logged_again(caplog: pytest.LogCaptureFixture) -> None:
    clock, load = Clock(), Loader()
    cache = SharedCache(timer=clock)
    await cache.get("k", load, ttl_s=10)
    with caplog.at_level(logging.WARNING, logger="gateway.store.cache"):
        for fail in (ConnectionError("first outage"), None, ConnectionError("second outage")):
            clock.now += 11
            load.fail = fail
            await cache.get("k", load, ttl_s=10)
    messages = [r.getMessage() for r in caplog.records if r.name == "gateway.store.cache"]
    assert len(messages) == 2
    assert "first outage" in messages[0] and "second outage" in messages[1]


async def test_failing_load_with_nothing_cached_raises() -> None:
    load = Loader()
    load.fail = ConnectionError("never worked")
    cache = SharedCache(timer=Clock())
    with pytest.raises(ConnectionError, match="never worked"):
        await cache.get("k", load, ttl_s=10)
    assert cache.peek("k") is None
    load.fail = None
    assert await cache.get("k", load, ttl_s=10) == "v2"  # the failure was not cached


async def test_invalidate_forces_a_reload_of_a_fresh_value() -> None:
    load = Loader()
    cache = SharedCache(timer=Clock())
    assert await cache.get("k", load, ttl_s=300) == "v1"
    cache.invalidate("k")
    assert not cache.is_fresh("k")
    assert cache.peek("k") == "v1"
    assert await cache.get("k", load, ttl_s=300) == "v2"
    assert await cache.get("k", load, ttl_s=300) == "v2"


async def test_invalidate_during_a_load_makes_the_next_get_reload() -> None:
    # A list_changed can arrive while a listing is being fetched; the fetched list may predate it.
    cache = SharedCache(timer=Clock())
    started, release = anyio.Event(), anyio.Event()
    loads = 0

    async def load() -> str:
        nonlocal loads
        loads += 1
        if loads == 1:
            started.set()
            await release.wait()
            return "before the change"
        return "after the change"

    first: list[str] = []

    async def get_first() -> None:
        first.append(await cache.get("k", load, ttl_s=300))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(get_first)
            await started.wait()
            cache.invalidate("k")
            # A caller arriving after the change does not join the outdated load.
            assert await cache.get("k", load, ttl_s=300) == "after the change"
            release.set()
    assert first == ["before the change"]
    assert await cache.get("k", load, ttl_s=300) == "after the change"
    assert loads == 2


async def test_a_cancelled_load_lets_a_waiting_caller_load_instead() -> None:
    cache = SharedCache(timer=Clock())
    started = anyio.Event()
    got: list[str] = []

    async def hanging_load() -> str:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def quick_load() -> str:
        return "loaded by the waiter"

    async def owner(scope: anyio.CancelScope) -> None:
        with scope:
            await cache.get("k", hanging_load, ttl_s=10)

    async def waiter() -> None:
        got.append(await cache.get("k", quick_load, ttl_s=10))

    scope = anyio.CancelScope()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(owner, scope)
            await started.wait()
            tg.start_soon(waiter)
            await anyio.wait_all_tasks_blocked()  # the waiter is parked on the owner's load
            scope.cancel()
    assert got == ["loaded by the waiter"]


async def test_generation_moves_when_a_value_is_stored_or_invalidated_not_when_read() -> None:
    clock, load = Clock(), Loader()
    cache = SharedCache(timer=clock)
    start = cache.generation
    await cache.get("k", load, ttl_s=10)
    stored = cache.generation
    assert stored != start
    assert cache.expires_at("k") == clock.now + 10
    await cache.get("k", load, ttl_s=10)
    assert cache.peek("k") == "v1" and cache.generation == stored
    cache.invalidate("k")
    assert cache.generation != stored and cache.expires_at("k") == float("-inf")
    assert cache.expires_at("never stored") == float("-inf")
