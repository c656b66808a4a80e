"""The gateway's own durable tasks, through a real client of the in-process front and a real stdio server that has
no tasks for the tools called (tests/servers/tasked.py): a task-augmented `tools/call` is answered with a task at
once, runs on in the background, and its status and result are fetched with `tasks/get`, `tasks/result`,
`tasks/list`; `tasks/cancel` stops it; its result went through the pipeline (the size guard spilled it); the
connection that made it is told when it ends; a state folder that fails is the store unavailable, not a crash."""

import logging
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client, MCPError
from mcp.client.extension import ClientExtension, NotificationBinding

from gateway import sdk
from gateway.app.gateway import Gateway
from gateway.config import load_config
from tests.harness import ROOT, connected, gateway_params, hints_of, write_config

pytestmark = pytest.mark.anyio

TASKED = str(ROOT / "tests" / "servers" / "tasked.py")
RELATED = "io.modelcontextprotocol/related-task"


def tasked(events: Path | None = None) -> dict[str, Any]:
    """A stdio server entry running the task-speaking test server, on the handshake era: the one whose tasks it
    speaks (the SDK would also serve it 2026-07-28, where tasks are an extension it does not offer)."""
    extra = [] if events is None else ["--events-file", str(events)]
    return {"transport": "stdio", "command": sys.executable, "args": [TASKED, *extra], "protocol": "legacy"}


async def send(client: Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """One request as a task-capable client sends it (the SDK's client has the task types, not the methods)."""
    request = types.Request[dict[str, Any], str](method=method, params=params)
    return await sdk.send_unvalidated(client.session, request, timeout_s=30)


async def as_task(client: Client, name: str, arguments: dict[str, Any], ttl: int | None = 60_000) -> dict[str, Any]:
    answer = await send(client, "tools/call", {"name": name, "arguments": arguments, "task": {"ttl": ttl}})
    task: dict[str, Any] = answer["task"]
    return task


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[tuple[Gateway, Client]]:
    config = write_config(tmp_path, {"t": tasked(tmp_path / "events")}, think={"state_dir": str(tmp_path / "s")})
    async with connected(config) as (gateway, client):
        yield gateway, client


async def test_a_task_augmented_call_is_answered_at_once_and_its_result_fetched_when_the_call_ends(
    client: tuple[Gateway, Client],
) -> None:
    gateway, c = client
    assert c.protocol_version == "2025-11-25"
    declared = c.server_capabilities.tasks
    assert declared is not None and declared.requests is not None and declared.requests.tools is not None
    assert declared.list is not None and declared.cancel is not None
    listed = await c.list_tools()
    assert {t.execution.task_support for t in listed.tools if t.execution} == {"optional"}
    # Every downstream tool, whatever its server said ("required" for t.job); the gateway's own answer at once.
    own = ("gateway.", "think.", "prompt.")
    assert all(bool(t.execution) != t.name.startswith(own) for t in listed.tools)

    task = await as_task(c, "t.hold", {"key": "a"})  # answered while the call is held downstream
    assert task["status"] == "working" and task["ttl"] == 60_000 and task["pollInterval"] > 0
    got = await send(c, "tasks/get", {"taskId": task["taskId"]})
    assert got["status"] == "working" and got["taskId"] == task["taskId"]
    assert [t["taskId"] for t in (await send(c, "tasks/list", {}))["tasks"]] == [task["taskId"]]

    assert not (await c.call_tool("t.release", {"key": "a"})).is_error
    result = await send(c, "tasks/result", {"taskId": task["taskId"]})
    assert result["content"][0]["text"] == "held a released"
    assert result["_meta"][RELATED] == {"taskId": task["taskId"]}
    done = await send(c, "tasks/get", {"taskId": task["taskId"]})
    assert done["status"] == "completed" and "result" not in done
    assert len(gateway.tasks) == 0  # nothing kept in memory once it ended


async def test_a_cancelled_task_stops_its_call_and_has_no_result(client: tuple[Gateway, Client]) -> None:
    gateway, c = client
    task = await as_task(c, "t.hold", {"key": "never"})
    cancelled = await send(c, "tasks/cancel", {"taskId": task["taskId"]})
    assert cancelled["status"] == "cancelled"
    with pytest.raises(MCPError, match="was cancelled before it finished"):
        await send(c, "tasks/result", {"taskId": task["taskId"]})
    assert len(gateway.tasks) == 0  # answered once its call had stopped
    with pytest.raises(MCPError, match="already cancelled"):
        await send(c, "tasks/cancel", {"taskId": task["taskId"]})


async def test_an_unknown_task_is_not_found_and_says_what_to_do(client: tuple[Gateway, Client]) -> None:
    _, c = client
    for method in ("tasks/get", "tasks/result", "tasks/cancel"):
        with pytest.raises(MCPError, match=r"No task 'nope'.*tasks/list") as raised:
            await send(c, method, {"taskId": "nope"})
        assert raised.value.error.code == types.INVALID_PARAMS


async def test_a_task_result_passes_the_pipeline_an_oversized_one_is_spilled(client: tuple[Gateway, Client]) -> None:
    _, c = client
    task = await as_task(c, "t.big", {"n": 200_000}, ttl=None)
    assert task["ttl"] == 3_600_000  # no ttl asked: the default
    result = types.CallToolResult.model_validate(await send(c, "tasks/result", {"taskId": task["taskId"]}))
    assert sum(len(b.text) for b in result.content if isinstance(b, types.TextContent)) < 60_000
    assert any("read_output" in h for h in hints_of(result)), hints_of(result)


async def test_a_ttl_beyond_the_most_is_granted_the_most(client: tuple[Gateway, Client]) -> None:
    _, c = client
    task = await as_task(c, "t.big", {"n": 3}, ttl=10**12)
    assert task["ttl"] == 86_400_000
    result = await send(c, "tasks/result", {"taskId": task["taskId"]})
    assert result["content"][0]["text"] == "xxx"


class StatusNotices(ClientExtension):
    """A client that listens for `notifications/tasks/status` (the SDK has the type, not the binding)."""

    identifier = "com.example/task-status"

    def __init__(self) -> None:
        self.seen: list[types.TaskStatusNotificationParams] = []
        self.arrived = anyio.Event()

    def notifications(self) -> list[NotificationBinding[Any]]:
        return [
            NotificationBinding(
                method="notifications/tasks/status", params_type=types.TaskStatusNotificationParams, handler=self.on
            )
        ]

    async def on(self, params: types.TaskStatusNotificationParams) -> None:
        self.seen.append(params)
        self.arrived.set()


async def test_the_connection_that_made_a_task_hears_when_it_ends(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"t": tasked()}, think={"state_dir": str(tmp_path / "s")})
    gateway, notices = Gateway(load_config(config)), StatusNotices()
    with anyio.fail_after(60):
        async with gateway.running(), Client(gateway.front.server, mode="legacy", extensions=[notices]) as c:
            task = await as_task(c, "t.hold", {"key": "n"})
            assert not notices.seen  # nothing until it ends
            await c.call_tool("t.release", {"key": "n"})
            await notices.arrived.wait()
    assert [(n.task_id, n.status) for n in notices.seen] == [(task["taskId"], "completed")]


