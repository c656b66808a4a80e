"""What the gateway sends to one downstream and what comes back (`Downstream`), in process: a real mcp `Server` on
the far side of a real `Client`, in both eras; only the gateway's callbacks are the test's own."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp_types import SERVER_INFO_META_KEY

from gateway.downstreams.downstream import Downstream
from gateway.errors import DownstreamFailed, DownstreamTimeout
from tests.servers.kitchen import Kitchen

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "auto"]  # `auto` against this SDK's server: the 2026-07-28 era
TOOLS = [
    types.Tool(name="stamped", input_schema={"type": "object"}),
    types.Tool(name="refuse", input_schema={"type": "object"}),
    types.Tool(name="wait", input_schema={"type": "object"}),
]


def server(entered: anyio.Event) -> Server[Any]:
    async def list_tools(ctx: ServerRequestContext, params: types.PaginatedRequestParams | None) -> Any:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> Any:
        if params.name == "stamped":
            meta = {SERVER_INFO_META_KEY: {"name": "far", "version": "1"}, "kept": 1}
            return types.CallToolResult(content=[types.TextContent(text="ok")], _meta=meta)
        if params.name == "refuse":
            raise MCPError(code=types.INVALID_PARAMS, message="no such thing")
        entered.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    return Server("far", version="1", on_list_tools=list_tools, on_call_tool=call_tool)


@asynccontextmanager
async def downstream(protocol: str, **options: Any) -> AsyncIterator[tuple[Downstream, anyio.Event]]:
    entered = anyio.Event()
    async with Downstream("far", lambda: server(entered), protocol=protocol, **options).running() as ds:
        with anyio.fail_after(10):
            await ds.settled()
        yield ds, entered


@pytest.mark.parametrize("protocol", ERAS)
async def test_a_result_comes_back_without_the_downstreams_own_identity_stamp(protocol: str) -> None:
    async with downstream(protocol) as (ds, _):
        result = await ds.call_tool("stamped", {})
    assert isinstance(result, types.CallToolResult)
    assert result.meta == {"kept": 1}  # the client's server is the gateway, which stamps its own


@pytest.mark.parametrize("protocol", ERAS)
async def test_an_error_the_server_answers_is_its_failure_with_its_code_and_words(protocol: str) -> None:
    async with downstream(protocol) as (ds, _):
        with pytest.raises(DownstreamFailed) as failed:
            await ds.call_tool("refuse", {})
    assert failed.value.code == types.INVALID_PARAMS
    assert str(failed.value) == f"Server 'far' failed: no such thing (error {types.INVALID_PARAMS})."


@pytest.mark.parametrize("protocol", ERAS)
async def test_a_call_past_the_servers_timeout_fails_naming_the_limit_and_the_server_stays_up(protocol: str) -> None:
    async with downstream(protocol, timeout_s=0.3) as (ds, entered):
        with anyio.fail_after(10), pytest.raises(DownstreamTimeout, match=r"within 0.3 s \(its timeout_s\)"):
            await ds.call_tool("wait", {})
        assert entered.is_set()
        assert ds.state.value == "up"
        assert isinstance(await ds.call_tool("stamped", {}), types.CallToolResult)


@pytest.mark.parametrize("protocol", ERAS)
async def test_a_listing_reads_every_entry_and_a_missing_capability_lists_nothing(protocol: str) -> None:
    async with downstream(protocol) as (ds, _):
        assert [tool.name for tool in await ds.list_all("tools")] == [tool.name for tool in TOOLS]
        assert ds.problems["tools"] == []
        assert ds.capabilities is not None and ds.capabilities.prompts is None
        assert await ds.list_all("prompts") == []


async def test_a_connection_pinned_to_2026_discovers_nothing_so_it_lists_every_kind_it_is_asked() -> None:
    async with downstream("modern") as (ds, _):
        assert (ds.protocol_version, ds.capabilities) == ("2026-07-28", None)
        with pytest.raises(DownstreamFailed, match="error -32601"):  # asked, since nothing said it was absent
            await ds.list_all("prompts")


@pytest.mark.parametrize("protocol", ERAS)
async def test_a_servers_list_change_reaches_the_gateway_once_named_by_server_and_kind(protocol: str) -> None:
    changed: list[tuple[str, str]] = []
    heard = anyio.Event()

    def on_list_changed(server: str, kind: str) -> None:
        changed.append((server, kind))
        if len(changed) > 3:
            heard.set()

    kitchen = Kitchen("k", None, 0, [])  # pushes in the handshake era, on a listen stream in 2026
    async with Downstream(
        "k", lambda: kitchen.server, protocol=protocol, on_list_changed=on_list_changed
    ).running() as ds:
        with anyio.fail_after(10):
            await ds.settled()
            # On connect: everything it offers may differ from before.
            assert changed == [("k", "tools"), ("k", "resources"), ("k", "prompts")]
            assert (ds.protocol_version == "2026-07-28") == (protocol == "auto")
            await anyio.wait_all_tasks_blocked()  # in process: the 2026 listen stream is open once all wait
            await ds.call_tool("add_tool", {"name": "more", "quiet": False})
            await heard.wait()
            await anyio.wait_all_tasks_blocked()  # a second report of the one change would be in by now
    assert changed[3:] == [("k", "tools")]


async def test_a_notification_to_a_server_that_is_not_connected_is_dropped_not_raised() -> None:
    ds = Downstream("far", lambda: server(anyio.Event()))  # never entered: no connection
    await ds.notify(types.RootsListChangedNotification())
    assert ds.capabilities is None
