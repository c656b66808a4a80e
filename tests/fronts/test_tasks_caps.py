"""The caps on each identity's tasks (`limits.task_max_running`, `limits.task_max_kept`), through real clients of
the in-process front and the task-speaking stdio server: a 2025-11-25 task-augmented call past a cap is refused
(-32602) naming the cap, the count and what to do, and nothing runs downstream; a task that ends frees a place; a
reload changes the caps for the next task; a 2026-era call that outlasts `task_after_s` past the cap stays a plain
call and gets its result."""

import logging
from pathlib import Path

import anyio
import mcp.types as types
import pytest
import yaml
from mcp import Client, MCPError
from mcp.client import advertise

from gateway.app.gateway import Gateway
from gateway.config import load_config
from gateway.fronts.tasks_offer import EXTENSION
from tests.fronts.test_tasks import as_task, send, tasked
from tests.harness import write_config

pytestmark = pytest.mark.anyio


def events(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


async def test_a_task_past_the_running_cap_is_refused_saying_what_to_do_and_runs_nothing(tmp_path: Path) -> None:
    log = tmp_path / "events"
    limits = {"task_max_running": 2}
    config = write_config(tmp_path, {"t": tasked(log)}, think={"state_dir": str(tmp_path / "s")}, limits=limits)
    gateway = Gateway(load_config(config), config_path=config)
    with anyio.fail_after(60):
        async with gateway.running(), Client(gateway.front.server, mode="legacy") as c:
            first = await as_task(c, "t.hold", {"key": "a"})
            await as_task(c, "t.hold", {"key": "b"})
            with pytest.raises(MCPError) as refused:
                await as_task(c, "t.hold", {"key": "never"})
            error = refused.value.error
            assert error.code == types.INVALID_PARAMS
            assert "2 tasks running" in error.message and "limits.task_max_running: 2" in error.message
            assert "tasks/cancel" in error.message and "not started" in error.message

            await c.call_tool("t.release", {"key": "a"})
            await send(c, "tasks/result", {"taskId": first["taskId"]})  # it ended: a place again
            started = [await as_task(c, "t.hold", {"key": "c"})]
            with pytest.raises(MCPError, match=r"limits\.task_max_running: 2"):
                await as_task(c, "t.hold", {"key": "never"})

            config.write_text(yaml.safe_dump({**yaml.safe_load(config.read_text()), "limits": {"task_max_running": 3}}))
            assert gateway.reloader is not None
            report = await gateway.reloader.reload()
            assert report.ok and "limits.task_max_running" in report.as_dict()["applied"], report.as_dict()
            started.append(await as_task(c, "t.hold", {"key": "d"}))  # the reloaded cap: three running
            for key in "bcd":
                await c.call_tool("t.release", {"key": key})
            for task in started:
                assert (await send(c, "tasks/result", {"taskId": task["taskId"]}))["content"]
    held = [e for e in events(log) if e.startswith("call hold")]
    assert held == ["call hold plain"] * 4  # a, b, c, d: "never" never reached the server


async def test_a_2026_call_that_outlasts_the_wait_past_the_cap_stays_a_plain_call(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    limits = {"task_after_s": 0, "task_max_running": 1}
    config = write_config(tmp_path, {"t": tasked()}, think={"state_dir": str(tmp_path / "s")}, limits=limits)
    gateway = Gateway(load_config(config))
    caplog.set_level(logging.INFO, "gateway.fronts.tasks")
    with anyio.fail_after(60):
        async with (
            gateway.running(),
            Client(gateway.front.server, mode="auto", extensions=[advertise(EXTENSION, {})]) as client,
            Client(gateway.front.server, mode="auto") as plain,
        ):
            task = await send(client, "tools/call", {"name": "t.hold", "arguments": {"key": "x"}})
            assert task["resultType"] == "task"
            await plain.call_tool("t.release", {"key": "y"})  # its hold ends once it runs: after the 0 s wait
            answer = await send(client, "tools/call", {"name": "t.hold", "arguments": {"key": "y"}})
            await plain.call_tool("t.release", {"key": "x"})
    assert answer["resultType"] == "complete" and answer["content"] == [{"type": "text", "text": "held y released"}]
    assert any("stays a plain call" in r.getMessage() and "1 tasks running" in r.getMessage() for r in caplog.records)
