"""The direct lane for `tools/call` over a stdio connection (`Lane`), beside the SDK session that owns it, against
the kitchen as a real subprocess: it answers as the session does, relays progress, ends a request past its time
limit with REQUEST_TIMEOUT and tells the server to stop, passes the server's errors on, and fails every waiting
request at once when the connection ends."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client, MCPError
from pydantic import TypeAdapter

import adapters
from adapters.lane import Lane
from adapters.link import opened
from gateway.config import ServerConfig
from tests.harness import kitchen, wait_for

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def connected(events: Path | None = None) -> AsyncIterator[tuple[Client, Lane]]:
    config = TypeAdapter(ServerConfig).validate_python(kitchen("k", events=events))
    async with adapters.target(config, max_message_bytes=1_000_000) as link:
        assert link.lane is not None
        async with Client(opened(link.streams), mode="legacy") as client:  # the session's handshake
            yield client, link.lane


class Within:
    """Due `seconds` from now; `later` moves it."""

    def __init__(self, seconds: float) -> None:
        self.at = anyio.current_time() + seconds

    def later(self, seconds: float) -> None:
        self.at = anyio.current_time() + seconds


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


async def test_a_lane_call_answers_as_the_session_does() -> None:
    with anyio.fail_after(30):
        async with connected() as (client, lane):
            by_lane = await lane.request("tools/call", call("measure", text="héllo"), due=Within(10))
            by_session = await client.call_tool("measure", {"text": "héllo"})
    expected = by_session.model_dump(by_alias=True, mode="json", exclude_none=True)
    assert types.CallToolResult.model_validate(by_lane).model_dump(by_alias=True, mode="json", exclude_none=True) == (
        expected
    )


async def test_progress_of_a_lane_call_reaches_its_caller_in_order() -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    with anyio.fail_after(30):
        async with connected() as (_, lane):
            await lane.request("tools/call", call("slow", steps=3, delay_s=0), due=Within(10), on_progress=on_progress)
    assert seen == [(1.0, 3.0, "step 1"), (2.0, 3.0, "step 2"), (3.0, 3.0, "step 3")]


async def test_a_call_whose_due_time_its_progress_moves_later_is_answered_past_its_first_limit() -> None:
    # Before: the lane held a fixed time limit, so a call kept alive by progress needed a cancel scope around it.

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        due.later(1.0)

    with anyio.fail_after(30):
        async with connected() as (_, lane):
            started, due = anyio.current_time(), Within(1.0)
            slow = call("slow", steps=8, delay_s=0.2)
            answer = await lane.request("tools/call", slow, due=due, on_progress=on_progress)
            elapsed = anyio.current_time() - started
    assert answer["content"][0]["text"].startswith("slow done") and elapsed > 1.0


async def test_a_call_past_its_time_limit_times_out_and_the_server_is_told_to_stop(tmp_path: Path) -> None:
    events = tmp_path / "events"
    with anyio.fail_after(30):
        async with connected(events) as (_, lane):
            with pytest.raises(MCPError) as late:
                await lane.request("tools/call", call("hang"), due=Within(0.3))
            assert (late.value.code, late.value.message) == (types.REQUEST_TIMEOUT, "Request 'tools/call' timed out")
            await wait_for(lambda: "cancelled hang" in events.read_text(), what="the server's cancellation")
            # The connection is fine: the next call is answered.
            answer = await lane.request("tools/call", call("echo", text="after"), due=Within(10))
    assert answer["content"][0]["text"] == "after"


async def test_the_servers_error_is_raised_as_the_server_worded_it() -> None:
    with anyio.fail_after(30):
        async with connected() as (_, lane):
            with pytest.raises(MCPError) as failed:
                await lane.request("tools/call", call("boom"), due=Within(10))
    assert "kaboom" in failed.value.message


async def test_a_connection_that_ends_fails_the_waiting_call_and_every_later_one_at_once() -> None:
    with anyio.fail_after(30):
        async with connected() as (_, lane):
            with pytest.raises(MCPError) as crashed:
                await lane.request("tools/call", call("crash"), due=Within(20))
            assert crashed.value.code == types.CONNECTION_CLOSED
            assert lane.closed
            with pytest.raises(MCPError, match="Connection closed"):
                await lane.request("tools/call", call("echo", text="x"), due=Within(20))
