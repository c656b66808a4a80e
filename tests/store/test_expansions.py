"""Requests learned from use (`gateway.store.base.LearnedExpansions`), on both backends: most recent first, a repeat
moves to the front, bounded per tool and per catalog, removable one by one or whole, shared by two replicas."""

from pathlib import Path

import pytest

from gateway.store.backends import open_stores
from gateway.store.expansions import LearnedExpansions
from gateway.store.local.expansions import LocalExpansions
from gateway.store.redis.client import Breaker
from gateway.store.redis.expansions import RedisExpansions
from tests.services import RedisServer, store_config
from tests.store.conftest import Backend

pytestmark = pytest.mark.anyio


async def test_learned_requests_come_back_most_recent_first_and_a_repeat_moves_to_the_front(backend: Backend) -> None:
    stores = backend.open()
    learned = stores.expansions
    await learned.add("jira.jira_assign_issue", "hand this ticket to bob")
    await learned.add("jira.jira_assign_issue", "give the bug to alice")
    await learned.add("jira.jira_assign_issue", "hand this ticket to bob")
    await learned.add("git.git_log", "what changed lately")
    assert await learned.all() == {
        "jira.jira_assign_issue": ["hand this ticket to bob", "give the bug to alice"],
        "git.git_log": ["what changed lately"],
    }
    await stores.aclose()


async def test_learned_requests_are_bounded_per_tool_and_per_catalog(backend: Backend) -> None:
    stores = backend.open()
    learned: LearnedExpansions = (
        LocalExpansions(per_tool=2, tools=2)
        if backend.name == "local"
        else RedisExpansions(stores.redis, backend.prefix, "", breaker=Breaker(""), per_tool=2, tools=2)
    )
    for request in ("one", "two", "three"):
        await learned.add("k.a", request)
    await learned.add("k.b", "bee")
    await learned.add("k.c", "sea")  # a third tool: the least recently taught (k.a) goes
    assert await learned.all() == {"k.b": ["bee"], "k.c": ["sea"]}
    await learned.add("k.b", "bee two")
    await learned.add("k.b", "bee three")
    assert (await learned.all())["k.b"] == ["bee three", "bee two"]
    await stores.aclose()


async def test_a_learned_request_or_a_whole_tool_can_be_removed(backend: Backend) -> None:
    stores = backend.open()
    learned = stores.expansions
    await learned.add("k.a", "first")
    await learned.add("k.a", "second")
    await learned.add("k.b", "bee")
    assert await learned.remove("k.a", "first") is True
    assert await learned.remove("k.a", "never taught") is False
    assert await learned.remove("k.b") is True
    assert await learned.remove("k.b") is False
    assert await learned.all() == {"k.a": ["second"]}
    assert await learned.remove("k.a", "second") is True
    assert await learned.all() == {}
    await stores.aclose()


async def test_two_replicas_on_redis_share_what_either_learned(redis: RedisServer, tmp_path: Path) -> None:
    one, two = (open_stores(store_config("redis", redis.url, "shared:", tmp_path)) for _ in range(2))
    await one.expansions.add("k.a", "taught on replica one")
    assert await two.expansions.all() == {"k.a": ["taught on replica one"]}
    await two.expansions.remove("k.a")
    assert await one.expansions.all() == {}
    await one.aclose()
    await two.aclose()
