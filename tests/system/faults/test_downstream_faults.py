"""A misbehaving downstream (tests/servers/faulty.py) behind a real gateway: each fault fails fast and alone.

Every case bounds the call far below the server's `timeout_s` (60 s), so a fault that is only
noticed at the timeout fails the test, and checks that the next call on the same server works.
"""

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import mcp.types as types
import pytest
from mcp import Client

from tests.harness import gateway_params, text_of, write_config
from tests.system.faults.wire import call, faulty, gateway, status

pytestmark = pytest.mark.anyio


async def assert_serving(client: Client, pid: str | None = None) -> None:
    """The server answers the next call (on the same process when `pid` is given: no restart happened)."""
    with anyio.fail_after(20):
        echoed = await client.call_tool("f.echo", {"text": "next"})
    assert not echoed.is_error and text_of(echoed) == "next"
    if pid is not None:
        assert text_of(await call(client, "pid")) == pid


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def client(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Client]:
    """One gateway for the module: every test leaves the server serving (a restarted one counts as serving)."""
    directory = tmp_path_factory.mktemp("downstream-faults")
    async with gateway(directory, limits={"max_downstream_bytes": 1024 * 1024}) as client:
        yield client


# -- answers the gateway cannot use: failed at once, the connection kept ----------------------------


async def test_an_answer_over_max_message_bytes_fails_its_call_at_once_naming_the_size(client: Client) -> None:
    pid = text_of(await call(client, "pid"))
    result = await call(client, "oversized", {"n": 3 * 1024 * 1024})
    assert result.is_error and "max_message_bytes" in text_of(result) and "1,048,576" in text_of(result)
    await assert_serving(client, pid)


async def test_an_answer_just_under_max_message_bytes_is_delivered(client: Client) -> None:
    result = await call(client, "oversized", {"n": 1024 * 1024 - 200})
    assert not result.is_error


async def test_a_null_result_fails_its_call_at_once(client: Client) -> None:
    pid = text_of(await call(client, "pid"))
    result = await call(client, "null_result")
    assert result.is_error and "'f'" in text_of(result) and "not a valid answer" in text_of(result)
    await assert_serving(client, pid)


async def test_a_5000_deep_answer_fails_its_call_at_once(client: Client) -> None:
    pid = text_of(await call(client, "pid"))
    result = await call(client, "deep_result", {"depth": 5000})
    assert result.is_error and "not a valid answer" in text_of(result)
    await assert_serving(client, pid)


async def test_a_moderately_nested_answer_is_delivered(client: Client) -> None:
    assert not (await call(client, "deep_result", {"depth": 20})).is_error


async def test_a_garbage_line_or_a_stray_answer_before_the_real_one_is_dropped(client: Client) -> None:
    assert text_of(await call(client, "garbage_then_echo", {"text": "g"})) == "g"
    assert text_of(await call(client, "stray_then_echo", {"text": "s"})) == "s"


# -- error answers are answers: no restart, other calls unharmed ------------------------------------


async def test_a_server_error_32000_is_an_error_result_and_not_a_lost_connection(client: Client) -> None:
    pid = text_of(await call(client, "pid"))
    restarts = (await status(client))["f"]["restarts"]
    async with anyio.create_task_group() as tg:
        slow: list[types.CallToolResult] = []

        async def slow_call() -> None:
            slow.append(await call(client, "slow_echo", {"text": "survived", "delay_s": 1.0}))

        tg.start_soon(slow_call)
        failed = await call(client, "server_error")
    assert failed.is_error and "backend said no" in text_of(failed)
    assert not slow[0].is_error and text_of(slow[0]) == "survived"
    await assert_serving(client, pid)
    servers = await status(client)
    assert servers["f"]["state"] == "up" and servers["f"]["restarts"] == restarts


async def test_a_quick_32001_answer_is_the_servers_error_and_not_a_timeout(client: Client) -> None:
    result = await call(client, "server_error", {"code": -32001})
    assert (
        result.is_error and "backend said no (error -32001)" in text_of(result) and "timeout_s" not in text_of(result)
    )


async def test_an_is_error_result_passes_through_unchanged(client: Client) -> None:
    result = await call(client, "error_result")
    assert result.is_error and text_of(result) == "tool failed"


# -- a dead or deaf server: noticed at once, restarted, the next call works -------------------------


async def test_a_server_that_closes_stdout_but_stays_alive_fails_the_call_at_once_and_is_restarted(
    client: Client,
) -> None:
    pid = text_of(await call(client, "pid"))
    result = await call(client, "close_stdout")
    assert result.is_error and "connection was lost" in text_of(result)
    await assert_serving(client)
    assert text_of(await call(client, "pid")) != pid


async def test_a_server_that_exits_mid_call_fails_the_call_at_once_and_is_restarted(client: Client) -> None:
    result = await call(client, "exit")
    assert result.is_error and "connection was lost" in text_of(result)
    await assert_serving(client)


async def test_a_call_to_a_server_that_never_answers_ends_at_its_timeout(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"f": faulty(timeout_s=1)})
    async with Client(gateway_params(config), mode="legacy") as client:
        result = await call(client, "hang")
        assert result.is_error and "timeout_s" in text_of(result)
        await assert_serving(client)
