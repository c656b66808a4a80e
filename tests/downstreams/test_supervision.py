"""One downstream's connection kept up (`Supervised`, seen through `Downstream`): up, down with the reason, restarted
after a crash with the next call served, and closed with calls in flight given their drain time. Real servers: the
kitchen as a stdio subprocess, or in process behind a real `Client`."""

import sys
from typing import Any

import anyio
import mcp.types as types
import pytest
from pydantic import TypeAdapter

import adapters
from gateway.config import ServerConfig
from gateway.downstreams.downstream import Downstream
from gateway.downstreams.state import State
from gateway.downstreams.supervision import Target
from gateway.errors import DownstreamFailed, DownstreamUnavailable
from tests.harness import kitchen, pid_alive, text_of, wait_for
from tests.servers.kitchen import Kitchen

pytestmark = pytest.mark.anyio

QUICK = (0.05, 0.2)  # restart backoff (first, most): a test does not wait seconds for a retry


def stdio(**entry: Any) -> Target:
    config = TypeAdapter(ServerConfig).validate_python(entry)
    return adapters.target(config, max_message_bytes=1_000_000)


async def test_a_server_comes_up_and_serves_calls() -> None:
    async with Downstream("k", lambda: stdio(**kitchen("k"))).running() as ds:
        with anyio.fail_after(20):
            await ds.settled()
            assert (ds.state, ds.last_error, ds.restarts) == (State.UP, None, 0)
            result = await ds.call_tool("echo", {"text": "hi"})
    assert isinstance(result, types.CallToolResult) and text_of(result) == "hi"


async def test_a_server_that_cannot_start_is_down_and_a_call_is_told_why_at_once() -> None:
    def missing() -> Target:
        raise FileNotFoundError("no such program: nowhere-mcp")

    async with Downstream("gone", missing, backoff=(30.0, 30.0)).running() as ds:
        with anyio.fail_after(10):
            await ds.settled()
            assert ds.state is State.DOWN
            assert ds.last_error is not None and "nowhere-mcp" in ds.last_error
            with pytest.raises(DownstreamUnavailable, match=r"'gone' is down .*Last error: .*nowhere-mcp"):
                await ds.call_tool("echo", {"text": "hi"})


async def test_a_server_that_never_answers_its_handshake_is_down_after_connect_timeout_s() -> None:
    silent = {"transport": "stdio", "command": sys.executable, "args": ["-c", "import time; time.sleep(60)"]}
    async with Downstream("mute", lambda: stdio(**silent), connect_timeout_s=0.5, backoff=(30.0, 30.0)).running() as ds:
        with anyio.fail_after(20):
            await ds.settled()
    assert ds.state is State.DOWN
    assert ds.last_error == "no handshake within 0.5 s (connect_timeout_s)"


async def test_a_crashed_server_is_restarted_and_the_next_call_is_served_by_the_new_process() -> None:
    async with Downstream("k", lambda: stdio(**kitchen("k")), backoff=QUICK).running() as ds:
        with anyio.fail_after(30):
            await ds.settled()
            first = text_of(await ds.call_tool("pid", {}))  # type: ignore[arg-type]
            with pytest.raises(DownstreamFailed, match="the connection was lost during the call"):
                await ds.call_tool("crash", {})
            # Restarting, not down: the call waits for the new connection instead of failing.
            second = text_of(await ds.call_tool("pid", {}))  # type: ignore[arg-type]
    assert second != first
    assert ds.restarts >= 1


async def test_close_lets_a_call_in_flight_finish_within_its_drain_time() -> None:
    async with Downstream("k", lambda: Kitchen("k", None, 0, []).server).running() as ds:
        with anyio.fail_after(20):
            await ds.settled()
            results: list[Any] = []

            async def call() -> None:
                results.append(await ds.call_tool("slow", {"steps": 3, "delay_s": 0.05}))

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await anyio.wait_all_tasks_blocked()  # the call is in flight
                await ds.close(drain_s=10)
    assert len(results) == 1 and not results[0].is_error


async def test_close_cuts_a_call_that_outlasts_the_drain_and_the_caller_is_told() -> None:
    async with Downstream("k", lambda: stdio(**kitchen("k"))).running() as ds:
        with anyio.fail_after(20):
            await ds.settled()
            failed: list[Exception] = []

            async def call() -> None:
                try:
                    await ds.call_tool("hang", {})
                except Exception as exc:  # noqa: BLE001 -- what the caller is told is the point
                    failed.append(exc)

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await anyio.wait_all_tasks_blocked()
                await ds.close(drain_s=0.1)
    assert len(failed) == 1 and "'k'" in str(failed[0])


async def test_leaving_running_ends_the_server_and_its_whole_process_group() -> None:
    async with Downstream("k", lambda: stdio(**kitchen("k"))).running() as ds:
        with anyio.fail_after(20):
            await ds.settled()
            server = int(text_of(await ds.call_tool("pid", {})))  # type: ignore[arg-type]
            grandchild = int(text_of(await ds.call_tool("spawn_child", {})))  # type: ignore[arg-type]
            assert pid_alive(server) and pid_alive(grandchild)
    assert ds.state is not State.UP
    with anyio.fail_after(20):
        await wait_for(lambda: not pid_alive(server) and not pid_alive(grandchild), what="the process group to end")
