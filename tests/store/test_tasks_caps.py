"""The caps on each owner's tasks, on both backends: a task is stored only below the owner's running and kept caps
(`TaskCaps`), counted and stored as one step, so replicas creating at once never pass a cap; a task that finished,
or whose runner is gone, no longer counts as running; another owner's tasks never count."""

import re

import anyio
import pytest

from gateway.errors import TaskCapReached
from gateway.store.tasks import TaskCaps
from tests.store.conftest import Backend
from tests.store.test_tasks import failed, opened, task

pytestmark = pytest.mark.anyio


async def test_an_owner_at_its_running_cap_is_refused_naming_it_until_one_finishes(backend: Backend) -> None:
    caps = TaskCaps(running=2, kept=10)
    async with opened(backend) as tasks:
        for tid in ("r1", "r2"):
            await tasks.create("alice", tid, task(tid), 60, alive_s=60, caps=caps)
        with pytest.raises(TaskCapReached) as refused:
            await tasks.create("alice", "r3", task("r3"), 60, alive_s=60, caps=caps)
        assert (refused.value.kind, refused.value.count, refused.value.cap) == ("running", 2, 2)
        assert "2 tasks running" in str(refused.value) and "limits.task_max_running: 2" in str(refused.value)
        assert "tasks/cancel" in str(refused.value)
        assert await tasks.get("alice", "r3") is None  # nothing stored
        await tasks.create("bob", "r3", task("r3"), 60, alive_s=60, caps=caps)  # another owner's count
        await tasks.settle("alice", "r1", {**task("r1", "completed"), "result": {"content": []}})
        await tasks.create("alice", "r3", task("r3"), 60, alive_s=60, caps=caps)  # r1 finished: a place
        await tasks.settle("alice", "r2", task("r2", "cancelled"))
        await tasks.create("alice", "r4", task("r4"), 60, alive_s=60, caps=caps)  # r2 cancelled: a place


async def test_a_task_whose_runner_is_gone_no_longer_counts_as_running(backend: Backend) -> None:
    caps = TaskCaps(running=1, kept=10)
    async with opened(backend) as tasks:
        await tasks.create("alice", "gone", task("gone"), 60, alive_s=0.05, caps=caps)
        await anyio.sleep(0.1)  # the lapse is the clock itself: there is no event to wait on
        await tasks.create("alice", "next", task("next"), 60, alive_s=60, caps=caps)  # unreaped, yet not running
        reaped = await tasks.reap("alice", "gone", failed(task("gone")))
        assert reaped is not None and reaped["status"] == "failed"


async def test_an_owner_at_its_kept_cap_is_refused_saying_when_the_next_one_goes(backend: Backend) -> None:
    caps = TaskCaps(running=10, kept=2)
    async with opened(backend) as tasks:
        await tasks.create("alice", "k1", task("k1"), 600, alive_s=60, caps=caps)
        await tasks.settle("alice", "k1", {**task("k1", "completed"), "result": {"content": []}})
        await tasks.create("alice", "k2", task("k2"), 300, alive_s=60, caps=caps)
        with pytest.raises(TaskCapReached) as refused:
            await tasks.create("alice", "k3", task("k3"), 60, alive_s=60, caps=caps)
        assert (refused.value.kind, refused.value.count, refused.value.cap) == ("kept", 2, 2)
        message = str(refused.value)
        assert "2 tasks kept" in message and "limits.task_max_kept: 2" in message
        soonest = re.search(r"the next one goes in (\d+) s", message)
        assert soonest is not None and 240 <= int(soonest.group(1)) <= 300, message  # k2's 300 s, less time passed


async def test_replicas_creating_at_once_never_pass_the_cap(backend: Backend) -> None:
    caps = TaskCaps(running=5, kept=100)
    stored: list[str] = []
    refused: list[int] = []

    async with opened(backend) as one, opened(backend) as other:

        async def create(n: int) -> None:
            try:
                await (one, other)[n % 2].create("alice", f"c{n}", task(f"c{n}"), 60, alive_s=60, caps=caps)
                stored.append(f"c{n}")
            except TaskCapReached as exc:
                refused.append(exc.count)

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                for n in range(24):
                    tg.start_soon(create, n)
        assert len(stored) == 5 and refused == [5] * 19
        assert sorted(r["taskId"] for r in await other.list("alice")) == sorted(stored)
