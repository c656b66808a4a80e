"""Durable tasks on both backends: a record is its owner's alone, the first terminal status wins (a completion after
a cancellation changes nothing, across replicas), listing shows the owner's live tasks, a task is forgotten
when its ttl has passed, and an id the gateway never mints reaches no file and no key."""

import json
import shutil
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from gateway.store.base import StoreUnavailable
from gateway.store.tasks import TaskCaps, TaskRecords
from tests.store.conftest import Backend

pytestmark = pytest.mark.anyio

ROOMY = TaskCaps(running=100, kept=100)
"""Caps no test reaches but the ones about caps."""


@asynccontextmanager
async def opened(backend: Backend) -> AsyncIterator[TaskRecords]:
    """The backend's task records, as one replica opens them (closed after)."""
    stores = backend.open()
    try:
        yield stores.tasks
    finally:
        await stores.aclose()


def task(task_id: str, status: str = "working") -> dict[str, Any]:
    return {"taskId": task_id, "status": status, "createdAt": "2026-11-25T00:00:00Z", "ttl": 60_000}


async def test_a_task_is_its_owners_alone(backend: Backend) -> None:
    async with opened(backend) as tasks:
        await tasks.create("alice", "t1", task("t1"), 60, alive_s=60, caps=ROOMY)
        assert (await tasks.get("alice", "t1") or {})["status"] == "working"
        assert await tasks.get("bob", "t1") is None
        assert await tasks.settle("bob", "t1", task("t1", "cancelled")) is None
        assert [r["taskId"] for r in await tasks.list("alice")] == ["t1"]
        assert await tasks.list("bob") == []


async def test_the_first_terminal_status_wins_across_replicas(backend: Backend) -> None:
    async with opened(backend) as tasks, opened(backend) as other_replica:
        await tasks.create("alice", "t2", task("t2"), 60, alive_s=60, caps=ROOMY)
        cancelled = await other_replica.settle("alice", "t2", task("t2", "cancelled"))
        assert cancelled is not None and cancelled["status"] == "cancelled"
        late = await tasks.settle("alice", "t2", {**task("t2", "completed"), "result": {"content": []}})
        assert late is not None and late["status"] == "cancelled" and "result" not in late
        assert (await tasks.get("alice", "t2") or {})["status"] == "cancelled"


async def test_a_task_is_forgotten_when_its_ttl_has_passed(backend: Backend) -> None:
    async with opened(backend) as tasks:
        await tasks.create("alice", "t3", task("t3"), 0.05, alive_s=60, caps=ROOMY)
        await tasks.create("alice", "t4", task("t4"), 60, alive_s=60, caps=ROOMY)
        await anyio.sleep(0.1)  # the ttl is the clock itself: there is no event to wait on
        assert await tasks.get("alice", "t3") is None
        assert await tasks.settle("alice", "t3", task("t3", "completed")) is None
        assert [r["taskId"] for r in await tasks.list("alice")] == ["t4"]
        if backend.name == "local":  # nothing left on disk either
            assert sorted(p.name.split("~")[1] for p in (backend.folder / "state" / ".tasks").glob("*.json")) == [
                "t4.json"
            ]


def failed(record: dict[str, Any]) -> dict[str, Any]:
    return {**record, "status": "failed", "statusMessage": "its runner stopped"}


async def test_a_task_whose_mark_lapsed_is_reaped_once_and_every_replica_reads_the_same(backend: Backend) -> None:
    async with opened(backend) as tasks, opened(backend) as other_replica:
        await tasks.create("alice", "gone", task("gone"), 60, alive_s=0.05, caps=ROOMY)
        await tasks.create("alice", "beating", task("beating"), 60, alive_s=0.05, caps=ROOMY)
        await tasks.beat([("alice", "beating")], 60)
        await anyio.sleep(0.1)  # the lapse is the clock itself: there is no event to wait on
        reaped = await other_replica.reap("alice", "gone", failed(task("gone")))
        assert reaped is not None and reaped["status"] == "failed"
        again = await tasks.reap("alice", "gone", {**failed(task("gone")), "statusMessage": "second"})
        assert again is not None and again["statusMessage"] == "its runner stopped"  # written once
        late = await tasks.settle("alice", "gone", {**task("gone", "completed"), "result": {"content": []}})
        assert late is not None and late["status"] == "failed" and "result" not in late  # the first terminal wins
        alive = await other_replica.reap("alice", "beating", failed(task("beating")))
        assert alive is not None and alive["status"] == "working"  # its runner's beat moved the mark on
        assert await tasks.reap("bob", "beating", failed(task("beating"))) is None  # another's: unknown