async def test_a_task_augmented_call_over_stdio_becomes_a_task_not_a_lane_call(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"t": tasked()}, think={"state_dir": str(tmp_path / "s")})
    with anyio.fail_after(60):
        async with Client(gateway_params(config), mode="legacy") as c:
            await c.call_tool("t.big", {"n": 1})  # the connection is known to the front: the lane serves plain calls
            task = await as_task(c, "t.hold", {"key": "s"})  # a lane would hold this request until released
            assert (await send(c, "tasks/get", {"taskId": task["taskId"]}))["status"] == "working"
            await c.call_tool("t.release", {"key": "s"})
            result = await send(c, "tasks/result", {"taskId": task["taskId"]})
    assert result["content"][0]["text"] == "held s released"


async def test_a_state_folder_that_fails_is_answered_as_the_store_unavailable_without_a_path_or_traceback(
    client: tuple[Gateway, Client], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _, c = client
    task = await as_task(c, "t.big", {"n": 1})
    await send(c, "tasks/result", {"taskId": task["taskId"]})
    folder = tmp_path / "s" / ".tasks"
    shutil.rmtree(folder)
    folder.write_text("not a folder")  # a broken state folder (a full disk, a lost permission: an OSError alike)
    caplog.clear()
    for method in ("tasks/get", "tasks/result", "tasks/cancel"):
        with pytest.raises(MCPError) as raised:
            await send(c, method, {"taskId": task["taskId"]})
        error = raised.value.error
        assert error.code == types.INTERNAL_ERROR and "store (the task records) is unavailable" in error.message
        assert str(tmp_path) not in error.message and "think.state_dir" in error.message
    with pytest.raises(MCPError, match="is unavailable"):
        await as_task(c, "t.big", {"n": 1})
    assert [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info] == []
