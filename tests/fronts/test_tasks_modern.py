"""The gateway's tasks for 2026-07-28 clients (the `io.modelcontextprotocol/tasks` extension, SEP-2663): the
gateway decides; a call of a client that declared the extension and is still running after `limits.task_after_s`
is answered with a task, `tasks/get` gives its result inline once done; a short call, or a client without the
extension, gets the plain result."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError
from mcp.client import advertise

from gateway.app.gateway import Gateway
from gateway.config import load_config
from gateway.fronts import tasks_alive
from gateway.fronts.tasks_offer import EXTENSION
from tests.fronts.test_tasks import send, tasked
from tests.fronts.test_tasks_alive import Refusing
from tests.harness import write_config

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def modern(tmp_path: Path, after_s: float, *, declared: bool = True) -> AsyncIterator[tuple[Client, Client]]:
    """A 2026-era client (declaring the tasks extension, or not) of a gateway with `task_after_s` = `after_s`, and
    one that never declares it (its calls are never tasks)."""
    config = write_config(
        tmp_path, {"t": tasked()}, think={"state_dir": str(tmp_path / "s")}, limits={"task_after_s": after_s}
    )
    gateway = Gateway(load_config(config))
    extensions = [advertise(EXTENSION, {})] if declared else None
    with anyio.fail_after(60):
        async with (
            gateway.running(),
            Client(gateway.front.server, mode="auto", extensions=extensions) as c,
            Client(gateway.front.server, mode="auto") as plain,
        ):
            assert c.protocol_version == "2026-07-28"
            yield c, plain


def bare(answer: dict[str, Any]) -> dict[str, Any]:
    """An answer without its `_meta` (the 2026 era stamps the server's identity there)."""
    return {k: v for k, v in answer.items() if k != "_meta"}


async def call(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return await send(client, "tools/call", {"name": name, "arguments": arguments})


async def test_a_call_still_running_after_the_wait_becomes_a_task_whose_result_comes_inline(tmp_path: Path) -> None:
    async with modern(tmp_path, 0) as (client, plain):
        assert EXTENSION in (client.server_capabilities.extensions or {})
        task = await call(client, "t.hold", {"key": "m"})
        assert task["resultType"] == "task" and task["status"] == "working"
        assert task["ttlMs"] == 3_600_000 and task["pollIntervalMs"] > 0 and "ttl" not in task
        got = await send(client, "tasks/get", {"taskId": task["taskId"]})
        assert got["status"] == "working" and got["resultType"] == "complete"
        acknowledged = await send(client, "tasks/update", {"taskId": task["taskId"], "inputResponses": {}})
        assert bare(acknowledged) == {"resultType": "complete"}
        assert not (await plain.call_tool("t.release", {"key": "m"})).is_error
        with anyio.fail_after(20):
            while got["status"] == "working":
                await anyio.sleep(got["pollIntervalMs"] / 1000)
                got = await send(client, "tasks/get", {"taskId": task["taskId"]})
    assert got["status"] == "completed"
    assert got["result"]["content"][0]["text"] == "held m released"


async def test_a_short_call_is_answered_plainly(tmp_path: Path) -> None:
    async with modern(tmp_path, 30) as (client, _):
        answer = await call(client, "t.big", {"n": 3})
    assert answer["resultType"] == "complete" and answer["content"][0]["text"] == "xxx"


async def test_a_client_without_the_extension_never_gets_a_task(tmp_path: Path) -> None:
    async with modern(tmp_path, 0, declared=False) as (client, _):
        answer = await call(client, "t.big", {"n": 3})
        with pytest.raises(MCPError, match="Method not found"):
            await send(client, "tasks/list", {})  # the handshake era's method
    assert answer["resultType"] == "complete" and answer["content"][0]["text"] == "xxx"


async def test_a_cancelled_task_is_acknowledged_and_cancelled(tmp_path: Path) -> None:
    async with modern(tmp_path, 0) as (client, _):
        task = await call(client, "t.hold", {"key": "never"})
        assert bare(await send(client, "tasks/cancel", {"taskId": task["taskId"]})) == {"resultType": "complete"}
        got = await send(client, "tasks/get", {"taskId": task["taskId"]})
    assert got["status"] == "cancelled" and "result" not in got


async def test_a_task_the_gateway_failed_carries_the_failure_as_its_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tasks_alive, "SETTLE_RETRIES_S", ())
    config = write_config(
        tmp_path, {"t": tasked()}, think={"state_dir": str(tmp_path / "s")}, limits={"task_after_s": 0}
    )
    gateway = Gateway(load_config(config))
    with anyio.fail_after(60):
        async with (
            gateway.running(),
            Client(gateway.front.server, mode="auto", extensions=[advertise(EXTENSION, {})]) as client,
            Client(gateway.front.server, mode="auto") as plain,
        ):
            gateway.tasks.records = Refusing(gateway.tasks.records, 1, results_only=True)
            task = await call(client, "t.hold", {"key": "f"})
            assert not (await plain.call_tool("t.release", {"key": "f"})).is_error
            got = task
            while got["status"] == "working":
                await anyio.sleep(task["pollIntervalMs"] / 1000)
                got = await send(client, "tasks/get", {"taskId": task["taskId"]})
    assert got["status"] == "failed" and "result" not in got
    assert "could not store its result" in got["error"]["message"] and got["error"]["code"] == -32603