async def test_a_terminal_task_is_never_reaped(backend: Backend) -> None:
    async with opened(backend) as tasks:
        await tasks.create("alice", "done", task("done"), 60, alive_s=0.05, caps=ROOMY)
        await tasks.settle("alice", "done", {**task("done", "completed"), "result": {"content": []}})
        await anyio.sleep(0.1)  # the lapse is the clock itself
        kept = await tasks.reap("alice", "done", failed(task("done")))
        assert kept is not None and kept["status"] == "completed" and "result" in kept


async def test_a_record_stored_before_liveness_marks_existed_is_never_reaped(backend: Backend) -> None:
    """What a gateway of the version before stored (still running, maybe, on a replica not yet upgraded)."""
    stores = backend.open()
    try:
        old = {**task("old"), "expires": time.time() + 60}
        if backend.name == "local":
            (backend.folder / "state" / ".tasks").mkdir(parents=True)
            (backend.folder / "state" / ".tasks" / "alice~old.json").write_text(json.dumps(old))
        else:
            await stores.redis.set(f"{backend.prefix}task:alice~old", json.dumps(task("old")), ex=60)
        kept = await stores.tasks.reap("alice", "old", failed(task("old")))
        assert kept is not None and kept["status"] == "working"
    finally:
        await stores.aclose()


ODD_IDS = ["x" * 5000, "real.json/x", "../real", "real\x00", "", "real/", "ré"]
"""Task ids a client may send that the gateway never mints: too long for a file name, a path, a NUL, none."""


def _calls(info: dict[str, Any]) -> dict[str, int]:
    """The calls of each Redis command so far, but `info` (the one asking)."""
    return {k: v["calls"] for k, v in info.items() if k.startswith("cmdstat_") and k != "cmdstat_info"}


async def test_an_id_the_gateway_never_mints_is_unknown_and_reaches_no_file_or_key(backend: Backend) -> None:
    stores = backend.open()
    try:
        tasks = stores.tasks
        await tasks.create("alice", "real", task("real"), 60, alive_s=60, caps=ROOMY)
        files = sorted(backend.folder.rglob("*"))
        before = _calls(await stores.redis.info("commandstats")) if stores.redis is not None else {}
        for odd in ODD_IDS:
            assert await tasks.get("alice", odd) is None
            assert await tasks.settle("alice", odd, task(odd, "cancelled")) is None
            assert await tasks.reap("alice", odd, failed(task(odd))) is None
        if stores.redis is not None:  # not one command was sent with them
            assert _calls(await stores.redis.info("commandstats")) == before
        assert sorted(backend.folder.rglob("*")) == files
        assert [r["status"] for r in await tasks.list("alice")] == ["working"]
    finally:
        await stores.aclose()


async def test_a_local_task_folder_that_fails_is_the_store_unavailable_without_its_path(tmp_path: Path) -> None:
    backend = Backend("local", "", "t:", tmp_path)
    async with opened(backend) as tasks:
        await tasks.create("alice", "t1", task("t1"), 60, alive_s=60, caps=ROOMY)
        folder = tmp_path / "state" / ".tasks"
        shutil.rmtree(folder)
        folder.write_text("not a folder")  # what a broken state folder, a full disk or a lost permission give: OSError
        attempts: list[Callable[[], Awaitable[Any]]] = [
            lambda: tasks.get("alice", "t1"),
            lambda: tasks.settle("alice", "t1", task("t1", "cancelled")),
            lambda: tasks.reap("alice", "t1", failed(task("t1"))),
            lambda: tasks.create("alice", "t2", task("t2"), 60, alive_s=60, caps=ROOMY),
        ]
        for attempt in attempts:
            with pytest.raises(StoreUnavailable) as refused:
                await attempt()
            message = str(refused.value)
            assert "task records" in message and "think.state_dir" in message and str(tmp_path) not in message
