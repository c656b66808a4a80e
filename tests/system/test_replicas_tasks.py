"""The gateway's durable tasks across replicas: two HTTP gateways (real processes) on one Redis, each with its own
task-speaking stdio server, clients with static bearer tokens (alice, bob) over Streamable HTTP (2025-11-25).

Proven: a task started on replica A by a client that then disconnects is seen working and its result fetched from
replica B (which waits for A to finish it); another identity finds neither the task nor its result, on either
replica; a task cancelled on B is cancelled for A too; an identity sending many task calls to both replicas at
once gets exactly `limits.task_max_running` of them, the rest refused naming the cap, and another identity is
not held back by it.
"""

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import anyio
import pytest
from mcp import Client, MCPError

from tests.fronts.test_tasks import as_task, send, tasked
from tests.harness import http_client, http_gateways, write_config
from tests.services import redis_server

pytestmark = pytest.mark.anyio

TOKENS = {"alice": "alice-token-0123456789", "bob": "bob-token-0123456789ab"}
RUNNING = 3
"""Each identity's cap on running tasks, on both replicas together."""


@pytest.fixture
async def replicas(tmp_path: Path) -> AsyncIterator[list[str]]:
    with redis_server(tmp_path / "redis") as redis:
        auth = {"tokens": [{"name": name, "token": token} for name, token in TOKENS.items()]}
        store = {"backend": "redis", "url": redis.url, "prefix": "tasks:"}
        configs = []
        for n in range(2):
            folder = tmp_path / f"replica{n}"
            folder.mkdir()
            think = {"state_dir": str(folder / "state")}
            limits = {"task_max_running": RUNNING}
            configs.append(write_config(folder, {"t": tasked()}, auth=auth, store=store, think=think, limits=limits))
        async with http_gateways(*configs) as urls:
            yield urls


def client(url: str, who: str) -> AbstractAsyncContextManager[Client]:
    return http_client(url, mode="legacy", headers={"authorization": f"Bearer {TOKENS[who]}"})


async def test_a_task_started_on_one_replica_is_fetched_from_another_by_its_identity_only(
    replicas: list[str],
) -> None:
    a, b = replicas
    async with client(a, "alice") as alice_a:
        task = await as_task(alice_a, "t.hold", {"key": "k"})  # then alice disconnects
    tid = task["taskId"]
    async with client(b, "alice") as alice_b, client(b, "bob") as bob_b, client(a, "bob") as bob_a:
        assert (await send(alice_b, "tasks/get", {"taskId": tid}))["status"] == "working"
        assert [t["taskId"] for t in (await send(alice_b, "tasks/list", {}))["tasks"]] == [tid]
        assert (await send(bob_b, "tasks/list", {}))["tasks"] == []
        for bob in (bob_a, bob_b):
            for method in ("tasks/get", "tasks/result", "tasks/cancel"):
                with pytest.raises(MCPError, match=f"No task '{tid}'"):
                    await send(bob, method, {"taskId": tid})
        async with client(a, "alice") as alice_a:
            released = await alice_a.call_tool("t.release", {"key": "k"})  # A's server holds the call
        assert not released.is_error
        result = await send(alice_b, "tasks/result", {"taskId": tid})  # B waits for A to store it
        assert result["content"][0]["text"] == "held k released"
        assert (await send(alice_b, "tasks/get", {"taskId": tid}))["status"] == "completed"


async def test_a_task_cancelled_on_one_replica_is_cancelled_on_the_one_running_it(replicas: list[str]) -> None:
    a, b = replicas
    async with client(a, "alice") as alice_a, client(b, "alice") as alice_b:
        tid = (await as_task(alice_a, "t.hold", {"key": "c"}))["taskId"]
        assert (await send(alice_b, "tasks/cancel", {"taskId": tid}))["status"] == "cancelled"
        assert (await send(alice_a, "tasks/get", {"taskId": tid}))["status"] == "cancelled"
        with pytest.raises(MCPError, match="was cancelled before it finished"):
            await send(alice_a, "tasks/result", {"taskId": tid})
        await alice_a.call_tool("t.release", {"key": "c"})  # A's call ends; its result comes too late


async def test_many_task_calls_to_both_replicas_at_once_start_exactly_the_identitys_cap(replicas: list[str]) -> None:
    a, b = replicas
    started: list[tuple[Client, str]] = []
    refused: list[str] = []
    async with client(a, "alice") as alice_a, client(b, "alice") as alice_b, client(b, "bob") as bob_b:

        async def start(n: int) -> None:
            replica = (alice_a, alice_b)[n % 2]
            try:
                started.append((replica, (await as_task(replica, "t.hold", {"key": f"m{n}"}))["taskId"]))
            except MCPError as exc:
                refused.append(exc.error.message)

        async with anyio.create_task_group() as tg:
            for n in range(4 * RUNNING):
                tg.start_soon(start, n)
        assert len(started) == RUNNING and len(refused) == 3 * RUNNING
        assert all(f"{RUNNING} tasks running" in m and f"task_max_running: {RUNNING}" in m for m in refused), refused
        assert (await as_task(bob_b, "t.hold", {"key": "bob"}))["status"] == "working"  # alice's cap only
        for replica, tid in started:
            await send(replica, "tasks/cancel", {"taskId": tid})
        assert (await as_task(alice_b, "t.hold", {"key": "after"}))["status"] == "working"  # places again
