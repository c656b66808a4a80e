"""The legacy HTTP+SSE adapter against a real kitchen server (`base_url`, 1 MiB request-body limit): events larger
than the SDK's stock cap arrive whole, one over `max_event_bytes` fails fast with the connection closed (the owner
reconnects), and a POST the server rejects fails that call only."""

import anyio
import mcp.types as types
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import DEFAULT_MAX_SSE_EVENT_SIZE

from adapters import session_only, target
from gateway.config import SseServerConfig
from tests.adapters.conftest import LIMIT, MIB, Mode, text_of

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_sse_3mb_result_arrives_whole_and_the_connection_stays_usable(base_url: str, mode: Mode) -> None:
    # The stock sse_client caps events at this size and drops the whole connection above it.
    assert DEFAULT_MAX_SSE_EVENT_SIZE < 3_000_000
    config = SseServerConfig(transport="sse", url=f"{base_url}/sse")
    async with Client(session_only(target(config, max_message_bytes=LIMIT)), mode=mode) as client:
        with anyio.fail_after(15):
            assert text_of(await client.call_tool("blob", {"n": 3_000_000})) == "x" * 3_000_000
            assert text_of(await client.call_tool("echo", {"text": "again"})) == "again"


async def test_sse_event_over_max_event_bytes_fails_fast_with_connection_closed(base_url: str) -> None:
    config = SseServerConfig(transport="sse", url=f"{base_url}/sse", max_event_bytes=MIB)
    async with Client(session_only(target(config, max_message_bytes=LIMIT)), mode="legacy") as client:
        with anyio.fail_after(10), pytest.raises(MCPError) as excinfo:
            await client.call_tool("blob", {"n": 2 * MIB})
    # The Client context above exited cleanly: the owner can simply reconnect.
    assert excinfo.value.code == types.CONNECTION_CLOSED


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_sse_post_rejected_by_the_server_fails_only_that_call(base_url: str, mode: Mode) -> None:
    config = SseServerConfig(transport="sse", url=f"{base_url}/sse")
    async with Client(session_only(target(config, max_message_bytes=LIMIT)), mode=mode) as client:
        with anyio.fail_after(10), pytest.raises(MCPError) as excinfo:
            await client.call_tool("measure", {"text": "y" * 5_000_000})
        assert "HTTP 413" in excinfo.value.message
        with anyio.fail_after(10):
            assert text_of(await client.call_tool("echo", {"text": "still here"})) == "still here"
