"""A task never stays `working` because its result could not be stored: through a real client of the in-process
front and the task-speaking stdio server, with the store refusing to settle (a Redis blip, a full disk), the
gateway stores the result again after a pause; refused every time, it stores the task `failed` saying why; refused
even that, the task's mark lapses and a reader fails it. `tasks/result` answers each within a bound."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError

from gateway.fronts import tasks_alive
from gateway.store.base import StoreUnavailable
from gateway.store.tasks import TaskRecords
from tests.fronts.test_tasks import as_task, send, tasked
from tests.harness import connected, write_config

pytestmark = pytest.mark.anyio


class Refusing:
    """The gateway's task store, refusing `refusals` settles (of a result only, with `results_only`)."""

    def __init__(self, records: TaskRecords, refusals: int, *, results_only: bool = False) -> None:
        self.records = records
        self.refusals = refusals
        self.results_only = results_only
        self.refused = 0
        self.first_refusal = anyio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.records, name)

    async def settle(self, owner: str, task_id: str, record: dict[str, Any]) -> dict[str, Any] | None:
        if self.refused < self.refusals and ("result" in record or not self.results_only):
            self.refused += 1
            self.first_refusal.set()
            raise StoreUnavailable("the test's store", "it refuses to settle")
        return await self.records.settle(owner, task_id, record)


@asynccontextmanager
async def refusing(
    tmp_path: Path, refusals: int, *, results_only: bool = False
) -> AsyncIterator[tuple[Client, Refusing]]:
    """A client of a gateway (heartbeat 50 ms) whose task store refuses settles as `Refusing` does."""
    state = {"state_dir": str(tmp_path / "s")}
    config = write_config(tmp_path, {"t": tasked()}, think=state, limits={"task_heartbeat_s": 0.05})
    async with connected(config) as (gateway, client):
        store = Refusing(gateway.tasks.records, refusals, results_only=results_only)
        gateway.tasks.records = store
        yield client, store


async def test_a_result_the_store_refused_once_is_stored_again(tmp_path: Path) -> None:
    async with refusing(tmp_path, 1) as (client, store):
        tid = (await as_task(client, "t.big", {"n": 3}))["taskId"]
        with anyio.fail_after(10):
            result = await send(client, "tasks/result", {"taskId": tid})
        assert result["content"][0]["text"] == "xxx" and store.refused == 1
        assert (await send(client, "tasks/get", {"taskId": tid}))["status"] == "completed"


async def test_a_task_whose_result_waits_to_be_stored_again_is_not_failed_by_a_reader_meanwhile(
    tmp_path: Path,
) -> None:
    """The reader asks only once the call has ended and the store refused its result, twice: the pauses before the
    next tries (0.5 s, 1 s) outlast the task's mark (6 beats of 50 ms) and a reader's look (every 0.5 s), and the
    task is alive all the same — its result is coming."""
    async with refusing(tmp_path, 2) as (client, store):
        tid = (await as_task(client, "t.hold", {"key": "m"}))["taskId"]
        await anyio.sleep(0.05 * 3)  # the clock itself: beats mark the task alive (a call shorter than one is not)
        assert not (await client.call_tool("t.release", {"key": "m"})).is_error
        with anyio.fail_after(10):
            await store.first_refusal.wait()
            result = await send(client, "tasks/result", {"taskId": tid})
        assert result["content"][0]["text"] == "held m released" and store.refused == 2


async def test_a_result_the_store_always_refuses_ends_the_task_failed_saying_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tasks_alive, "SETTLE_RETRIES_S", (0.0, 0.0))
    async with refusing(tmp_path, 10, results_only=True) as (client, store):
        tid = (await as_task(client, "t.big", {"n": 3}))["taskId"]
        with anyio.fail_after(10), pytest.raises(MCPError, match=r"could not store its result .*refuses to settle"):
            await send(client, "tasks/result", {"taskId": tid})
        assert store.refused == 3  # the first try and the two retries
        got = await send(client, "tasks/get", {"taskId": tid})
        assert got["status"] == "failed" and "Make the call again" in got["statusMessage"]


async def test_a_task_the_store_will_not_settle_at_all_fails_when_its_mark_lapses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tasks_alive, "SETTLE_RETRIES_S", ())
    async with refusing(tmp_path, 10) as (client, store):
        tid = (await as_task(client, "t.big", {"n": 3}))["taskId"]
        with anyio.fail_after(10), pytest.raises(MCPError, match=f"{tasks_alive.LAPSED[:40]}"):
            await send(client, "tasks/result", {"taskId": tid})  # 6 beats of 50 ms after its runner let go
        assert store.refused == 2  # the result, then its failure


async def test_a_task_running_in_another_gateway_on_the_same_state_folder_stays_working_while_it_beats(
    tmp_path: Path,
) -> None:
    """Two local gateways on one state folder (two stdio clients' gateways, the same user): the second one starting
    fails nothing of the first's, and reads its task `working` past the first mark's lapse, because it beats."""
    heartbeat_s = 0.5  # a lapse of 3 s: no beat of a loaded machine comes that late
    state = {"state_dir": str(tmp_path / "s")}
    config = write_config(tmp_path, {"t": tasked()}, think=state, limits={"task_heartbeat_s": heartbeat_s})
    async with connected(config) as (_, first):
        tid = (await as_task(first, "t.hold", {"key": "s"}))["taskId"]
        async with connected(config) as (_, second):
            assert (await send(second, "tasks/get", {"taskId": tid}))["status"] == "working"
            await anyio.sleep(heartbeat_s * (tasks_alive.LAPSE_BEATS + 1))  # past the first mark: the clock itself
            assert (await send(second, "tasks/get", {"taskId": tid}))["status"] == "working"
            assert not (await first.call_tool("t.release", {"key": "s"})).is_error
            with anyio.fail_after(10):
                result = await send(second, "tasks/result", {"taskId": tid})
    assert result["content"][0]["text"] == "held s released"
