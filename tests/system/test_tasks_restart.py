"""A task whose gateway process dies ends `failed`, instead of staying `working` until its ttl (a day at most) with
`tasks/result` waiting all that time: a real HTTP gateway, killed (SIGKILL, as a crash or an OOM kill) while a
task runs, restarted on the same state folder (local backend) or the same Redis; the heartbeat is set short
(`limits.task_heartbeat_s`), so the lapse passes within the restart.

Proven on both backends: after the restart `tasks/result` answers at once with the failure (saying the process
running the task stopped and the call must be made again), `tasks/get` and `tasks/list` say `failed` with that
message; the restarted gateway runs new tasks as usual.
"""

import os
import signal
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from anyio.abc import Process
from mcp import MCPError

from tests.fronts.test_tasks import as_task, send, tasked
from tests.harness import ROOT, free_port, http_client, stop, write_config
from tests.services import redis_server

pytestmark = pytest.mark.anyio

HEARTBEAT_S = 0.2
"""The test's heartbeat: the mark lapses 6 beats (1.2 s) after the last one, well within a gateway's restart."""
STOPPED = "the gateway process running this task stopped"


@asynccontextmanager
async def gateway_process(config: Path) -> AsyncIterator[tuple[str, Process]]:
    """`gateway serve --http` as a subprocess: its base URL once /healthz answers, and the process (to kill)."""
    base = f"http://127.0.0.1:{free_port()}"
    argv = [sys.executable, "-m", "gateway", "serve", "--config", str(config), "--http", base.removeprefix("http://")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = await anyio.open_process([*argv, "--log-level", "WARNING"], stdout=None, stderr=None, cwd=ROOT, env=env)
    try:
        async with httpx2.AsyncClient() as http:
            with anyio.fail_after(30):
                while True:  # another process's socket offers no event to wait on
                    assert process.returncode is None, f"the gateway exited with {process.returncode}"
                    try:
                        if (await http.get(f"{base}/healthz")).status_code in (200, 503):
                            break
                    except httpx2.HTTPError:
                        pass
                    await anyio.sleep(0.05)
        yield base, process
    finally:
        await stop(process)


@contextmanager
def backend(kind: str, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """The config's store section: files under the test's folder, or a Redis of the test's own."""
    if kind == "local":
        yield {"backend": "local"}
        return
    with redis_server(tmp_path / "redis") as redis:
        yield {"backend": "redis", "url": redis.url, "prefix": "restart:"}


@pytest.mark.parametrize("kind", ["local", "redis"])
async def test_a_task_whose_gateway_was_killed_fails_at_once_after_the_restart_saying_so(
    kind: str, tmp_path: Path
) -> None:
    with backend(kind, tmp_path) as store:
        config = write_config(
            tmp_path,
            {"t": tasked()},
            store=store,
            think={"state_dir": str(tmp_path / "state")},
            limits={"task_heartbeat_s": HEARTBEAT_S},
        )
        async with gateway_process(config) as (url, process), http_client(url, mode="legacy") as client:
            tid = (await as_task(client, "t.hold", {"key": "k"}))["taskId"]  # held downstream: it runs on
            assert (await send(client, "tasks/get", {"taskId": tid}))["status"] == "working"
            process.send_signal(signal.SIGKILL)
            await process.wait()
        async with gateway_process(config) as (url, _), http_client(url, mode="legacy") as client:
            with anyio.fail_after(5):  # at most the rest of the lapse and one poll; the task's ttl is a minute
                with pytest.raises(MCPError, match=f"Task '{tid}' failed and has no result: {STOPPED}.*call again"):
                    await send(client, "tasks/result", {"taskId": tid})
            got = await send(client, "tasks/get", {"taskId": tid})
            assert got["status"] == "failed" and got["statusMessage"].startswith(STOPPED), got
            assert [(t["taskId"], t["status"]) for t in (await send(client, "tasks/list", {}))["tasks"]] == [
                (tid, "failed")
            ]
            alive = (await as_task(client, "t.hold", {"key": "a"}))["taskId"]
            with anyio.fail_after(10):
                await client.call_tool("t.release", {"key": "a"})
                result = await send(client, "tasks/result", {"taskId": alive})
            assert result["content"][0]["text"] == "held a released"
